"""The store contract (tests/support/store_contract.py) run against every implementation, and
what only the SQLite store promises (its file, its modes, its paths)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from sandex.engine.kernel.events import Event
from sandex.engine.runtime.composition import TABLES as READ_MODELS
from sandex.engine.store import (
    EventStore,
    MemoryEventStore,
    SqliteEventStore,
    StoreUnavailable,
    connect_read_only,
    drop_store,
    locate,
    open_reader,
)
from sandex.engine.store.postgres import PostgresEventStore
from tests.support.store_contract import TABLES, LogPrefix, StoreContract, event


class MemoryStoreTest(StoreContract):
    __test__ = True
    has_sql_reader = False  # a choice: engine/store/memory.py says why

    def make_store(self, folder: Path) -> EventStore:
        return MemoryEventStore(tables=TABLES)

    def fork_target(self, name: str) -> str:
        return ":memory:"

    def test_another_writers_commit_changes_the_data_version(self) -> None:
        self.skipTest("no second writer can reach a memory store: it lives in one object")

    def test_reads_in_a_consistent_block_see_one_state(self) -> None:
        self.skipTest(
            "a memory store keeps no read snapshots: its reads and its one writer share a"
            " process, and verify runs on it only when nothing writes"
        )


class SqliteStoreTest(StoreContract):
    __test__ = True

    def make_store(self, folder: Path) -> EventStore:
        return SqliteEventStore(folder / "contract.db", tables=TABLES)

    def commit_elsewhere(self, events: list[Event]) -> None:
        other = SqliteEventStore(self.folder / "contract.db", tables=TABLES)
        try:
            other.commit(events, {}, events[-1].position)
        finally:
            other.close()


class InMemorySqliteStoreTest(StoreContract):
    """SQLite's `:memory:` database (tests, throwaway backtests): the same store on a
    database that lives in its one connection. docs/design.md says what it keeps of the
    file's promises: no second connection, so no read-only handle, no SQL reader for the
    read side and no other writer; nothing durable, no checkpoints, no state snapshots."""

    __test__ = True
    has_sql_reader = False

    def make_store(self, folder: Path) -> EventStore:
        return SqliteEventStore(":memory:", tables=TABLES)

    def test_another_writers_commit_changes_the_data_version(self) -> None:
        self.skipTest("no second connection reaches an in-memory database")

    def test_a_read_only_handle_reads_what_is_committed_and_writes_nothing(self) -> None:
        """None is given: a second connection to `:memory:` is another, empty database."""
        with self.assertRaises(StoreUnavailable):
            self.store.read_only()
        with self.assertRaises(StoreUnavailable):
            open_reader(":memory:")

    def test_reads_in_a_consistent_block_see_one_state(self) -> None:
        self.skipTest("no second connection reaches an in-memory database")

    def test_a_fork_while_another_thread_appends_is_a_consistent_prefix(self) -> None:
        self.skipTest("an in-memory database is one connection: its writer's thread alone")


def test_sqlite_runs_in_wal_mode_with_the_asked_durability(tmp_path: Path) -> None:
    full = SqliteEventStore(tmp_path / "full.db", durability="FULL")
    normal = SqliteEventStore(tmp_path / "normal.db", durability="NORMAL")
    try:
        assert full.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert full.conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert normal.conn.execute("PRAGMA synchronous").fetchone()[0] == 1
    finally:
        full.close()
        normal.close()


def test_events_survive_reopening(tmp_path: Path) -> None:
    first = SqliteEventStore(tmp_path / "r.db")
    first.commit([event(1, "a", 1)], {}, 1)
    first.close()
    second = SqliteEventStore(tmp_path / "r.db")
    try:
        assert [e.data for e in second.read()] == [{"n": 1, "amount": "0.00000001"}]
    finally:
        second.close()


def test_an_in_memory_sqlite_store_scans_its_log(tmp_path: Path) -> None:
    """`PRAGMA mmap_size` answers no row for an in-memory database: the start-up scan
    failed on it before it asked."""
    store = SqliteEventStore(":memory:", tables=READ_MODELS)
    try:
        store.commit([event(1, "a", 1), event(2, "a", 2)], {}, 2)
        assert [row[0] for chunk in store.scan() for row in chunk] == [1, 2]
        with pytest.raises(StoreUnavailable):
            store.read_only()
    finally:
        store.close()


@pytest.mark.parametrize("name", ["what?.db", "hash#tag.db", "per%20cent.db", "all ?#%25.db"])
def test_a_database_path_with_uri_characters_opens_read_only(tmp_path: Path, name: str) -> None:
    """The read-only door builds a `file:` URI: a `?`, `#` or `%` in the path was read as
    the start of a query, a fragment or an escape, and opened another file or none."""
    path = tmp_path / name
    store = SqliteEventStore(path, tables=TABLES)
    try:
        store.commit([event(1, "a", 1)], {}, 1)
        reader = store.read_only()
        try:
            assert [e.position for e in reader.read()] == [1]
        finally:
            reader.close()
        conn = connect_read_only(path)
        try:
            assert conn.execute("SELECT count(*) FROM events").fetchone() == (1,)
        finally:
            conn.close()
    finally:
        store.close()
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == [name]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (1,)


@pytest.mark.usefixtures("postgres_for_class")
class PostgresStoreTest(StoreContract):
    """The contract on a real PostgreSQL server, a new database per test."""

    __test__ = True
    server: Any

    def make_store(self, folder: Path) -> EventStore:
        self.url = self.server.create("contract")
        return PostgresEventStore(self.url, tables=TABLES)

    def fork_target(self, name: str) -> str:
        return locate(self.url).with_schema(f"fork_{name}").text

    def test_a_forks_schema_has_the_indexes_of_its_source(self) -> None:
        """Made fresh, not migrated: the same index names, so a later migration of
        the fork finds its own indexes and adds none."""
        import psycopg

        self.fork("idx")
        PostgresEventStore(self.fork_target("idx"), tables=TABLES).close()  # a migration

        def indexes(schema: str) -> list[tuple[str, str]]:
            with psycopg.connect(locate(self.url).conninfo()[0]) as conn:
                rows = conn.execute(
                    "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = %s",
                    (schema,),
                ).fetchall()
            return sorted((str(t), str(i)) for t, i in rows)

        self.assertEqual(indexes("fork_idx"), indexes("public"))

    def test_a_fork_makes_the_next_forks_schema_ahead_and_the_next_fork_takes_it(self) -> None:
        """A new schema's indexes are each synced to disk as they are built: a fork
        leaves a spare schema made for the next, which takes it whole (same indexes)
        and holds its source's rows all the same."""
        import psycopg

        def schemas(prefix: str) -> list[str]:
            with psycopg.connect(locate(self.url).conninfo()[0]) as conn:
                rows = conn.execute(
                    "SELECT nspname FROM pg_namespace WHERE left(nspname, %s) = %s",
                    (len(prefix), prefix),
                ).fetchall()
            return sorted(str(row[0]) for row in rows)

        self.fill(2)
        self.fork("first")
        making = self.store._spare  # type: ignore[attr-defined]
        assert making is not None
        making.join()
        spares = schemas("sandex_spare_")
        self.assertEqual(len(spares), 1)
        second = self.fork("second")
        self.assertNotIn(spares[0], schemas("sandex_spare_"))  # taken by the second fork
        self.assertEqual(second.last_position(), self.store.last_position())
        self.assertEqual(
            sorted(second.read_model_rows("things", ["id"])),
            sorted(self.store.read_model_rows("things", ["id"])),
        )

        def indexes(schema: str) -> list[tuple[str, str]]:
            with psycopg.connect(locate(self.url).conninfo()[0]) as conn:
                rows = conn.execute(
                    "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = %s",
                    (schema,),
                ).fetchall()
            return sorted((str(t), str(i)) for t, i in rows)

        self.assertEqual(indexes("fork_second"), indexes("fork_first"))

    def test_a_databases_default_schema_is_never_dropped(self) -> None:
        """Only a named schema is one store's (a world's); `public` may hold others."""
        with self.assertRaises(ValueError):
            drop_store(self.url)
        self.assertEqual(self.store.last_position(), 0)

    def tearDown(self) -> None:
        super().tearDown()
        self.server.drop(self.url)

    def commit_elsewhere(self, events: list[Event]) -> None:
        other = PostgresEventStore(self.url, tables=TABLES)
        try:
            other.commit(events, {}, events[-1].position)
        finally:
            other.close()


@pytest.fixture
def postgres_for_class(request: pytest.FixtureRequest, postgres_server: Any) -> None:
    request.cls.server = postgres_server


def test_two_schemas_of_one_database_are_two_stores_each_with_its_lease(
    postgres_server: Any,
) -> None:
    url = postgres_server.create("schemas")
    try:
        one = PostgresEventStore(locate(url).with_schema("w_one").text, tables=TABLES, lease=True)
        two = PostgresEventStore(locate(url).with_schema("w_two").text, tables=TABLES, lease=True)
        try:
            one.commit([event(1, "a", 1)], {"things": ([{"id": "x", "owner": "o"}], [])}, 1)
            assert two.last_position() == 0
            assert list(two.read_model_rows("things", ["id"])) == []
            two.commit([event(1, "b", 1)], {}, 1)
            assert [e.stream for e in one.read()] == ["a"]
            assert [e.stream for e in two.read()] == ["b"]
        finally:
            one.close()
            two.close()
    finally:
        postgres_server.drop(url)


@pytest.mark.parametrize("at_head", [True, False], ids=["head", "prefix"])
def test_an_engine_opens_a_fork_as_its_source_was_and_verify_passes(
    tmp_path: Path, at_head: bool
) -> None:
    """A fork at the head is served as it is; one before the head has its read models
    rebuilt from its log when an engine opens it (its checkpoint is 0)."""
    from sandex.engine import Settings, open_engine
    from sandex.engine.kernel.commands import CreateCustomer
    from sandex.engine.tools.time_travel import cut_position, log_hash, store_log_hash
    from sandex.engine.tools.verify import verify

    source = tmp_path / "template.db"
    settings = Settings(clock="manual", snapshot_every_events=0)
    engine = open_engine(source, settings).start()
    for n in range(3):
        engine.execute(CreateCustomer(client_id=f"c{n}", client_secret="s" * 32, bootstrap=n == 0))
    engine.stop()
    store = SqliteEventStore(source, tables=READ_MODELS)
    try:
        cut = (
            store.last_position()
            if at_head
            else cut_position(store, position=store.last_position() - 1)[0]
        )
        expected = store_log_hash(LogPrefix(store, cut))  # type: ignore[arg-type]
        store.fork(str(tmp_path / "fork.db"), None if at_head else cut).close()
        rows = sorted(store.read_model_rows("customers", ["id"]))
    finally:
        store.close()
    assert log_hash(tmp_path / "fork.db") == expected
    forked = open_engine(tmp_path / "fork.db", settings).start()
    forked.stop()
    assert verify(str(tmp_path / "fork.db")) == []
    fork_store = open_reader(tmp_path / "fork.db")
    try:
        got = sorted(fork_store.read_model_rows("customers", ["id"]))
        assert fork_store.checkpoint() == fork_store.last_position() == cut
    finally:
        fork_store.close()
    assert got == rows if at_head else len(got) < len(rows)


def _fork_source(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[str, str]:
    """(a template's database, where its fork goes) on the store `kind`: files, or two
    schemas of one new PostgreSQL database (a world's place on a server)."""
    if kind == "sqlite":
        return str(tmp_path / "template.db"), str(tmp_path / "fork.db")
    url = request.getfixturevalue("postgres_url")
    return url, locate(url).with_schema("w_fork").text


def _served_rows(db: str) -> dict[str, list[tuple[Any, ...]]]:
    """What a world answers its balances and orders from: those read models, whole."""
    reader = open_reader(db)
    try:
        return {
            table: sorted(reader.read_model_rows(table, list(READ_MODELS[table]["columns"])))
            for table in ("balances", "orders")
        }
    finally:
        reader.close()


@pytest.mark.parametrize("lease", [True, False], ids=["lease", "no-lease"])
@pytest.mark.parametrize("moved_on", [False, True], ids=["copy", "log-prefix"])
@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_fork_of_a_running_template_is_the_template_at_its_snapshot(
    tmp_path: Path, request: pytest.FixtureRequest, kind: str, moved_on: bool, lease: bool
) -> None:
    """What the world manager does for `from_snapshot` (issue 30's fork): the template's
    running store forked at a snapshot, as a copy when nothing happened since (the copy
    path) or as its log up to the snapshot (the prefix path, read models rebuilt when
    the fork opens); with `lease` the fork's store holds its writer lease and an engine
    serves it as it is, without it an engine opens the fork. Either way the fork's log
    up to the snapshot hashes as the template's, and its balances, orders and ledger
    are the template's at the snapshot."""
    from sandex.engine import Settings, open_engine
    from sandex.engine.domain.sandbox_snapshots import TakeSnapshot, snapshots
    from sandex.engine.kernel.commands import (
        Actor,
        CancelOrder,
        CreateCustomer,
        CreateOrder,
        SandboxDeposit,
    )
    from sandex.engine.runtime import key_file
    from sandex.engine.runtime.composition import build_engine
    from sandex.engine.store import Forking, capability
    from sandex.engine.store.lease import LeaseHeld
    from sandex.engine.tools.time_travel import log_hash
    from sandex.engine.tools.verify import verify

    source, target = _fork_source(kind, tmp_path, request)
    settings = Settings(clock="manual", snapshot_every_events=2)
    template = open_engine(source, settings).start()
    try:
        made = template.execute(
            CreateCustomer(client_id="c", client_secret="s" * 32, bootstrap=True)
        )
        me = Actor(made["customer_id"], "c")
        for asset, amount in (("USD", "500"), ("BTC", "1")):
            template.execute(
                SandboxDeposit(actor=me, profile_id="default", asset=asset, amount=amount)
            )
        order = {"actor": me, "profile_id": "default", "market": "BTCUSD", "type": "LIMIT"}
        resting = template.execute(
            CreateOrder(**order, side="BUY", price="20000", base_amount="0.01")
        )
        template.execute(CreateOrder(**order, side="SELL", price="90000", base_amount="0.5"))
        template.execute(TakeSnapshot(actor=me, name="ready"))
        at = int(snapshots(template.state)["ready"]["position"])
        expected = _served_rows(source)
        available = template.state.ledger.balance(f"{made['profile_id']}:available", "USD")
        at_snapshot = log_hash(source, up_to=at)
        template.wait_for_snapshot(30)  # state snapshots too: a prefix fork loads one
        if moved_on:  # the template goes its own way after the snapshot
            template.execute(
                SandboxDeposit(actor=me, profile_id="default", asset="USD", amount="7")
            )
            template.execute(CancelOrder(actor=me, profile_id="default", order_id=resting["id"]))
            assert _served_rows(source) != expected
        forking = capability(template.store, Forking)
        assert forking is not None, "every store forks"
        if kind == "postgresql":  # a fork before: this one takes the schema it made ahead
            forking.fork(locate(source).with_schema("w_first").text, up_to=at).close()
        forked = forking.fork(
            target, up_to=at, lease=lease, lease_seconds=settings.writer_lease_seconds
        )
    finally:
        template.stop()
    key_file.fork(source, target)
    if lease:
        with pytest.raises(LeaseHeld):  # its engine is the one writer
            open_engine(target, settings)
        fork = build_engine(forked, settings).start()
    else:
        forked.close()
        fork = open_engine(target, settings).start()
    try:
        assert fork.state.position == at
        assert fork.state.ledger.balance(f"{made['profile_id']}:available", "USD") == available
        assert fork.execute(TakeSnapshot(actor=me, name="forked"))  # it writes
    finally:
        fork.stop()
    assert log_hash(target, up_to=at) == at_snapshot
    assert _served_rows(target) == expected
    assert verify(target) == []
