"""Where the read side gets its connections: read-only ones, from the store.

Every SELECT of the read side runs on a connection made here, and this module asks the
store for it in one place (`open_sql_reader`). On SQLite a connection serves one thread (each
thread reads its own snapshot of the committed tables) and `close` ends all of them, so
the writer can checkpoint the WAL. On PostgreSQL every thread shares one pool of
read-only connections (engine/store/postgres_reads.py), which speaks the same `?` SQL."""

from __future__ import annotations

import threading
from pathlib import Path

from sandex.engine.store import EventStore, SqlReader, backend, open_reader, open_sql_reader


def log_reader(db_path: str | Path) -> EventStore:
    """The store's read-only reader of the database at `db_path`: the log's events
    decoded (`sandex events`, engine/read/event_listing.py)."""
    return open_reader(db_path)


class ReadConnections:
    """One read-only connection per thread (SQLite), opened at the thread's first read;
    one shared pool (PostgreSQL), opened at the first read."""

    def __init__(self, db_path: str) -> None:
        self.db_path = str(db_path)
        self._local = threading.local()
        self._opened: list[SqlReader] = []
        self._lock = threading.Lock()
        self._shared: SqlReader | None = None
        self._backend = backend(self.db_path)
        self._server = self._backend.shared_reads

    @property
    def conn(self) -> SqlReader:
        """This thread's connection (`execute` with `?` placeholders)."""
        if self._server:
            with self._lock:
                if self._shared is None:
                    self._shared = open_sql_reader(self.db_path)
                return self._shared
        conn: SqlReader | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = open_sql_reader(self.db_path)
            self._local.conn = conn
            with self._lock:
                self._opened.append(conn)
        return conn

    def data_version(self) -> tuple[object, int]:
        """A token that changes whenever another connection committed (`PRAGMA
        data_version` of this thread's connection; the log's commit count on
        PostgreSQL). The SQLite count is per connection, so the token holds the
        connection too: a new thread, or one reopened after `close`, starts its own count
        and never matches an older token."""
        conn = self.conn
        return conn, self._backend.reads_version(conn)

    def log_stamp(self) -> object | None:
        """A stamp of the database that any commit changes, read without a connection
        (SQLite: its WAL file's); None when there is none and only a read can tell."""
        return self._backend.log_stamp(self.db_path)

    def held(self) -> int:
        """How many connections are open (every thread's, or the shared pool)."""
        with self._lock:
            return len(self._opened) + (self._shared is not None)

    def close_own(self) -> None:
        """Close the calling thread's connection, if it has one: a thread that reads a
        world seldom (a loaded idle world's background work) need not keep one open
        (its schema, page cache and statements) between its reads. The next read opens
        another. No other thread uses it, so closing it cannot cut a read short."""
        if self._server:
            return
        conn: SqlReader | None = getattr(self._local, "conn", None)
        if conn is None:
            return
        self._local.conn = None
        with self._lock:
            if conn in self._opened:  # else `close` has closed it already
                self._opened.remove(conn)
        conn.close()

    def close(self) -> None:
        """Close the connections of every thread, so the writer can checkpoint the WAL."""
        with self._lock:
            for conn in self._opened:
                conn.close()
            self._opened.clear()
            shared, self._shared = self._shared, None
        if shared is not None:
            shared.close()
        self._local = threading.local()


__all__ = ["ReadConnections", "SqlReader", "log_reader"]
