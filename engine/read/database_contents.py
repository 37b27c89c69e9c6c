"""What an SQLite file holds: the columns of its `events` table and its table names.

The command line asks this of a `--db` before anything opens it as a store, to tell a
sandex database from another program's; the file may be anything SQLite reads, so it
is opened by the store's plain read-only connection (any path works), not through its
reader, which expects a sandex database. Nothing is created or changed; an SQLite
error (a corrupt file) reaches the caller."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from engine.store import connect_read_only, display, is_server_url

__all__ = ["DatabaseContents", "database_contents", "display"]


class DatabaseContents(NamedTuple):
    event_columns: set[str]  # empty when there is no `events` table
    tables: list[str]  # by name


def database_contents(path: str | Path) -> DatabaseContents:
    """The contents of the SQLite file (or PostgreSQL database) at `path`, read-only."""
    if is_server_url(path):
        from engine.store.postgres import database_contents as server_contents

        return DatabaseContents(*server_contents(str(path)))
    conn = connect_read_only(path)
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(events)")}
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
    finally:
        conn.close()
    return DatabaseContents(columns, tables)
