"""What a database holds: the columns of its `events` table and its table names.

The command line asks this of a `--db` before anything opens it as a store, to tell a
sandex database from another program's; an SQLite file may be anything SQLite reads, so
the store's backend opens it by its plain read-only connection (any path works), not
through its reader, which expects a sandex database. Nothing is created or changed; an
SQLite error (a corrupt file) reaches the caller."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from sandex.engine.store import database_contents as stored_contents
from sandex.engine.store import display, locate

__all__ = ["DatabaseContents", "database_contents", "display", "on_server"]


class DatabaseContents(NamedTuple):
    event_columns: set[str]  # empty when there is no `events` table
    tables: list[str]  # by name


def database_contents(path: str | Path) -> DatabaseContents:
    """The contents of the SQLite file (or PostgreSQL database) at `path`, read-only."""
    return DatabaseContents(*stored_contents(path))


def on_server(path: str | Path) -> bool:
    """Whether `path` names a database on a server (the store's `locate` says)."""
    return locate(path).on_server
