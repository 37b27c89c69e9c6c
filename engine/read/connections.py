"""Where the read side gets its connections: read-only ones, from the store.

Every SELECT of the read side runs on a connection made here, and this module asks the
store for it in one place (`_open`), so a store that hands readers out differently
changes one line. A connection serves one thread (each thread reads its own snapshot
of the committed tables); `close` ends all of them, so the writer can checkpoint the
WAL."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from engine.store.sqlite import SqliteEventStore


def log_reader(db_path: str | Path) -> SqliteEventStore:
    """The store's read-only reader of the database at `db_path`: its connection, and the
    log's events decoded (`sandex events`, engine/read/event_listing.py)."""
    return SqliteEventStore.reader(db_path)


def _open(db_path: str) -> sqlite3.Connection:
    """A read-only connection to the database at `db_path`, from the store's reader."""
    return log_reader(db_path).conn


class ReadConnections:
    """One read-only connection per thread, opened at the thread's first read."""

    def __init__(self, db_path: str) -> None:
        self.db_path = db_path
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _open(self.db_path)
            self._local.conn = conn
            with self._lock:
                self._opened.append(conn)
        return conn

    def data_version(self) -> tuple[object, int]:
        """A token that changes whenever another connection committed (`PRAGMA
        data_version` of this thread's connection). The count is per connection, so the
        token holds the connection too: a new thread, or one reopened after `close`,
        starts its own count and never matches an older token."""
        conn = self.conn
        return conn, conn.execute("PRAGMA data_version").fetchone()[0]

    def close(self) -> None:
        """Close the connections of every thread, so the writer can checkpoint the WAL."""
        with self._lock:
            for conn in self._opened:
                conn.close()
            self._opened.clear()
        self._local = threading.local()
