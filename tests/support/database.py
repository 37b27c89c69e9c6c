"""One door for tests that look into a database beside the engine: the same SQL (in the
dialect both stores speak, with SQLite's `?` placeholders) on an SQLite file or a
PostgreSQL URL, so that a test reads or tampers with its sandbox's database the same way
on either store."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandex.engine.store import is_server_url
from sandex.engine.store.locations import local_base, locate
from sandex.engine.store.postgres_reads import to_psycopg

# The store's own tables, beside the read models (PostgreSQL adds the log's head row).
STORE_TABLES = frozenset(
    {"events", "checkpoint", "sandex_meta", "state_snapshots", "log_head", "sqlite_sequence"}
)


def query(db: Path | str, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """The rows of one query, on a connection of the test's own."""
    return _run(db, [(sql, params)], fetch=True)


def execute(db: Path | str, *statements: str | tuple[str, Sequence[Any]]) -> None:
    """Statements run and committed together: a change made behind the engine's back."""
    _run(db, [(s, ()) if isinstance(s, str) else s for s in statements], fetch=False)


def tables(db: Path | str) -> list[str]:
    """The names of the database's tables, sorted."""
    if is_server_url(db):
        sql = (
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() ORDER BY table_name"
        )
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    return [str(r[0]) for r in query(db, sql)]


def stored_bytes(db: Path | str) -> bytes:
    """Everything a database keeps, as bytes, for a test that looks for what must never be
    stored: its side files (key file, WAL: every file named after `local_base`) raw, and on
    SQLite the file itself, freed pages included; on PostgreSQL, whose files are the
    server's, every value of every table of its schema."""
    base = Path(local_base(db))
    raw = [p.read_bytes() for p in base.parent.iterdir() if p.name.startswith(base.name)]
    if is_server_url(db):
        for table in tables(db):
            for row in query(db, f"SELECT * FROM {table}"):
                raw += [
                    bytes(v) if isinstance(v, bytes | memoryview) else str(v).encode() for v in row
                ]
    return b"\n".join(raw)


def _run(
    db: Path | str, statements: list[tuple[str, Sequence[Any]]], *, fetch: bool
) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    if is_server_url(db):
        import psycopg

        url, options = locate(db).conninfo()  # a world's schema: its search path
        with psycopg.connect(url, options=options) as conn:  # one transaction, committed on exit
            for sql, params in statements:
                cursor = conn.execute(to_psycopg(sql), params)  # type: ignore[call-overload]
                if fetch:
                    rows = [tuple(r) for r in cursor.fetchall()]
        return rows
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        with conn:
            for sql, params in statements:
                cursor = conn.execute(sql, params)
                if fetch:
                    rows = cursor.fetchall()
    finally:
        conn.close()
    return rows


def read_only_connection(db: Path | str) -> Any:
    """A connection to `db` on which every write fails, to stand in for a store's own
    (`store.conn`) and make its commits fail; the caller closes it."""
    if is_server_url(db):
        import psycopg

        url, options = locate(db).conninfo()
        return psycopg.connect(
            url, autocommit=True, options=f"{options} -c default_transaction_read_only=on"
        )
    import sqlite3

    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)


def copy_database(source: Path | str, target: Path | str) -> None:
    """`target`, a new database on the same store, made a copy of `source` with its state
    snapshots (which `sandex copy` leaves out: a cache)."""
    if not is_server_url(source):
        shutil.copy(source, target)
        if Path(f"{source}.key").exists():  # whole with its keys, as verify wants it
            shutil.copy(f"{source}.key", f"{target}.key")
        return
    from sandex.engine.tools.copy import copy

    copy(source, target)
    snapshots = query(source, "SELECT position, format, event_check, data FROM state_snapshots")
    insert = "INSERT INTO state_snapshots (position, format, event_check, data) VALUES (?, ?, ?, ?)"
    execute(target, *[(insert, row) for row in snapshots])
