"""The read side's door to a PostgreSQL store: a pool of read-only connections behind
the `execute(sql, params)` that engine/read calls on an SQLite connection.

The read side's queries are written once, in the SQL both databases speak, with `?`
placeholders (SQLite's); this door turns those into psycopg's `%s` (a `?` inside a
quoted literal is left alone) and runs each query on a connection borrowed from the
pool, in autocommit: every query reads the latest committed state, as each statement on
an SQLite reader outside a transaction does. Rows come back as tuples, all fetched,
so no cursor outlives its borrowed connection. A database error is a
`StoreUnavailable`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
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


class PostgresReads:
    """A pool of read-only connections to one database; thread-safe, closed once."""

    def __init__(self, url: str, *, max_size: int = 8) -> None:
        self.url = url
        conninfo, in_schema = locate(url).conninfo()
        options = f"{in_schema} -c default_transaction_read_only=on".strip()
        self._pool = ConnectionPool(
            conninfo,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True, "options": options},
            open=False,
            name="sandex-reads",
        )
        try:
            self._pool.open(wait=True, timeout=10)
        except Exception as exc:  # psycopg_pool's PoolTimeout, or the server's refusal
            self._pool.close()
            raise StoreUnavailable(f"cannot open database: {exc}") from exc

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        try:
            with self._pool.connection() as conn:
                cursor = conn.execute(to_psycopg(sql), params)  # type: ignore[call-overload]
                rows = cursor.fetchall() if cursor.description is not None else []
                return Rows(rows, cursor.rowcount)
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc

    def close(self) -> None:
        self._pool.close()
