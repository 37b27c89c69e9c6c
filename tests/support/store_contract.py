"""The contract every event store passes, written once (the eventsourcing library's
tests/persistence.py habit): `StoreContract` holds the tests and an abstract
`make_store`; tests/contract/test_store_contract.py subclasses it once per implementation.

Not collected itself (`__test__ = False`, and not a test module). A subclass that cannot
honour a test overrides it with `skipTest` and the reason."""

from __future__ import annotations

import abc
import hashlib
import tempfile
import threading
import unittest
from pathlib import Path
from typing import Any

import orjson

from sandex.engine.kernel.events import SCHEMA_VERSIONS, UPCASTERS, Event
from sandex.engine.store import (
    Concurrency,
    EventStore,
    Forking,
    NoSuchTable,
    StoreUnavailable,
    capability,
    drop_store,
    holds_events,
    locate,
    store_size,
)

TABLES: dict[str, dict[str, Any]] = {
    "things": {
        "columns": {"id": str, "owner": str, "value": str, "seq": int},
        "pk": ["id"],
        "indexes": [["owner", "seq"]],
        "fixed": ["owner"],
    },
    "pairs": {"columns": {"a": str, "b": int, "note": str}, "pk": ["a", "b"]},
}


def event(position: int, stream: str, version: int, type_: str = "ThingHappened") -> Event:
    return Event(
        type_,
        stream,
        {"n": position, "amount": "0.00000001"},
        position=position,
        version=version,
        occurred_at=f"2024-01-01T00:00:{position:02d}.000000Z",
        meta={"command": "Test", "command_position": position},
    )


def thing(id_: str, value: str, owner: str = "o", seq: int = 1) -> dict[str, Any]:
    return {"id": id_, "owner": owner, "value": value, "seq": seq}


class StoreContract(unittest.TestCase, abc.ABC):
    __test__ = False

    has_sql_reader = True  # whether `read_connection` answers a connection

    @abc.abstractmethod
    def make_store(self, folder: Path) -> EventStore:
        """A new, empty store with `TABLES`, its files (if any) in `folder`."""

    def setUp(self) -> None:
        self._folder = tempfile.TemporaryDirectory()
        self.folder = Path(self._folder.name)
        self.store = self.make_store(self.folder)

    def tearDown(self) -> None:
        self.store.close()
        self._folder.cleanup()

    def rows(self, table: str = "things") -> list[tuple[Any, ...]]:
        return sorted(self.store.read_model_rows(table, list(TABLES[table]["columns"])))

    # -- positions and appending --------------------------------------------------------

    def test_an_empty_store_is_at_position_zero(self) -> None:
        store = self.store
        self.assertEqual(store.last_position(), 0)
        self.assertEqual(store.checkpoint(), 0)
        self.assertEqual(store.stream_version("a"), 0)
        self.assertEqual(list(store.read()), [])
        self.assertEqual(list(store.scan()), [])
        self.assertEqual(self.rows(), [])

    def test_appended_events_read_back_in_position_order_with_everything_kept(self) -> None:
        events = [event(1, "a", 1), event(2, "b", 1), event(3, "a", 2)]
        self.store.commit(events, {}, 3)
        back = list(self.store.read())
        self.assertEqual([e.position for e in back], [1, 2, 3])
        self.assertEqual([e.as_json() for e in back], [e.as_json() for e in events])
        self.assertEqual(self.store.last_position(), 3)
        self.assertEqual(self.store.stream_version("a"), 2)
        self.assertEqual(self.store.stream_version("nope"), 0)
        self.assertEqual([e.meta for e in self.store.read(with_meta=False)], [{}, {}, {}])

    def test_read_filters_by_stream_after_until_and_limit(self) -> None:
        events = [event(i, "a" if i % 2 else "b", (i + 1) // 2) for i in range(1, 9)]
        self.store.commit(events, {}, 8)
        read = self.store.read
        self.assertEqual([e.position for e in read(stream="a")], [1, 3, 5, 7])
        self.assertEqual([e.position for e in read(after=5)], [6, 7, 8])
        self.assertEqual([e.position for e in read(until=3)], [1, 2, 3])
        self.assertEqual([e.position for e in read(after=2, limit=2)], [3, 4])
        self.assertEqual([e.position for e in read(stream="b", after=2, limit=2)], [4, 6])

    def test_a_duplicate_stream_version_is_refused_and_nothing_of_the_batch_lands(self) -> None:
        self.store.commit([event(1, "a", 1)], {}, 1)
        with self.assertRaises(Concurrency):
            self.store.commit(
                [event(2, "b", 1), event(3, "a", 1)], {"things": ([thing("x", "1")], [])}, 3
            )
        self.assertEqual(self.store.last_position(), 1)
        self.assertEqual(self.store.checkpoint(), 1)
        self.assertEqual(self.store.stream_version("b"), 0)
        self.assertEqual([e.position for e in self.store.read()], [1])
        self.assertEqual(self.rows(), [])

    def test_a_duplicate_position_is_refused(self) -> None:
        self.store.commit([event(1, "a", 1)], {}, 1)
        with self.assertRaises(Concurrency):
            self.store.commit([event(1, "b", 1)], {}, 1)
        self.assertEqual([e.stream for e in self.store.read()], ["a"])

    def test_read_model_writes_and_checkpoint_move_with_the_events(self) -> None:
        self.store.commit(
            [event(1, "a", 1)],
            {
                "things": ([thing("x", "1"), thing("y", "2")], []),
                "pairs": ([{"a": "p", "b": 1, "note": "n"}], []),
            },
            1,
        )
        self.store.commit(
            [event(2, "a", 2)], {"things": ([thing("x", "3", seq=2)], [{"id": "y"}])}, 2
        )
        self.assertEqual(self.rows(), [("x", "o", "3", 2)])
        self.assertEqual(self.rows("pairs"), [("p", 1, "n")])
        self.assertEqual(self.store.checkpoint(), 2)

    def test_an_update_leaves_the_fixed_columns_alone(self) -> None:
        """A fixed column is left out of the update (SQLite then rewrites none of its
        index entries): the row keeps it, while the other columns change."""
        self.store.commit([event(1, "s", 1)], {"things": ([thing("x", "1", "a", 1)], [])}, 1)
        self.store.commit([event(2, "s", 2)], {"things": ([thing("x", "2", "b", 9)], [])}, 2)
        self.assertEqual(self.rows(), [("x", "a", "2", 9)])

    def test_a_row_left_out_of_an_upsert_is_null(self) -> None:
        self.store.commit([event(1, "s", 1)], {"things": ([{"id": "x", "owner": "o"}], [])}, 1)
        self.assertEqual(self.rows(), [("x", "o", None, None)])

    def test_a_large_group_lands_whole_in_order_the_last_upsert_of_a_key_winning(self) -> None:
        """A group of 103 events and 101 upserts (SQLite cuts them into statements of 64,
        32, 4, 2 and 1 rows): every event and row lands; a key upserted twice in the group
        holds its last row; a row that lacks a column among full ones is null there."""
        events = [event(i, f"s{i % 7}", (i - 1) // 7 + 1) for i in range(1, 104)]
        rows = [thing(f"k{i:03d}", str(i), seq=i) for i in range(100)]
        rows[50] = {"id": "k050", "owner": "o"}
        rows.append(thing("k007", "again", seq=7))
        self.store.commit(events, {"things": (rows, [])}, 103)
        self.assertEqual([e.as_json() for e in self.store.read()], [e.as_json() for e in events])
        got = {r[0]: r for r in self.rows()}
        self.assertEqual(len(got), 100)
        self.assertEqual(got["k007"], ("k007", "o", "again", 7))
        self.assertEqual(got["k050"], ("k050", "o", None, None))
        self.assertEqual(got["k099"], ("k099", "o", "99", 99))

    def test_rows_of_a_table_the_store_does_not_hold_are_refused(self) -> None:
        with self.assertRaises(NoSuchTable):
            list(self.store.read_model_rows("absent", ["id"]))

    def test_write_lands_only_when_finish_returns(self) -> None:
        self.store.write([event(1, "a", 1)], {"things": ([thing("x", "1")], [])}, 1)
        self.store.finish()
        self.assertEqual(self.store.last_position(), 1)
        self.assertEqual(self.rows(), [("x", "o", "1", 1)])
        self.assertEqual(self.store.checkpoint(), 1)

    def test_finish_without_a_write_is_refused(self) -> None:
        with self.assertRaises(StoreUnavailable):
            self.store.finish()

    def test_commits_inside_a_held_transaction_read_back_and_stay_after_release(self) -> None:
        store = self.store
        store.hold()
        store.commit([event(1, "a", 1)], {"things": ([thing("x", "1")], [])}, 1)
        with self.assertRaises(Concurrency):
            store.commit([event(2, "a", 1)], {}, 2)  # undoes this batch only
        store.commit([event(2, "a", 2)], {}, 2)
        self.assertEqual(store.last_position(), 2)
        store.release()
        self.assertEqual([e.position for e in store.read()], [1, 2])
        self.assertEqual(self.rows(), [("x", "o", "1", 1)])
        self.assertEqual(store.checkpoint(), 2)

    def test_a_second_hold_is_refused(self) -> None:
        self.store.hold()
        try:
            with self.assertRaises(RuntimeError):
                self.store.hold()
        finally:
            self.store.release()

    def test_replacing_the_read_models_empties_every_table_and_fills_it_again(self) -> None:
        self.store.commit(
            [event(1, "a", 1)],
            {"things": ([thing("x", "1")], []), "pairs": ([{"a": "p", "b": 1}], [])},
            1,
        )
        self.store.replace_read_models({"things": ([thing("y", "2")], [])}, 1)
        self.assertEqual(self.rows(), [("y", "o", "2", 1)])
        self.assertEqual(self.rows("pairs"), [])
        self.assertEqual(self.store.checkpoint(), 1)

    def test_replacing_the_read_models_from_a_log_that_grew_since_is_refused(self) -> None:
        self.store.commit([event(1, "a", 1)], {"things": ([thing("x", "1")], [])}, 1)
        with self.assertRaises(Concurrency):
            self.store.replace_read_models({"things": ([thing("y", "2")], [])}, 0)
        self.assertEqual(self.rows(), [("x", "o", "1", 1)])
        self.assertEqual(self.store.checkpoint(), 1)

    # -- reading ------------------------------------------------------------------------

    def test_old_events_are_upcast_on_read_but_stored_as_written(self) -> None:
        self.store.commit([event(1, "a", 1, "Renamed")], {}, 1)
        SCHEMA_VERSIONS["Renamed"] = 2
        UPCASTERS[("Renamed", 1)] = lambda data: {**data, "added": "yes"}
        try:
            (read,) = list(self.store.read())
            self.assertEqual((read.schema, read.data["added"]), (2, "yes"))
            ((_, _, _, _, schema, data, _, _),) = list(self.store.stored_rows())
            self.assertEqual((schema, orjson.loads(data)), (1, {"n": 1, "amount": "0.00000001"}))
        finally:
            del SCHEMA_VERSIONS["Renamed"], UPCASTERS[("Renamed", 1)]

    def test_stored_rows_are_the_columns_as_written(self) -> None:
        written = event(1, "a", 1)
        self.store.commit([written], {}, 1)
        ((position, stream, version, type_, schema, data, meta, at),) = self.store.stored_rows()
        self.assertEqual(
            (position, stream, version, type_, schema, at),
            (1, "a", 1, written.type, 1, written.occurred_at),
        )
        self.assertEqual((orjson.loads(data), orjson.loads(meta)), (written.data, written.meta))

    def test_the_scan_gives_raw_rows_briefly_for_first_events_of_the_named_types(self) -> None:
        events = [
            event(1, "a", 1, "Made"),
            event(2, "a", 2, "Made"),
            event(3, "b", 1, "Other"),
            event(4, "c", 1, "Kept"),
        ]
        self.store.commit(events, {}, 4)
        rows = [row for chunk in self.store.scan(first=("Kept", "Made")) for row in chunk]
        self.assertEqual([(p, s) for p, s, _, _ in rows], [(1, "a"), (2, "a"), (3, "b"), (4, "c")])
        self.assertEqual([orjson.loads(d) for _, _, d, _ in rows], [e.data for e in events])
        self.assertEqual(rows[0][3], 1)
        self.assertEqual(rows[3][3], 0)
        for row, e in ((rows[1], events[1]), (rows[2], events[2])):
            self.assertEqual(orjson.loads(row[3]), [e.version, e.type, 1, e.occurred_at])
        tail = [row[0] for chunk in self.store.scan(after=1, until=3) for row in chunk]
        self.assertEqual(tail, [2, 3])

    def test_the_scan_comes_in_chunks_of_the_whole_log(self) -> None:
        self.store.commit([event(i, f"s{i}", 1) for i in range(1, 1201)], {}, 1200)
        chunks = list(self.store.scan())
        self.assertGreater(len(chunks), 1)
        self.assertEqual([row[0] for c in chunks for row in c], list(range(1, 1201)))

    def test_times_positions_and_checks_of_events(self) -> None:
        self.store.commit([event(1, "a", 1), event(2, "a", 2), event(3, "b", 1)], {}, 3)
        store = self.store
        self.assertEqual(store.occurred_at(2), event(2, "a", 2).occurred_at)
        self.assertIsNone(store.occurred_at(4))
        self.assertEqual(store.position_at(event(2, "a", 2).occurred_at), 2)
        self.assertEqual(store.position_at("2000-01-01T00:00:00.000000Z"), 0)
        self.assertEqual(store.position_at("2100-01-01T00:00:00.000000Z"), 3)
        checks = [store.event_check(p) for p in (1, 2, 3)]
        self.assertEqual(len(set(checks)), 3)
        self.assertIsNone(store.event_check(4))

    def test_the_check_of_an_event_is_the_same_in_every_store(self) -> None:
        """A fingerprint of the stored event (sha256 of its columns but position and
        meta): a snapshot taken on one store pairs with the same event on another."""
        self.store.commit([event(1, "a", 1)], {}, 1)
        self.assertEqual(self.store.event_check(1), _expected_check(event(1, "a", 1)))

    def test_a_read_only_handle_reads_what_is_committed_and_writes_nothing(self) -> None:
        self.store.commit([event(1, "a", 1)], {"things": ([thing("x", "1")], [])}, 1)
        other = self.store.read_only()
        try:
            self.store.commit([event(2, "a", 2)], {}, 2)
            self.assertEqual([e.position for e in other.read()], [1, 2])
            self.assertEqual(other.checkpoint(), 2)
            with self.assertRaises(StoreUnavailable):
                other.commit([event(3, "a", 3)], {}, 3)
        finally:
            other.close()
        self.assertEqual(self.store.last_position(), 2)

    def test_reads_in_a_consistent_block_see_one_state(self) -> None:
        self.store.commit([event(1, "a", 1)], {}, 1)
        other = self.store.read_only()
        try:
            with other.consistent():
                self.assertEqual(other.last_position(), 1)
                self.store.commit([event(2, "a", 2)], {}, 2)
                self.assertEqual(other.last_position(), 1)
                self.assertEqual(other.checkpoint(), 1)
            self.assertEqual(other.last_position(), 2)
        finally:
            other.close()

    def test_the_read_connection_answers_sql_or_says_there_is_none(self) -> None:
        self.store.commit([event(1, "a", 1)], {"things": ([thing("x", "1")], [])}, 1)
        if not self.has_sql_reader:
            with self.assertRaises(StoreUnavailable):
                self.store.read_connection()
            return
        conn = self.store.read_connection()
        try:
            self.assertEqual(conn.execute("SELECT id, value FROM things").fetchall(), [("x", "1")])
            with self.assertRaises(Exception):  # noqa: B017 - sqlite3's own, read-only
                conn.execute("DELETE FROM things")
        finally:
            conn.close()

    # -- change detection ---------------------------------------------------------------

    def test_its_own_commits_do_not_change_the_data_version(self) -> None:
        before = self.store.data_version()
        self.store.commit([event(1, "a", 1)], {}, 1)
        self.store.set_meta("k", "v")
        self.assertEqual(self.store.data_version(), before)

    def test_another_writers_commit_changes_the_data_version(self) -> None:
        before = self.store.data_version()
        self.commit_elsewhere([event(1, "a", 1)])
        self.assertNotEqual(self.store.data_version(), before)
        self.assertEqual(self.store.last_position(), 1)

    def commit_elsewhere(self, events: list[Event]) -> None:
        """Commit `events` through a second writer on the same store."""
        raise NotImplementedError

    # -- meta values --------------------------------------------------------------------

    def test_meta_values_persist_and_erase(self) -> None:
        store = self.store
        store.set_meta("seed", "42")
        store.set_metas({"a": "1", "b": "2"})
        self.assertEqual(store.get_meta("seed"), "42")
        self.assertIsNone(store.get_meta("absent"))
        self.assertEqual(store.all_meta(), {"seed": "42", "a": "1", "b": "2"})
        store.set_meta("a", "3")
        store.erase_meta("b")
        store.erase_meta("never")
        self.assertEqual(store.all_meta(), {"seed": "42", "a": "3"})

    # -- the start-up cache's blobs -----------------------------------------------------

    def test_state_snapshots_save_list_newest_first_and_keep_the_newest(self) -> None:
        store = self.store
        self.assertEqual(store.state_snapshots("f1"), [])
        store.save_state_snapshot(10, "f1", "c10", b"ten")
        store.save_state_snapshot(20, "f2", "c20", b"twenty")
        self.assertEqual(store.state_snapshots("f1"), [(10, "c10")])
        store.save_state_snapshot(30, "f1", "c30", b"thirty")
        self.assertEqual(store.state_snapshots("f1"), [(30, "c30")])  # two kept: 30 and 20
        self.assertEqual(store.state_snapshots("f2"), [(20, "c20")])
        self.assertEqual(store.state_snapshots(None), [(30, "c30"), (20, "c20")])
        self.assertEqual(store.state_snapshot_data(30), b"thirty")
        self.assertIsNone(store.state_snapshot_data(10))
        store.save_state_snapshot(40, "f1", "c40", b"forty", keep=1)
        self.assertEqual(store.state_snapshots("f1"), [(40, "c40")])
        self.assertEqual(store.state_snapshots("f2"), [])

    # -- fork: a new, independent store from this one's log ----------------------------

    def fork_target(self, name: str) -> str:
        """Where this implementation forks to (a new file here)."""
        return str(self.folder / f"{name}.db")

    def fork(self, name: str, up_to: int | None = None) -> EventStore:
        forking = capability(self.store, Forking)
        assert forking is not None, "every store forks"
        forked = forking.fork(self.fork_target(name), up_to)
        self.addCleanup(forked.close)
        return forked

    def fill(self, commits: int) -> None:
        """`commits` commits of two events each, with read-model rows, meta and blobs."""
        for n in range(commits):
            p = 2 * n + 1
            self.store.commit(
                [event(p, f"s{n}", 1), event(p + 1, f"s{n}", 2)],
                {"things": ([thing(f"t{n}", str(p + 1), seq=n)], []), "pairs": ([], [])},
                p + 1,
            )
            self.store.save_state_snapshot(p + 1, "f", f"c{p + 1}", b"blob%d" % (p + 1), keep=10)
        self.store.set_metas({"seed": "7", "label": "template"})

    def test_a_dropped_fork_leaves_no_trace_and_its_source_whole(self) -> None:
        """What deleting a world does to its store (the key file is the deleter's)."""
        target = self.fork_target("dropped")
        if locate(target).in_memory:
            self.skipTest("an in-memory store ends with its handle: there is nothing to drop")
        self.fill(2)
        forked = self.fork("dropped")
        self.assertGreater(store_size(target), 0)
        forked.close()
        drop_store(target)
        drop_store(target)  # gone already: nothing to do
        self.assertFalse(holds_events(target))
        self.assertEqual(store_size(target), 0)
        self.assertEqual([p.name for p in self.folder.iterdir() if "dropped" in p.name], [])
        self.assertEqual(self.store.last_position(), 4)

    def test_a_fork_at_the_head_holds_the_same_events_meta_read_models_and_blobs(self) -> None:
        self.fill(3)
        forked = self.fork("head")
        self.assertEqual(list(forked.stored_rows()), list(self.store.stored_rows()))
        self.assertEqual(forked.last_position(), 6)
        self.assertEqual(forked.stream_version("s2"), 2)
        self.assertEqual(forked.all_meta(), self.store.all_meta())
        self.assertEqual(forked.checkpoint(), 6)
        columns = list(TABLES["things"]["columns"])
        self.assertEqual(sorted(forked.read_model_rows("things", columns)), self.rows())
        self.assertEqual(forked.state_snapshots("f"), self.store.state_snapshots("f"))
        self.assertEqual(forked.state_snapshot_data(6), b"blob6")

    def test_a_fork_at_a_prefix_holds_exactly_the_prefix_for_its_engine_to_rebuild(self) -> None:
        from sandex.engine.tools.time_travel import store_log_hash

        self.fill(3)
        source_prefix = LogPrefix(self.store, 4)
        forked = self.fork("prefix", up_to=4)
        self.assertEqual([e.position for e in forked.read()], [1, 2, 3, 4])
        self.assertEqual(store_log_hash(forked), store_log_hash(source_prefix))  # type: ignore[arg-type]
        self.assertNotEqual(store_log_hash(forked), store_log_hash(self.store))
        self.assertEqual(forked.stream_version("s2"), 0)
        self.assertEqual(forked.all_meta(), self.store.all_meta())
        # Read models as no position had them: empty at checkpoint 0, rebuilt on open.
        self.assertEqual(forked.checkpoint(), 0)
        self.assertEqual(list(forked.read_model_rows("things", ["id"])), [])
        self.assertEqual([p for p, _ in forked.state_snapshots("f")], [4, 2])

    def test_appends_to_a_fork_and_to_its_source_stay_apart(self) -> None:
        self.fill(1)
        forked = self.fork("apart")
        forked.commit([event(3, "mine", 1)], {"things": ([thing("fork", "f")], [])}, 3)
        forked.set_meta("label", "fork")
        self.store.commit([event(3, "theirs", 1), event(4, "theirs", 2)], {}, 4)
        self.assertEqual([e.stream for e in forked.read(after=2)], ["mine"])
        self.assertEqual([e.stream for e in self.store.read(after=2)], ["theirs", "theirs"])
        self.assertEqual(self.store.get_meta("label"), "template")
        self.assertNotIn(("fork",), list(self.store.read_model_rows("things", ["id"])))
        self.assertIn(("fork",), list(forked.read_model_rows("things", ["id"])))

    def test_a_fork_while_another_thread_appends_is_a_consistent_prefix(self) -> None:
        stop = threading.Event()
        failed: list[BaseException] = []

        def append() -> None:
            try:
                n = 0
                while not stop.is_set() and n < 2000:
                    p = 3 * n + 1
                    self.store.commit(
                        [event(p + i, f"w{n}", i + 1) for i in range(3)],
                        {"things": ([thing(f"w{n}", str(p + 2), seq=n)], [])},
                        p + 2,
                    )
                    n += 1
            except BaseException as exc:
                failed.append(exc)

        writer = threading.Thread(target=append)
        writer.start()
        try:
            for i in range(5):
                forked = self.fork(f"busy{i}")
                positions = [row[0] for row in forked.stored_rows()]
                head = len(positions)
                self.assertEqual(positions, list(range(1, head + 1)))  # gapless
                self.assertEqual(head % 3, 0)  # whole commits only
                self.assertEqual(forked.checkpoint(), head)
                self.assertEqual(len(list(forked.read_model_rows("things", ["id"]))), head // 3)
        finally:
            stop.set()
            writer.join()
        self.assertEqual(failed, [])


class LogPrefix:
    """A store's log up to a position, as `store_log_hash` reads a store."""

    def __init__(self, store: EventStore, up_to: int) -> None:
        self.rows = [row for row in store.stored_rows() if row[0] <= up_to]

    def stored_rows(self) -> list[tuple[Any, ...]]:
        return self.rows


def _expected_check(e: Event) -> str:
    stored = (e.stream, e.version, e.type, e.schema, orjson.dumps(e.data).decode(), e.occurred_at)
    return hashlib.sha256(orjson.dumps(stored)).hexdigest()
