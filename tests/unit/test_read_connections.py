"""The read side's connections: from the store, one per thread, and a change token."""

from __future__ import annotations

import ast
import sqlite3
import threading
from pathlib import Path

import pytest

from sandex.engine.read import connections
from sandex.engine.read.connections import ReadConnections
from sandex.engine.read.database_contents import database_contents

READ = Path(__file__).resolve().parents[2] / "engine" / "read"


def _database(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE things (id INTEGER PRIMARY KEY)")
    conn.close()


def test_connections_come_from_the_store_in_one_place() -> None:
    """Only connections.py asks the store for a reader; no module of the read side
    opens a connection itself (database_contents.py takes the store's plain one)."""
    askers, openers = [], []
    for path in sorted(READ.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "SqliteEventStore"
            ):  # SqliteEventStore.reader(...): a type annotation asks for nothing
                askers.append(path.name)
            if isinstance(node, ast.Name) and node.id in (
                "open_reader",
                "open_sql_reader",
                "PostgresReads",
            ):
                askers.append(path.name)
            if isinstance(node, ast.Attribute) and node.attr == "connect":
                openers.append(path.name)
    assert set(askers) == {"connections.py"}
    assert openers == []


def test_each_thread_reads_on_its_own_connection_until_closed(tmp_path: Path) -> None:
    db = tmp_path / "read.db"
    _database(db)
    reads = ReadConnections(str(db))
    mine = reads.conn
    assert reads.conn is mine
    theirs: list[sqlite3.Connection] = []
    thread = threading.Thread(target=lambda: theirs.append(reads.conn))
    thread.start()
    thread.join()
    assert theirs[0] is not mine
    with pytest.raises(sqlite3.OperationalError):  # read-only
        mine.execute("INSERT INTO things VALUES (1)")
    reads.close()
    for conn in (mine, theirs[0]):
        with pytest.raises(sqlite3.ProgrammingError):
            conn.execute("SELECT 1")
    assert reads.conn is not mine  # reopened at the next read


def test_the_data_version_changes_when_another_connection_commits(tmp_path: Path) -> None:
    db = tmp_path / "read.db"
    _database(db)
    reads = ReadConnections(str(db))
    before = reads.data_version()
    assert reads.data_version() == before
    writer = sqlite3.connect(db)
    with writer:
        writer.execute("INSERT INTO things VALUES (1)")
    writer.close()
    after = reads.data_version()
    assert after != before
    reads.close()
    assert reads.data_version() != after  # a new connection: a count of its own


def test_connections_are_the_stores_readers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "read.db"
    _database(db)
    asked: list[str] = []
    real = connections.open_sql_reader

    def reader(path: str) -> object:
        asked.append(path)
        return real(path)

    monkeypatch.setattr(connections, "open_sql_reader", reader)
    ReadConnections(str(db)).conn.execute("SELECT 1")
    assert asked == [str(db)]


@pytest.mark.parametrize("name", ["plain.db", "what?.db", "hash#.db", "per%41cent.db"])
def test_database_contents_reads_any_path(tmp_path: Path, name: str) -> None:
    db = tmp_path / name
    _database(db)
    assert database_contents(db) == (set(), ["things"])
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE events (position INTEGER, stream TEXT)")
    conn.close()
    assert database_contents(db) == ({"position", "stream"}, ["events", "things"])


def test_on_postgresql_every_thread_shares_one_read_only_pool(postgres_url: str) -> None:
    """The same `?` SQL runs on PostgreSQL through the store's pool; the change token
    moves when a writer commits to the log."""
    from sandex.engine.kernel.events import Event
    from sandex.engine.runtime.composition import TABLES
    from sandex.engine.store import StoreUnavailable, open_store

    store = open_store(postgres_url, tables=TABLES)
    reads = ReadConnections(postgres_url)
    try:
        mine = reads.conn
        theirs: list[object] = []
        thread = threading.Thread(target=lambda: theirs.append(reads.conn))
        thread.start()
        thread.join()
        assert theirs == [mine]
        before = reads.data_version()
        store.commit([Event("Thing", "s", {}, 1, 1, "2024-01-01T00:00:00.000000Z")], {}, 1)
        assert reads.data_version() != before
        row = mine.execute("SELECT count(*) FROM events WHERE stream = ?", ("s",)).fetchone()
        assert row == (1,)
        with pytest.raises(StoreUnavailable):  # read-only
            mine.execute("DELETE FROM events")
    finally:
        reads.close()
        store.close()
