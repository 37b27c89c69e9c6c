"""Which store a `--db` opens: a PostgreSQL URL opens the server store, anything else
an SQLite file. The one place that tells them apart, so the composition root, the
tools and the read side name a database and never a store class."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.store.locations import display, is_server_url
from engine.store.port import EventStore
from engine.store.sqlite import SqliteEventStore


def open_store(
    db: str | Path,
    *,
    durability: str = "FULL",
    tables: dict[str, dict[str, Any]] | None = None,
    lease: bool = False,
    lease_seconds: float = 5.0,
) -> EventStore:
    """The store of `db`, its schema made or migrated; `lease`: hold the writer lease
    (on a server, `lease_seconds` is how long a hung holder keeps it)."""
    if is_server_url(db):
        from engine.store.postgres import PostgresEventStore

        return PostgresEventStore(
            str(db), durability=durability, tables=tables, lease=lease, lease_seconds=lease_seconds
        )
    return SqliteEventStore(db, durability=durability, tables=tables, lease=lease)


def holds_events(db: str | Path) -> bool:
    """Whether the database at `db` exists and its log holds an event."""
    if not is_server_url(db):
        return Path(db).exists() and Path(db).stat().st_size > 0
    from engine.store.postgres import database_contents

    if "events" not in database_contents(str(db))[1]:
        return False
    reader = open_reader(db)
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
        f"{display(store.path)} holds an unfinished copy of {source} (sandex copy stopped"
        " before the log, the read models and the key file were whole); drop it and copy again"
    )


def open_reader(db: str | Path) -> EventStore:
    """A read-only store on an existing database (no schema work)."""
    if is_server_url(db):
        from engine.store.postgres import PostgresEventStore

        return PostgresEventStore.reader(str(db))
    return SqliteEventStore.reader(db)
