"""The event store on a PostgreSQL server, through psycopg 3: the port of
engine/store/port.py, behaving as the SQLite store does (the contract suite runs on both).

One writer connection, in autocommit with explicit transactions: `write` opens one per
group commit and writes the events (COPY), the read-model rows (upserts) and the
checkpoint; `finish` COMMITs it, possibly from the committer thread. Every append also
moves the `log_head` row from the position before its first event to its last one: an
append that does not start right after the log's end is refused (`Concurrency`), so the
log is gapless in commit order, and two writers meet on that row's lock instead of
interleaving. Readers (the read side, the snapshot thread, the tools) have connections
of their own (engine/store/postgres_reads.py for the read side's pool).

Durability: `FULL` commits with `synchronous_commit = on` (COMMIT returns once the
server's WAL is flushed, as the server's configuration allows), `NORMAL` with `off` (a
server crash may lose the last commits, never part of one)."""

from __future__ import annotations

import hashlib
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import orjson
import psycopg
import psycopg.errors

from sandex.engine.kernel.events import SCHEMA_VERSIONS, Event, upcast
from sandex.engine.kernel.logs import get_logger
from sandex.engine.store import postgres_schema
from sandex.engine.store.lease import Fenced, LeaseHeld
from sandex.engine.store.locations import display, locate
from sandex.engine.store.port import Concurrency, NoSuchTable, StoreUnavailable, TableWrites
from sandex.engine.store.postgres_reads import ConnectionReads, PostgresReads
from sandex.engine.store.read_model_indexes import with_indexes

log = get_logger("sandex.store")

_SYNC = {"FULL": "on", "NORMAL": "off", "OFF": "off"}

# pg_try_advisory_lock key of the writer lease (one writer per database).
WRITER_LOCK = 0x5A4E_0002

# TCP keepalives (ignored on a unix socket): a server that is gone is noticed in about
# 10 s instead of the kernel's two hours.
_KEEPALIVES: dict[str, Any] = {"keepalives": 1, "keepalives_idle": 5}
_KEEPALIVES.update(keepalives_interval=2, keepalives_count=3)

_COLUMNS = "position, stream, version, type, schema, data, meta, occurred_at"


def _event_rows(events: Sequence[Event]) -> Iterator[tuple[Any, ...]]:
    """Rows for COPY; the events of one decision share a meta dict, encoded once."""
    dumps = orjson.dumps
    meta_of: Any = None
    meta_text = ""
    for e in events:
        if e.meta is not meta_of:
            meta_of = e.meta
            meta_text = dumps(e.meta).decode()
        yield (
            e.position,
            e.stream,
            e.version,
            e.type,
            e.schema,
            dumps(e.data).decode(),
            meta_text,
            e.occurred_at,
        )


def _connect(url: str, *, read_only: bool, options: str = "") -> psycopg.Connection[Any]:
    """A connection to the database at `url`, in its schema (the URL's `schema`)."""
    conninfo, in_schema = locate(url).conninfo()
    options = f"{in_schema} {options}".strip()
    if read_only:
        options = f"{options} -c default_transaction_read_only=on".strip()
    try:
        return psycopg.connect(
            conninfo, autocommit=True, options=options, connect_timeout=10, **_KEEPALIVES
        )
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot open database {display(url)}: {exc}") from exc


def database_contents(url: str) -> tuple[set[str], list[str]]:
    """(columns of its `events` table, its table names) of the database at `url`,
    read-only: what the command line checks before it opens a `--db`."""
    conn = _connect(url, read_only=True)
    try:
        columns = {
            str(r[0])
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = current_schema() AND table_name = 'events'"
            )
        }
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() ORDER BY table_name"
            )
        ]
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot read database {display(url)}: {exc}") from exc
    finally:
        conn.close()
    return columns, tables


def drop_schema(url: str) -> None:
    """Remove the store in the schema that `url` names, tables and all, leaving no
    trace (DROP SCHEMA ... CASCADE; nothing when it is gone already). A URL without a
    schema is refused: a database's default schema is not one store's to drop."""
    where = locate(url)
    schema = where.schema
    if schema is None:
        raise ValueError(f"{display(url)}: only a named schema (?schema=NAME) is dropped")
    conn = _connect(where.without_schema().text, read_only=False)
    try:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")  # type: ignore[arg-type]
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot drop {display(url)}: {exc}") from exc
    finally:
        conn.close()


def schema_size(url: str) -> int:
    """The bytes the store at `url` takes on its server: its schema's tables, with their
    indexes and TOAST."""
    conn = _connect(url, read_only=True)
    try:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm')"
        ).fetchone()
    except psycopg.Error as exc:
        raise StoreUnavailable(f"cannot read database {display(url)}: {exc}") from exc
    finally:
        conn.close()
    return int(row[0]) if row else 0


def take_lease(url: str, seconds: float = 5.0) -> _Lease:
    """The writer lease of the store at `url`, or `LeaseHeld` at once if a writer has
    it (a tool that removes a store while nobody writes it)."""
    return _Lease(url, seconds)


class _LeaseSession:
    """The session that holds the writer leases (session advisory locks) of every store
    of one database that this process writes: a server's worlds are schemas of one
    database, and a session each would spend the server's `max_connections` twice as
    fast. The server drops the locks when the session ends, however the process ends:
    at once when the process dies (its socket closes), and within `seconds` when it hangs
    or its machine is cut off, by `idle_session_timeout` (a thread here runs a query on
    the session every fifth of that, so a live writer's session is never idle that
    long). A session that ends sets `lost`: every lease on it is lost at once."""

    def __init__(self, url: str, seconds: float) -> None:
        self.seconds = seconds
        self.lost = threading.Event()
        self.keys: set[int] = set()  # the leases held on it
        self.users = 0
        self.conn = _connect(url, read_only=False)
        try:
            self.conn.execute(f"SET idle_session_timeout = {_millis(seconds)}")  # type: ignore[arg-type]
        except psycopg.errors.UndefinedObject:
            log.warning(
                "PostgreSQL before 14 has no idle_session_timeout: a hung writer keeps the"
                " lease until its connection ends (TCP keepalives)"
            )
        self.guard = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name="sandex-lease", daemon=True)
        self._thread.start()

    def _keep(self) -> None:
        while not self._stop.wait(self.seconds / 5):
            with self.guard:
                if self._stop.is_set():
                    return
                try:
                    self.conn.execute("SELECT 1")
                except psycopg.Error as exc:
                    log.error("the writer lease is lost", error=str(exc).strip())
                    self.lost.set()
                    return

    def close(self) -> None:
        self._stop.set()
        with self.guard:
            if not self.conn.closed:
                self.conn.close()
        if self._thread is not threading.current_thread():
            self._thread.join()  # a stopped store leaves no thread behind (it ends at once)


_sessions: dict[tuple[str, float], _LeaseSession] = {}
_sessions_lock = threading.Lock()


class _Lease:
    """The writer lease of one store: a session advisory lock (`_lease_key`) held for as
    long as the store is open, on its database's `_LeaseSession`. A lease whose session
    ends sets `lost`."""

    def __init__(self, url: str, seconds: float) -> None:
        self.seconds = seconds
        self.key = _lease_key(url)
        where = locate(url)
        self._place = (where.without_schema().text, seconds)
        with _sessions_lock:
            session = _sessions.get(self._place)
            if session is None or session.lost.is_set():
                session = _LeaseSession(self._place[0], seconds)
                _sessions[self._place] = session
            session.users += 1
        self._session: _LeaseSession | None = session
        self.lost = session.lost
        try:
            with session.guard:
                if self.key in session.keys:  # this process writes it already
                    raise LeaseHeld(
                        f"database {display(url)} is in use by another sandex writer in this"
                        " process; stop it first"
                    )
                got = session.conn.execute(
                    "SELECT pg_try_advisory_lock(%s)", (self.key,)
                ).fetchone()
                if not (got and got[0]):
                    holder = session.conn.execute(
                        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
                        " AND objid = %s AND database = (SELECT oid FROM pg_database"
                        " WHERE datname = current_database())",
                        (WRITER_LOCK,),
                    ).fetchone()
                    by = f" (server backend pid {holder[0]})" if holder else ""
                    raise LeaseHeld(
                        f"database {display(url)} is in use by another sandex writer{by};"
                        " stop it first"
                    )
                session.keys.add(self.key)
        except psycopg.Error as exc:
            self._leave()
            raise StoreUnavailable(f"cannot take the lease of {display(url)}: {exc}") from exc
        except BaseException:
            self._leave()
            raise

    def release(self) -> None:
        """Unlock; the session closes with its last lease."""
        session = self._session
        if session is None:
            return
        with session.guard:
            if self.key in session.keys:
                session.keys.discard(self.key)
                if not session.conn.closed:
                    with suppress(psycopg.Error):
                        session.conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        self._leave()

    def _leave(self) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        with _sessions_lock:
            session.users -= 1
            last = session.users == 0
            if last and _sessions.get(self._place) is session:
                del _sessions[self._place]
        if last:
            session.close()


def _lease_key(url: str) -> int:
    """The writer lease's advisory lock key: `WRITER_LOCK` for the database's default
    schema; for a named schema (each its own store) that key with the schema's CRC in its
    high half, so stores in two schemas of one database have leases of their own."""
    schema = locate(url).schema
    if schema is None:
        return WRITER_LOCK
    return (zlib.crc32(schema.encode()) & 0x7FFF_FFFF) << 32 | WRITER_LOCK


def _millis(seconds: float) -> int:
    return max(1, round(seconds * 1000))


def _one(conn: psycopg.Connection[Any], sql: str) -> Any:
    """The first column of the one row `sql` answers."""
    row = conn.execute(sql).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row[0]


class PostgresEventStore:
    """The port on one PostgreSQL database (`path` is its URL)."""

    _spare: threading.Thread | None = None  # making the next fork's schema (`_make_spare`)
    _spares: list[str]  # the spare schemas it made, dropped at `close` unless taken

    def __init__(
        self,
        url: str,
        *,
        durability: str = "FULL",
        tables: dict[str, dict[str, Any]] | None = None,
        lease: bool = False,
        read_only: bool = False,
        lease_seconds: float = 5.0,
        schema_made: bool = False,
    ) -> None:
        """`lease`: hold the writer lease (`lease_seconds`: how long a hung holder keeps
        it) and fence every append with a new epoch. `schema_made`: the schema is known
        whole with `tables` (a fork just made it), so no schema work."""
        if durability not in _SYNC:
            raise ValueError(f"durability must be one of {sorted(_SYNC)}")
        tables = with_indexes(tables or {})
        self.path = url
        self._spares = []
        self._lease = _Lease(url, lease_seconds) if lease else None
        # Set when this store lost the lease: it never commits again (the owner exits).
        self.fenced = self._lease.lost if self._lease else threading.Event()
        self._epoch: int | None = None
        try:
            # A leased writer's transaction left open by a hung process ends with its
            # lease, so it cannot keep the log's head row locked from the next writer.
            hung = (
                f"-c idle_in_transaction_session_timeout={_millis(lease_seconds)}" if lease else ""
            )
            self.conn = _connect(url, read_only=read_only, options=hung)
            try:
                if not read_only:
                    self.conn.execute(
                        f"SET synchronous_commit = {_SYNC[durability]}"  # type: ignore[arg-type]
                    )
                    if not schema_made:
                        postgres_schema.create(self.conn, tables, schema=locate(url).schema)
                    if lease:
                        self._epoch = int(
                            self.conn.execute(
                                "UPDATE log_head SET epoch = epoch + 1 WHERE name = 'log'"
                                " RETURNING epoch"
                            ).fetchone()[0]  # type: ignore[index]
                        )
            except psycopg.Error as exc:
                self.conn.close()
                raise StoreUnavailable(f"cannot open database {display(url)}: {exc}") from exc
        except BaseException:
            self._release_lease()
            raise
        self._tables = tables  # what a fork opens with
        self._durability = durability
        self._columns = {name: list(spec["columns"]) for name, spec in tables.items()}
        self._pks = {name: list(spec["pk"]) for name, spec in tables.items()}
        self._fixed = {name: frozenset(spec.get("fixed", ())) for name, spec in tables.items()}
        self._upserts: dict[str, str] = {}
        self._held = False
        self._writing = False  # a transaction `write` opened, which `finish` ends
        self._mine = 0  # commits of this store counted in log_head.commits
        self._held_mine = 0  # those inside a held transaction, counted at `release`

    @classmethod
    def reader(cls, url: str) -> PostgresEventStore:
        """A read-only store on an existing database (no schema work)."""
        return cls(url, read_only=True)

    # -- positions --------------------------------------------------------------------

    def _value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        try:
            row = self.conn.execute(sql, params).fetchone()  # type: ignore[call-overload]
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc
        return None if row is None else row[0]

    def last_position(self) -> int:
        return int(self._value("SELECT max(position) FROM events") or 0)

    def stream_version(self, stream: str) -> int:
        return int(self._value("SELECT max(version) FROM events WHERE stream = %s", (stream,)) or 0)

    def checkpoint(self) -> int:
        return int(self._value("SELECT position FROM checkpoint WHERE name = 'read_models'") or 0)

    def data_version(self) -> int:
        """The log's commit count less this store's own: changes only when another
        connection or process commits."""
        commits = int(self._value("SELECT commits FROM log_head WHERE name = 'log'") or 0)
        return commits - self._mine

    # -- appending --------------------------------------------------------------------

    def commit(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        self.write(events, writes, checkpoint)
        self.finish()

    def write(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        self._write(events, writes, checkpoint, clear=False)

    def finish(self) -> None:
        """COMMIT what `write` wrote (RELEASE it inside a held transaction): durable when
        this returns, or undone and `StoreUnavailable`."""
        if not self._writing:
            raise StoreUnavailable("no write to finish")
        self._writing = False
        try:
            self.conn.execute("RELEASE SAVEPOINT batch" if self._held else "COMMIT")
        except psycopg.Error as exc:
            self._undo()
            raise StoreUnavailable(str(exc)) from exc
        except BaseException:
            self._undo()
            raise
        if self._held:
            self._held_mine += 1
        else:
            self._mine += 1

    def hold(self) -> None:
        """One transaction that every commit joins, as a savepoint, until `release`."""
        if self._held:
            raise RuntimeError("the store already holds a transaction")
        try:
            self.conn.execute("BEGIN")
            # A held transaction (a backtest) waits on its driver between commands for
            # as long as that takes: no hung-writer timeout inside it.
            self.conn.execute("SET LOCAL idle_in_transaction_session_timeout = 0")
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc
        self._held = True
        self._held_mine = 0

    def release(self) -> None:
        if not self._held:
            return
        self._held = False
        try:
            self.conn.execute("COMMIT")
        except psycopg.Error as exc:
            self._rollback()
            raise StoreUnavailable(str(exc)) from exc
        self._mine += self._held_mine
        self._held_mine = 0

    def replace_read_models(self, writes: TableWrites, checkpoint: int) -> None:
        self._write([], writes, checkpoint, clear=True)
        self.finish()

    def _write(
        self, events: Sequence[Event], writes: TableWrites, checkpoint: int, *, clear: bool
    ) -> None:
        conn = self.conn
        if self._writing:
            raise StoreUnavailable("a write is already waiting for its finish")
        try:
            conn.execute("SAVEPOINT batch" if self._held else "BEGIN")
            try:
                self._append(events, clear, checkpoint)
                for table, (upserts, deletes) in writes.items():
                    self._write_table(table, upserts, deletes)
                conn.execute(
                    "UPDATE checkpoint SET position = %s WHERE name = 'read_models'",
                    (checkpoint,),
                )
            except BaseException:
                self._undo()
                raise
        except psycopg.errors.IntegrityError as exc:
            raise Concurrency(str(exc)) from exc
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc
        self._writing = True

    def _append(self, events: Sequence[Event], clear: bool, checkpoint: int) -> None:
        conn = self.conn
        fence, epoch = ("", ()) if self._epoch is None else (" AND epoch = %s", (self._epoch,))
        if events:
            moved = conn.execute(
                "UPDATE log_head SET position = %s, commits = commits + 1"
                " WHERE name = 'log' AND position = %s" + fence,  # type: ignore[operator]
                (events[-1].position, events[0].position - 1, *epoch),
            )
        else:
            moved = conn.execute(
                "UPDATE log_head SET commits = commits + 1 WHERE name = 'log'" + fence,  # type: ignore[operator]
                epoch,
            )
        if moved.rowcount != 1:
            self._check_epoch()
            first = events[0].position if events else "(none)"
            raise Concurrency(
                f"position {first} does not follow the log's end"
                f" ({self._value('SELECT position FROM log_head')})"
            )
        if clear:
            last = int(self._value("SELECT max(position) FROM events") or 0)
            if last != checkpoint:
                raise Concurrency(f"the log ends at {last}, not {checkpoint}")
            for table in self._columns:
                conn.execute(f"DELETE FROM {table}")  # type: ignore[call-overload]
        if events:
            self._copy_events(_event_rows(events))

    def _check_epoch(self) -> None:
        """`Fenced` if another writer took the lease since this one did."""
        now = self._value("SELECT epoch FROM log_head WHERE name = 'log'")
        if self._epoch is not None and now != self._epoch:
            self.fenced.set()
            raise Fenced(
                f"another sandex writer took over database {display(self.path)}"
                f" (epoch {now}, this writer's {self._epoch}); this one writes no more"
            )

    def _copy_events(self, rows: Iterable[tuple[Any, ...]]) -> None:
        with (
            self.conn.cursor() as cursor,
            cursor.copy(f"COPY events ({_COLUMNS}) FROM STDIN") as copy,  # type: ignore[arg-type]
        ):
            for row in rows:
                copy.write_row(row)

    def _undo(self) -> None:
        """Roll back the open write: in a held transaction, that batch only."""
        self._writing = False
        try:
            if self._held:
                self.conn.execute("ROLLBACK TO SAVEPOINT batch")
                self.conn.execute("RELEASE SAVEPOINT batch")
            else:
                self._rollback()
        except psycopg.Error:
            log.warning("rollback failed; the connection is reset")
            self._rollback()

    def _rollback(self) -> None:
        if self.conn.closed:
            return
        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with suppress(psycopg.Error):
                self.conn.execute("ROLLBACK")

    def _write_table(
        self, table: str, upserts: list[dict[str, Any]], deletes: list[dict[str, Any]]
    ) -> None:
        if table not in self._columns:
            raise StoreUnavailable(f"no such table: {table}")
        with self.conn.cursor() as cursor:
            if deletes:
                pk = self._pks[table]
                where = " AND ".join(f"{c} = %s" for c in pk)
                cursor.executemany(
                    f"DELETE FROM {table} WHERE {where}",  # type: ignore[arg-type]
                    [tuple(d[c] for c in pk) for d in deletes],
                )
            if upserts:
                cols = self._columns[table]
                cursor.executemany(
                    self._upsert_sql(table),  # type: ignore[arg-type]
                    [tuple(r.get(c) for c in cols) for r in upserts],
                )

    def _upsert_sql(self, table: str) -> str:
        """An update in place that leaves the key and the `fixed` columns alone, as on
        SQLite (the rows are the same; PostgreSQL rewrites index entries either way)."""
        sql = self._upserts.get(table)
        if sql is None:
            cols = self._columns[table]
            pk = self._pks[table]
            kept = set(pk) | self._fixed.get(table, frozenset())
            changes = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in kept)
            sql = (
                f"INSERT INTO {table} ({', '.join(cols)})"
                f" VALUES ({', '.join('%s' for _ in cols)})"
                f" ON CONFLICT ({', '.join(pk)}) DO "
                + (f"UPDATE SET {changes}" if changes else "NOTHING")
            )
            self._upserts[table] = sql
        return sql

    # -- reading ----------------------------------------------------------------------

    def _chunks(
        self,
        columns: str,
        after: int,
        until: int | None,
        size: int,
        stream: str | None = None,
        limit: int | None = None,
    ) -> Iterator[list[tuple[Any, ...]]]:
        """`columns` (position first) of the events after `after`, in position order,
        a query of `size` rows at a time (keyset paging: no cursor stays open between
        chunks, so a long replay holds no server resource)."""
        left = limit
        while left is None or left > 0:
            where = ["position > %s"]
            params: list[Any] = [after]
            if stream is not None:
                where.append("stream = %s")
                params.append(stream)
            if until is not None:
                where.append("position <= %s")
                params.append(until)
            take = size if left is None else min(size, left)
            sql = (
                f"SELECT {columns} FROM events WHERE {' AND '.join(where)}"
                " ORDER BY position LIMIT %s"
            )
            try:
                rows = self.conn.execute(sql, [*params, take]).fetchall()  # type: ignore[call-overload]
            except psycopg.Error as exc:
                raise StoreUnavailable(str(exc)) from exc
            if not rows:
                return
            yield rows
            if len(rows) < take:
                return
            after = rows[-1][0]
            if left is not None:
                left -= len(rows)

    def read(
        self,
        after: int = 0,
        stream: str | None = None,
        limit: int | None = None,
        until: int | None = None,
        with_meta: bool = True,
    ) -> Iterator[Event]:
        meta_column = "meta" if with_meta else "'{}'"
        loads = orjson.loads
        current = SCHEMA_VERSIONS
        for rows in self._chunks(
            f"position, stream, version, type, schema, data, {meta_column}, occurred_at",
            after,
            until,
            2000,
            stream,
            limit,
        ):
            for pos, st, ver, typ, schema, data, meta, at in rows:
                event = Event(
                    typ, st, loads(data), pos, ver, at, loads(meta) if with_meta else {}, schema
                )
                yield upcast(event) if schema != current.get(typ, 1) else event

    def scan(
        self, after: int = 0, until: int | None = None, first: Sequence[str] = ()
    ) -> Iterator[list[tuple[Any, ...]]]:
        """As SQLite's scan: `(position, stream, data, rest)` in chunks of 512."""
        brief = {t: k for k, t in enumerate(first)}
        dumps = orjson.dumps
        columns = "position, stream, data, version, type, schema, occurred_at"
        for rows in self._chunks(columns, after, until, 4096):
            for start in range(0, len(rows), 512):
                chunk: list[tuple[Any, ...]] = []
                for pos, st, data, ver, typ, schema, at in rows[start : start + 512]:
                    rest: Any = brief.get(typ) if ver == 1 and schema == 1 else None
                    if rest is None:
                        rest = dumps([ver, typ, schema, at]).decode()
                    chunk.append((pos, st, data, rest))
                yield chunk

    def occurred_at(self, position: int) -> str | None:
        at = self._value("SELECT occurred_at FROM events WHERE position = %s", (position,))
        return None if at is None else str(at)

    def position_at(self, time: str) -> int:
        return int(
            self._value(
                "SELECT coalesce(max(position), 0) FROM events WHERE occurred_at <= %s", (time,)
            )
        )

    def stored_rows(self) -> Iterator[tuple[Any, ...]]:
        for rows in self._chunks(_COLUMNS, 0, None, 5000):
            yield from rows

    def event_check(self, position: int) -> str | None:
        """The same fingerprint as SQLite's: sha256 of the stored columns but position
        and meta."""
        try:
            row = self.conn.execute(
                "SELECT stream, version, type, schema, data, occurred_at FROM events"
                " WHERE position = %s",
                (position,),
            ).fetchone()
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc
        if row is None:
            return None
        return hashlib.sha256(orjson.dumps(tuple(row))).hexdigest()

    def read_model_rows(self, table: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        try:
            rows = self.conn.execute(  # type: ignore[call-overload]
                f"SELECT {', '.join(columns)} FROM {table}"
            ).fetchall()
        except psycopg.errors.UndefinedTable as exc:
            raise NoSuchTable(str(exc)) from exc
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc
        for row in rows:
            yield tuple(row)

    @contextmanager
    def consistent(self) -> Iterator[None]:
        """One REPEATABLE READ transaction: every read inside sees one snapshot."""
        conn = self.conn
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield
        finally:
            self._rollback()

    def read_only(self) -> PostgresEventStore:
        return PostgresEventStore.reader(self.path)

    def read_connection(self) -> PostgresReads:
        return PostgresReads(self.path)

    def own_reader(self) -> ConnectionReads:
        return ConnectionReads(self.conn)

    # -- meta values ------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        value = self._value("SELECT value FROM sandex_meta WHERE key = %s", (key,))
        return None if value is None else str(value)

    def all_meta(self) -> dict[str, str]:
        try:
            rows = self.conn.execute("SELECT key, value FROM sandex_meta ORDER BY key").fetchall()
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc
        return {str(k): str(v) for k, v in rows}

    def set_meta(self, key: str, value: str) -> None:
        self.set_metas({key: value})

    def set_metas(self, values: Mapping[str, str]) -> None:
        try:
            with self.conn.transaction(), self.conn.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO sandex_meta (key, value) VALUES (%s, %s)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    list(values.items()),
                )
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc

    def erase_meta(self, key: str) -> None:
        """Delete a value; VACUUM the table so its dead row's space is reclaimed (best
        effort: PostgreSQL promises no overwrite of the bytes, docs/operations.md)."""
        try:
            self.conn.execute("DELETE FROM sandex_meta WHERE key = %s", (key,))
            if self.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                self.conn.execute("VACUUM sandex_meta")
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc

    # -- the start-up cache's blobs ---------------------------------------------------

    def state_snapshots(self, fmt: str | None) -> list[tuple[int, str]]:
        try:
            rows = self.conn.execute(
                "SELECT position, event_check FROM state_snapshots"
                " WHERE format = coalesce(%s, format) ORDER BY position DESC",
                (fmt,),
            ).fetchall()
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc
        return [(int(p), str(c)) for p, c in rows]

    def state_snapshot_data(self, position: int) -> bytes | None:
        data = self._value("SELECT data FROM state_snapshots WHERE position = %s", (position,))
        return None if data is None else bytes(data)

    def save_state_snapshot(
        self, position: int, fmt: str, event_check: str, data: bytes, keep: int = 2
    ) -> None:
        try:
            with self.conn.transaction():
                self.conn.execute(
                    "INSERT INTO state_snapshots (position, format, event_check, data)"
                    " VALUES (%s, %s, %s, %s) ON CONFLICT (position) DO UPDATE SET"
                    " format = excluded.format, event_check = excluded.event_check,"
                    " data = excluded.data",
                    (position, fmt, event_check, data),
                )
                self.conn.execute(
                    "DELETE FROM state_snapshots WHERE position NOT IN"
                    " (SELECT position FROM state_snapshots ORDER BY position DESC LIMIT %s)",
                    (keep,),
                )
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc

    # -- whole-log copies (engine/tools/copy.py) -------------------------------------

    def load_events(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Append stored rows (as `stored_rows` gives them) to an empty log, as they are,
        in one transaction, and move the log's head to the last one."""
        try:
            with self.conn.transaction():
                self._copy_events(rows)
                self.conn.execute(
                    "UPDATE log_head SET position = (SELECT coalesce(max(position), 0)"
                    " FROM events), commits = commits + 1 WHERE name = 'log'"
                )
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc
        self._mine += 1

    def load_rows(self, table: str, rows: Iterable[Sequence[Any]]) -> None:
        """Insert rows of a read-model table, in its columns' order, as they are (COPY)."""
        columns = ", ".join(self._columns[table])
        try:
            with (
                self.conn.transaction(),
                self.conn.cursor() as cursor,
                cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy,  # type: ignore[arg-type]
            ):
                for row in rows:
                    copy.write_row(row)
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc

    def set_checkpoint(self, position: int) -> None:
        """Move the read models' checkpoint (a copy that filled them by `load_rows`)."""
        self.conn.execute(
            "UPDATE checkpoint SET position = %s WHERE name = 'read_models'", (position,)
        )

    def appended_rows(
        self, table: str, columns: Sequence[str], position: str, upto: int
    ) -> Iterator[tuple[Any, ...]]:
        """The rows of an append-only table made by the events up to `upto` (`position`:
        the SQL of the row's log position), as tuples of `columns`."""
        names = ", ".join(columns)
        try:
            rows = self.conn.execute(  # type: ignore[call-overload]
                f"SELECT {names} FROM {table} WHERE {position} <= %s", (upto,)
            ).fetchall()
        except psycopg.Error as exc:
            raise StoreUnavailable(str(exc)) from exc
        yield from rows

    # -- fork: a new, independent store in another schema of this database -----------

    def fork(
        self,
        target: str,
        up_to: int | None = None,
        *,
        lease: bool = False,
        lease_seconds: float = 5.0,
    ) -> PostgresEventStore:
        """A new store in the schema that `target` names (this database's URL with
        `?schema=NAME`; the schema must not exist), independent of this one, opened as
        a store: at the head (`up_to` None, or at or past the last position) every table
        copied; before it, the log up to `up_to`, the meta values, the state snapshots
        at or before it and empty read models at checkpoint 0, which an engine opened on
        it rebuilds from the log. `up_to` should end a decision.

        One REPEATABLE READ transaction on a connection of its own reads the source and
        writes the fork: one committed state of the source, however its writer goes on
        meanwhile, and a fork made whole or not at all. The key file is not the store's
        business: whoever forks (the world manager) gives the fork a key file of its own."""
        where = locate(target)
        schema = where.schema
        if schema is None:
            raise ValueError(f"{display(target)}: a PostgreSQL fork needs ?schema=NAME")
        if self._spare is not None:
            # the spare under way, when there is one, is sooner ready than a schema made
            # beside it (which would share the disk's syncs with it)
            self._spare.join()
        conn = _connect(self.path, read_only=False)
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                found = conn.execute(
                    "SELECT current_schema(), (SELECT coalesce(max(position), 0) FROM events),"
                    " (SELECT position FROM checkpoint WHERE name = 'read_models')"
                ).fetchone()
                assert found is not None
                source, head, checkpoint = str(found[0]), int(found[1]), int(found[2] or 0)
                at_head = up_to is None or up_to >= head
                cut = head if at_head or up_to is None else up_to
                if not postgres_schema.claim_spare(conn, self._tables, schema):
                    conn.execute(f"CREATE SCHEMA {schema}")  # type: ignore[arg-type]
                    conn.execute(f"SET LOCAL search_path = {schema}")  # type: ignore[arg-type]
                    postgres_schema.create(conn, self._tables, fresh=True)
                conn.execute(f"SET LOCAL search_path = {schema}")  # type: ignore[arg-type]
                # The copies and the heads in one round trip (`cut` and `checkpoint` are
                # integers read above, `source` a schema's name).
                src = f'"{source}"'
                copies = [
                    f"INSERT INTO events ({_COLUMNS}) SELECT {_COLUMNS} FROM {src}.events"
                    f" WHERE position <= {cut}",
                    f"INSERT INTO sandex_meta (key, value) SELECT key, value FROM {src}.sandex_meta",
                    "INSERT INTO state_snapshots (position, format, event_check, data)"
                    " SELECT position, format, event_check, data"
                    f" FROM {src}.state_snapshots WHERE position <= {cut}",
                ]
                if at_head:
                    for table, columns in self._columns.items():
                        names = ", ".join(columns)
                        copies.append(
                            f"INSERT INTO {table} ({names}) SELECT {names} FROM {src}.{table}"
                        )
                copies.append(
                    f"UPDATE checkpoint SET position = {checkpoint if at_head else 0}"
                    " WHERE name = 'read_models'"
                )
                copies.append(
                    f"UPDATE log_head SET position = {cut}, commits = 0, epoch = 0"
                    " WHERE name = 'log'"
                )
                conn.execute(";\n".join(copies))  # type: ignore[call-overload]
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot fork into {display(target)}: {exc}") from exc
        finally:
            conn.close()
        self._make_spare()
        return PostgresEventStore(
            where.text,
            durability=self._durability,
            tables=self._tables,
            schema_made=True,
            lease=lease,
            lease_seconds=lease_seconds,
        )

    # -- lifecycle --------------------------------------------------------------------

    def start_checkpoints(self) -> None:
        """PostgreSQL checkpoints its own WAL."""

    def _make_spare(self) -> None:
        """Make the next fork's schema ahead, in a thread of its own that ends when it is
        made (`postgres_schema.make_spare`): on PostgreSQL each new index is synced to
        disk as it is built, most of a fork's time, which a fork that finds a spare
        skips. One at a time; `close` waits for it."""
        if self._spare is not None and self._spare.is_alive():
            return
        self._spare = threading.Thread(
            target=postgres_schema.make_spare,
            args=(lambda: _connect(self.path, read_only=False), self._tables, self._spares),
            name="sandex-spare-schema",
            daemon=True,
        )
        self._spare.start()

    def close(self) -> None:
        if self._spare is not None:
            self._spare.join()
            self._spare = None
        if self._spares and not self.conn.closed:
            self._rollback()
            postgres_schema.drop_spares(self.conn, self._spares)
            self._spares.clear()
        if not self.conn.closed:
            self._rollback()
            self.conn.close()
        self._release_lease()

    def _release_lease(self) -> None:
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release()
