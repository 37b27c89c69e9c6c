"""Which store a `--db` opens, chosen in one place: a registry of backends by the kind
of location (engine/store/locations.py's `locate`: an SQLite file or `:memory:`, a
PostgreSQL URL), so the composition root, the tools and the read side name a database
and never a store class, nor read its text."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sandex.engine.store.checkpointer import log_file_stamp
from sandex.engine.store.lease import WriterLease
from sandex.engine.store.locations import Kind, Location, locate
from sandex.engine.store.port import EventStore, SqlReader
from sandex.engine.store.sqlite import SqliteEventStore, connect_read_only, in_memory


class Releasable(Protocol):
    def release(self) -> None: ...


@dataclass(frozen=True)
class Backend:
    """How one kind of location is opened."""

    open: Callable[..., EventStore]  # (location text, durability, tables, lease, lease_seconds)
    reader: Callable[[str], EventStore]
    # The read side's SQL: a new connection (SQLite, one a thread) or a pool every
    # thread shares (`shared_reads`).
    sql_reader: Callable[[str], SqlReader]
    shared_reads: bool
    # A count that changes whenever another connection committed, read on a `sql_reader`.
    reads_version: Callable[[SqlReader], int]
    # A stamp of the database that a commit changes, read without a connection (None:
    # none to be had, so a reader must look).
    log_stamp: Callable[[str], object | None]
    # (columns of its `events` table, its table names), read-only, of any database.
    contents: Callable[[str], tuple[set[str], list[str]]]
    # Remove a store and every trace of it (a deleted world): its files, or its schema.
    drop: Callable[[str], None]
    # The bytes a store takes: its files, or its schema's tables on the server.
    size: Callable[[str], int]
    # The writer lease, taken and held until `release()` (None: a store with no second
    # writer to keep out); `LeaseHeld` at once when a writer has it.
    lease: Callable[[str], Releasable | None]


def _sqlite_open(db: str, **options: Any) -> EventStore:
    options.pop("lease_seconds", None)  # one machine: a lease ends with its process
    return SqliteEventStore(db, **options)


def _sqlite_contents(db: str) -> tuple[set[str], list[str]]:
    conn = connect_read_only(db)
    try:
        columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(events)")}
        tables = [
            str(row[0])
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
    finally:
        conn.close()
    return columns, tables


# An SQLite database's own files besides itself.
_SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def _sqlite_files(db: str) -> list[Path]:
    return [Path(db), *(Path(f"{db}{tail}") for tail in _SQLITE_COMPANIONS)]


def _sqlite_drop(db: str) -> None:
    if not in_memory(db):
        for path in _sqlite_files(db):
            path.unlink(missing_ok=True)


def _sqlite_size(db: str) -> int:
    if in_memory(db):
        return 0
    return sum(p.stat().st_size for p in _sqlite_files(db) if p.exists())


def _sqlite_reads(db: str) -> SqlReader:
    """A read-only connection set as the store's reader sets its own (a busy timeout)."""
    return SqliteEventStore.reader(db).conn


def _sqlite_reads_version(conn: SqlReader) -> int:
    row = conn.execute("PRAGMA data_version").fetchone()
    return int(row[0]) if row else 0


def _server_reads_version(conn: SqlReader) -> int:
    """The count of commits to the log (engine/store/postgres_schema.py's `log_head`)."""
    row = conn.execute("SELECT commits FROM log_head WHERE name = 'log'").fetchone()
    return int(row[0]) if row else 0


def _server_open(db: str, **options: Any) -> EventStore:
    from sandex.engine.store.postgres import PostgresEventStore

    return PostgresEventStore(db, **options)


def _server_reader(db: str) -> EventStore:
    from sandex.engine.store.postgres import PostgresEventStore

    return PostgresEventStore.reader(db)


def _server_reads(db: str) -> SqlReader:
    from sandex.engine.store.postgres_reads import PostgresReads

    return PostgresReads(db)


def _server_contents(db: str) -> tuple[set[str], list[str]]:
    from sandex.engine.store.postgres import database_contents

    return database_contents(db)


def _server_drop(db: str) -> None:
    from sandex.engine.store.postgres import drop_schema

    drop_schema(db)


def _server_size(db: str) -> int:
    from sandex.engine.store.postgres import schema_size

    return schema_size(db)


def _server_lease(db: str) -> Releasable:
    from sandex.engine.store.postgres import take_lease

    return take_lease(db)


_SQLITE = Backend(
    open=_sqlite_open,
    reader=SqliteEventStore.reader,
    sql_reader=_sqlite_reads,
    shared_reads=False,
    reads_version=_sqlite_reads_version,
    log_stamp=log_file_stamp,
    contents=_sqlite_contents,
    drop=_sqlite_drop,
    size=_sqlite_size,
    lease=WriterLease.take,
)

BACKENDS: dict[Kind, Backend] = {
    "file": _SQLITE,
    "memory": _SQLITE,
    "server": Backend(
        open=_server_open,
        reader=_server_reader,
        sql_reader=_server_reads,
        shared_reads=True,
        reads_version=_server_reads_version,
        log_stamp=lambda db: None,
        contents=_server_contents,
        drop=_server_drop,
        size=_server_size,
        lease=_server_lease,
    ),
}


def backend(db: str | Path | Location) -> Backend:
    """The backend that opens `db`."""
    return BACKENDS[locate(db).kind]


def open_store(
    db: str | Path | Location,
    *,
    durability: str = "FULL",
    tables: dict[str, dict[str, Any]] | None = None,
    lease: bool = False,
    lease_seconds: float = 5.0,
) -> EventStore:
    """The store of `db`, its schema made or migrated; `lease`: hold the writer lease
    (on a server, `lease_seconds` is how long a hung holder keeps it)."""
    where = locate(db)
    return BACKENDS[where.kind].open(
        where.text, durability=durability, tables=tables, lease=lease, lease_seconds=lease_seconds
    )


def open_reader(db: str | Path | Location) -> EventStore:
    """A read-only store on an existing database (no schema work)."""
    where = locate(db)
    return BACKENDS[where.kind].reader(where.text)


def open_sql_reader(db: str | Path | Location) -> SqlReader:
    """A read-only SQL connection for the read side's queries on `db` (on a server: a
    pool, thread-safe; `backend(db).shared_reads` says which)."""
    where = locate(db)
    return BACKENDS[where.kind].sql_reader(where.text)


def database_contents(db: str | Path | Location) -> tuple[set[str], list[str]]:
    """(columns of its `events` table, its table names) of the database at `db`,
    read-only: what the command line checks before it opens a `--db` (the file may be
    another program's)."""
    where = locate(db)
    return BACKENDS[where.kind].contents(where.text)


def drop_store(db: str | Path | Location) -> None:
    """Remove the store at `db` and every trace of it: an SQLite database's files, a
    server schema (DROP SCHEMA ... CASCADE; a server's default schema is refused). Its
    side files (key file, ...) are the caller's."""
    where = locate(db)
    BACKENDS[where.kind].drop(where.text)


def store_size(db: str | Path | Location) -> int:
    """The bytes the store at `db` takes (files, or its schema on the server)."""
    where = locate(db)
    return BACKENDS[where.kind].size(where.text)


def take_lease(db: str | Path | Location) -> Releasable | None:
    """The writer lease of the store at `db`, held until `release()` (None where no
    second writer could find it); `LeaseHeld` at once while a writer runs on it."""
    where = locate(db)
    return BACKENDS[where.kind].lease(where.text)


def holds_events(db: str | Path | Location) -> bool:
    """Whether the database at `db` exists and its log holds an event."""
    where = locate(db)
    if not where.on_server:
        return Path(where.text).exists() and Path(where.text).stat().st_size > 0
    if "events" not in database_contents(where)[1]:
        return False
    reader = open_reader(where)
    try:
        return reader.last_position() > 0
    finally:
        reader.close()


# The meta value `sandex copy` (engine/tools/copy.py) sets in its target before it writes
# the log, and erases once the log, the read models and the key file are whole: a
# database that holds it is a copy that never finished, which nothing may serve. Its
# value: the source, as `display` shows it.
UNFINISHED_COPY = "unfinished_copy"


def unfinished_copy(store: EventStore) -> str | None:
    """Why `store` must not be served nor pass verify, when it is a copy that stopped
    before it was whole (else None): one line, what to do included."""
    source = store.get_meta(UNFINISHED_COPY)
    if source is None:
        return None
    return (
        f"{locate(store.path).display()} holds an unfinished copy of {source} (sandex copy"
        " stopped before the log, the read models and the key file were whole); drop it and"
        " copy again"
    )
