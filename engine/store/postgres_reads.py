"""The read side's door to a PostgreSQL store: a pool of read-only connections behind
the `execute(sql, params)` that engine/read calls on an SQLite connection; one pool per
database for every schema (world) of it that this process reads.

The read side's queries are written once, in the SQL both databases speak, with `?`
placeholders (SQLite's); this door turns those into psycopg's `%s` (a `?` inside a
quoted literal is left alone) and runs each query on a connection borrowed from the
pool, in autocommit: every query reads the latest committed state, as each statement on
an SQLite reader outside a transaction does. Rows come back as tuples, all fetched,
so no cursor outlives its borrowed connection. A database error is a
`StoreUnavailable`."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import psycopg.sql
from psycopg_pool import ConnectionPool

from sandex.engine.store.locations import locate
from sandex.engine.store.port import StoreUnavailable

_translated: dict[str, str] = {}


def to_psycopg(sql: str) -> str:
    """`sql` with SQLite's `?` placeholders as psycopg's `%s` (and a literal `%` doubled)."""
    done = _translated.get(sql)
    if done is not None:
        return done
    out: list[str] = []
    quoted = False
    for ch in sql:
        if ch == "'":
            quoted = not quoted
            out.append(ch)
        elif ch == "%":
            out.append("%%")
        elif ch == "?" and not quoted:
            out.append("%s")
        else:
            out.append(ch)
    done = "".join(out)
    if len(_translated) < 4096:
        _translated[sql] = done
    return done


class Rows:
    """What `execute` answers: the rows of one query, as an SQLite cursor gives them."""

    __slots__ = ("_rows", "_next", "rowcount")

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows = self._rows[self._next :]
        self._next = len(self._rows)
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())


class ConnectionReads:
    """The same `execute` on one given connection (a writer's own, which sees the
    transaction it holds)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        try:
            cursor = self._conn.execute(to_psycopg(sql), params)  # type: ignore[call-overload]
            rows = cursor.fetchall() if cursor.description is not None else []
            return Rows(rows, cursor.rowcount)
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc

    def close(self) -> None:
        """The connection is its store's: it closes it."""


class _SharedPool:
    """One pool of read-only connections to one database, shared by every store of it
    in this process (a server's worlds are schemas of one database): the connections a
    process holds stay bounded however many worlds it loads. Each borrow sets the
    connection's search path to the borrower's schema unless it is there already."""

    def __init__(self, conninfo: str, max_size: int) -> None:
        self.users = 0
        self.pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, "options": "-c default_transaction_read_only=on"},
            open=False,
            name="sandex-reads",
        )
        # the schema each pooled connection's search path names (None: the default)
        self.schema_of: weakref.WeakKeyDictionary[psycopg.Connection[Any], str | None] = (
            weakref.WeakKeyDictionary()
        )


# The most read connections a process holds to one database, however many worlds read it.
POOL_SIZE = 8

_pools: dict[tuple[str, int], _SharedPool] = {}
_pools_lock = threading.Lock()


class PostgresReads:
    """The read side of one store (a schema of a database) on its database's shared pool
    (`_SharedPool`); thread-safe, closed once."""

    def __init__(self, url: str, *, max_size: int = POOL_SIZE) -> None:
        self.url = url
        where = locate(url)
        conninfo, _ = where.conninfo()
        self._schema = where.schema
        self._key = (conninfo, max_size)
        self._closed = False
        with _pools_lock:
            shared = _pools.get(self._key)
            if shared is None:
                shared = _SharedPool(conninfo, max_size)
                try:
                    shared.pool.open(wait=True, timeout=10)
                except Exception as exc:  # psycopg_pool's PoolTimeout, or the server's refusal
                    shared.pool.close()
                    raise StoreUnavailable(f"cannot open database: {exc}") from exc
                _pools[self._key] = shared
            shared.users += 1
        self._shared = shared

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        shared = self._shared
        try:
            with shared.pool.connection() as conn:
                if shared.schema_of.get(conn, None) != self._schema:
                    if self._schema is None:
                        conn.execute("SET search_path TO DEFAULT")
                    else:
                        conn.execute(
                            psycopg.sql.SQL("SET search_path TO {}").format(
                                psycopg.sql.Identifier(self._schema)
                            )
                        )
                    shared.schema_of[conn] = self._schema
                cursor = conn.execute(to_psycopg(sql), params)  # type: ignore[call-overload]
                rows = cursor.fetchall() if cursor.description is not None else []
                return Rows(rows, cursor.rowcount)
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc

    def close(self) -> None:
        """This store's share of the pool; the pool closes with its last store."""
        with _pools_lock:
            if self._closed:
                return
            self._closed = True
            self._shared.users -= 1
            last = self._shared.users == 0
            if last:
                del _pools[self._key]
        if last:
            self._shared.pool.close()
