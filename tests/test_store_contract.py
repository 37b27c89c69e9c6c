"""The contract every event store must pass (SQLite now; PostgreSQL later joins the
parametrisation)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.kernel.events import SCHEMA_VERSIONS, UPCASTERS, Event
from engine.store import Concurrency, EventStore, SqliteEventStore

TABLES: dict[str, dict[str, Any]] = {
    "things": {"columns": {"id": str, "value": str, "seq": int}, "pk": ["id"]},
}


@pytest.fixture(params=["sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventStore]:
    s = SqliteEventStore(tmp_path / "contract.db", tables=TABLES)
    yield s
    s.close()


def _event(position: int, stream: str, version: int, type_: str = "ThingHappened") -> Event:
    return Event(
        type_,
        stream,
        {"n": position, "amount": "0.00000001"},
        position=position,
        version=version,
        occurred_at=f"2024-01-01T00:00:{position:02d}.000000Z",
        meta={"command": "Test"},
    )


def test_an_empty_store_is_at_position_zero(store: EventStore) -> None:
    assert store.last_position() == 0
    assert store.checkpoint() == 0
    assert list(store.read()) == []


def test_appended_events_read_back_in_position_order_with_everything_kept(
    store: EventStore,
) -> None:
    events = [_event(1, "a", 1), _event(2, "b", 1), _event(3, "a", 2)]
    store.commit(events, {}, 3)
    back = list(store.read())
    assert [e.position for e in back] == [1, 2, 3]
    assert back[2].as_json() == events[2].as_json()
    assert store.last_position() == 3
    assert store.stream_version("a") == 2
    assert store.stream_version("nope") == 0


def test_read_filters_by_stream_after_until_and_limit(store: EventStore) -> None:
    store.commit([_event(i, "a" if i % 2 else "b", (i + 1) // 2) for i in range(1, 9)], {}, 8)
    assert [e.position for e in store.read(stream="a")] == [1, 3, 5, 7]
    assert [e.position for e in store.read(after=5)] == [6, 7, 8]
    assert [e.position for e in store.read(until=3)] == [1, 2, 3]
    assert [e.position for e in store.read(after=2, limit=2)] == [3, 4]


def test_a_duplicate_stream_version_is_refused_and_nothing_of_the_batch_lands(
    store: EventStore,
) -> None:
    store.commit([_event(1, "a", 1)], {}, 1)
    with pytest.raises(Concurrency):
        store.commit([_event(2, "b", 1), _event(3, "a", 1)], {"things": ([{"id": "x"}], [])}, 3)
    assert store.last_position() == 1
    assert store.checkpoint() == 1
    assert [e.position for e in store.read()] == [1]


def test_a_duplicate_position_is_refused(store: EventStore) -> None:
    store.commit([_event(1, "a", 1)], {}, 1)
    with pytest.raises(Concurrency):
        store.commit([_event(1, "b", 1)], {}, 1)


def test_read_model_writes_and_checkpoint_move_with_the_events(store: EventStore) -> None:
    assert isinstance(store, SqliteEventStore)
    store.commit(
        [_event(1, "a", 1)],
        {
            "things": (
                [{"id": "x", "value": "1", "seq": 1}, {"id": "y", "value": "2", "seq": 1}],
                [],
            )
        },
        1,
    )
    store.commit(
        [_event(2, "a", 2)], {"things": ([{"id": "x", "value": "3", "seq": 2}], [{"id": "y"}])}, 2
    )
    rows = store.conn.execute("SELECT id, value FROM things").fetchall()
    assert rows == [("x", "3")]
    assert store.checkpoint() == 2


def test_meta_values_persist(store: EventStore) -> None:
    store.set_meta("seed", "42")
    assert store.get_meta("seed") == "42"
    assert store.get_meta("absent") is None


def test_old_events_are_upcast_on_read(store: EventStore) -> None:
    store.commit([_event(1, "a", 1, "Renamed")], {}, 1)
    SCHEMA_VERSIONS["Renamed"] = 2
    UPCASTERS[("Renamed", 1)] = lambda data: {**data, "added": "yes"}
    try:
        (event,) = list(store.read())
        assert event.schema == 2
        assert event.data["added"] == "yes"
    finally:
        del SCHEMA_VERSIONS["Renamed"], UPCASTERS[("Renamed", 1)]


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
    first.commit([_event(1, "a", 1)], {}, 1)
    first.close()
    second = SqliteEventStore(tmp_path / "r.db")
    try:
        assert [e.data for e in second.read()] == [{"n": 1, "amount": "0.00000001"}]
    finally:
        second.close()


def test_an_update_leaves_the_fixed_columns_and_their_index_entries_alone(
    tmp_path: Path,
) -> None:
    """A fixed column is left out of the update: the row keeps it (so an update never
    rewrites that column's index entries), while the other columns change."""
    tables = {
        "things": {
            "columns": {"id": str, "owner": str, "value": str, "seq": int},
            "pk": ["id"],
            "indexes": [["owner", "seq"]],
            "fixed": ["owner", "seq"],
        }
    }
    store = SqliteEventStore(tmp_path / "fixed.db", tables=tables)
    try:
        row = {"id": "x", "owner": "a", "value": "1", "seq": 1}
        store.commit([_event(1, "s", 1)], {"things": ([row], [])}, 1)
        changed = {"id": "x", "owner": "b", "value": "2", "seq": 9}
        store.commit([_event(2, "s", 2)], {"things": ([changed], [])}, 2)
        assert store.conn.execute("SELECT owner, value, seq FROM things").fetchall() == [
            ("a", "2", 1)
        ]
    finally:
        store.close()
