"""What an existing SQLite file holds, read without changing it: whether it has the
sandex event log, and which tables it has. The command line asks before it opens a
`--db` for real, so a mistaken path is never created, locked or given sandex tables."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

# The columns `sandex events` and a replay read: a table named `events` without them is
# some other program's.
EVENT_COLUMNS = frozenset({"position", "stream", "version", "type", "data"})


class UnreadableDatabase(Exception):
    """SQLite could not read the file as a database (its message says why)."""


@dataclass(frozen=True, slots=True)
class DatabaseProbe:
    has_event_log: bool
    tables: list[str]  # every table's name, sorted


def probe(path: str | Path) -> DatabaseProbe:
    """Open `path` read-only (it must exist) and say what it holds."""
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
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
    except sqlite3.DatabaseError as exc:
        raise UnreadableDatabase(str(exc)) from None
    return DatabaseProbe(has_event_log=columns >= EVENT_COLUMNS, tables=tables)
