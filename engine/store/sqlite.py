"""The embedded event store: SQLite in WAL mode.

sqlite-utils creates and migrates the schema, and is imported only when a table or an
index is missing, without pandas and numpy (`_sqlite_utils`). Everything else uses the
`sqlite3` connection directly: the hot append path with multi-row
`INSERT` statements (`_insert_rows`), inside one transaction per group commit.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import operator
import os
import sqlite3
import sys
import threading
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import orjson

from sandex.engine.kernel.credentials import EVENT_FIELDS, redact
from sandex.engine.kernel.events import SCHEMA_VERSIONS, Event, upcast
from sandex.engine.kernel.logs import get_logger
from sandex.engine.store import private_files
from sandex.engine.store.checkpointer import Checkpointer
from sandex.engine.store.lease import WriterLease
from sandex.engine.store.locations import locate
from sandex.engine.store.port import Concurrency, NoSuchTable, StoreUnavailable, TableWrites
from sandex.engine.store.read_model_indexes import with_indexes

_DURABILITY = {"FULL": "FULL", "NORMAL": "NORMAL", "OFF": "OFF"}

# Faults of the file beneath the writer's connection, which a fresh connection may not
# share once they clear (primary result codes; an error carries an extended one).
_FILE_FAULTS = frozenset({sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN})

log = get_logger("sandex.store")

_EVENT_COLUMNS = {
    "position": int,
    "stream": str,
    "version": int,
    "type": str,
    "schema": int,
    "data": str,
    "meta": str,
    "occurred_at": str,
}


def _quote(text: str) -> str:
    """`text` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


# The start-up scan reads the log through a memory map (SQLite caps it at 2 GiB): a page
# read is then a page fault on the file's cached pages, not a read() system call and a
# copy into the page cache, which was a third of the scan's time.
_SCAN_MMAP = 1 << 40

# With a background checkpointer, the writer checkpoints itself only past this many log
# pages (128 MB): about every two seconds of orders at full speed.
_BACKSTOP_PAGES = 32_000


_COLUMNS = ", ".join(_EVENT_COLUMNS)
_EVENTS_INSERT = f"INSERT INTO events ({_COLUMNS}) VALUES"

# The row counts of the statements a write is cut into, largest first: a group of 37
# rows is 32 + 4 + 1. Few counts keep few statements per table in the connection's
# cache; 64 rows of the widest table stay far below SQLite's 32,766 parameters.
_STATEMENT_ROWS = (64, 32, 16, 8, 4, 2, 1)


def _insert_rows(
    conn: sqlite3.Connection,
    statements: dict[tuple[str, int], str],
    head: str,
    width: int,
    values: list[Any],
    tail: str = "",
) -> None:
    """Insert rows given as one flat list (`width` values a row) with one statement per
    up to 64 rows: `head` is `INSERT INTO t (cols) VALUES`, `tail` what follows the
    values (an upsert's clause). One statement of many rows binds and steps once where
    `executemany` crosses from Python to SQLite per row (measured: 3.0 against 4.1 us a
    feed row); rows go in their order, so an upsert of a key twice ends as the last."""
    row = f"({', '.join('?' * width)})"
    n = len(values) // width
    at = 0
    for k in _STATEMENT_ROWS:
        while n - at // width >= k:
            sql = statements.get((head, k))
            if sql is None:
                sql = statements[(head, k)] = f"{head} {', '.join([row] * k)}{tail}"
            end = at + k * width
            conn.execute(sql, values[at:end])
            at = end


def _flat(rows: Iterable[Mapping[str, Any]], cols: Sequence[str]) -> list[Any]:
    """The values of `rows` in column order, one flat list; a column a row lacks is None."""
    if len(cols) == 1:
        return [r.get(cols[0]) for r in rows]
    get = operator.itemgetter(*cols)
    values: list[Any] = []
    try:
        for r in rows:
            values += get(r)
    except KeyError:
        return [r.get(c) for r in rows for c in cols]
    return values


def connect_read_only(path: str | Path) -> sqlite3.Connection:
    """A read-only connection to the database at `path`, whatever characters the path
    holds: in a URI `?`, `#` and `%` would start a query, a fragment or an escape."""
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
    return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)


def _event_rows(events: Sequence[Event]) -> Iterator[tuple[Any, ...]]:
    """Rows for the events table, made as `executemany` takes them: each row lives for
    one insert, so a group commit's rows never pile up for the cyclic collector. The
    events of one decision share one meta dict: it is encoded once for all of them."""
    dumps = orjson.dumps
    meta_of: Any = None
    meta_text = ""
    for e in events:
        meta = e.meta
        if meta is not meta_of:
            meta_of = meta
            meta_text = dumps(meta).decode()
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


class LogFold:
    """`sandex.engine.tools.time_travel.log_hash` of a log, folded row by row as the rows are
    written: a writer that wrote the whole log knows its hash without reading it back."""

    __slots__ = ("digest",)

    def __init__(self) -> None:
        self.digest = hashlib.sha256()

    def add(self, rows: list[tuple[Any, ...]]) -> bytes:
        """Fold `rows` in, in order; answers their JSON lines, credential fields as
        stored (not masked), each line ended by a newline."""
        lines = [orjson.dumps(row) for row in rows]
        hashed = lines
        for k, row in enumerate(rows):
            if row[3] in EVENT_FIELDS:
                if hashed is lines:
                    hashed = list(lines)
                data = orjson.dumps(redact(row[3], orjson.loads(row[5]))).decode()
                hashed[k] = orjson.dumps((*row[:5], data, *row[6:]))
        text = b"\n".join(lines) + b"\n"
        self.digest.update(text if hashed is lines else b"\n".join(hashed) + b"\n")
        return text

    def text(self) -> str:
        return "sha256:" + self.digest.hexdigest()


class SqliteEventStore:
    """One writer connection; readers open their own read-only connections."""

    # The log's hash as written (`fold_log`), and its value before the open write.
    _fold: LogFold | None = None
    _fold_before: Any = None
    # `fold_log(aside=True)`: the events' rows as JSON lines in this file, moved into the
    # events table when the log is read; how far they were moved, and the file's size
    # before the open write.
    _aside: Any = None
    _aside_moved = 0
    _aside_before = -1

    def __init__(
        self,
        path: str | Path,
        *,
        durability: str = "FULL",
        tables: dict[str, dict[str, Any]] | None = None,
        lease: bool = False,
    ) -> None:
        """`lease`: hold the database's writer lease (engine/store/lease.py) until `close`,
        or raise `LeaseHeld`: for a writer that runs, or a tool that rewrites the read
        models; taken before the schema is touched."""
        tables = with_indexes(tables or {})
        self.path = str(path)
        if durability not in _DURABILITY:
            raise ValueError(f"durability must be one of {sorted(_DURABILITY)}")
        self._durability = durability
        self._autocheckpoint = 4000
        self._faulted = False  # the last write failed by a fault of the file
        self._version_base = 0  # `data_version` across `_reopen`
        self._lease = WriterLease.take(self.path) if lease else None
        # A file this call makes starts as the blank database of these tables (`_blank`).
        # `private_files.prepare_database` without its second attempt to create the file
        # (an open of its own, which fails, on every open of an existing database).
        fresh = not in_memory(self.path) and private_files.create(self.path)
        made = []
        if not in_memory(self.path):
            private_files.tighten_database(self.path)
            made = private_files.writable_companions(self.path)
        try:
            if fresh:
                _write_blank(self.path, tables, sync=durability == "FULL")
            self.conn = self._open_writer()
            self._create_schema(tables or {})
        except (sqlite3.DatabaseError, OSError) as exc:
            private_files.remove_empty(made)  # none beside a file that is no database
            self._release_lease()
            raise StoreUnavailable(f"cannot open database {self.path}: {exc}") from exc
        # Opened on a file it may not write: the connection is read-only for good, so the
        # first write opens afresh (`_reopen`), as after a write that failed by the file.
        self._faulted = not in_memory(self.path) and not os.access(self.path, os.W_OK)
        self._tables = tables  # what a fork opens with
        self._columns: dict[str, list[str]] = {
            name: list(spec["columns"]) for name, spec in (tables or {}).items()
        }
        self._pks: dict[str, list[str]] = {
            name: list(spec["pk"]) for name, spec in (tables or {}).items()
        }
        self._fixed: dict[str, frozenset[str]] = {
            name: frozenset(spec.get("fixed", ())) for name, spec in (tables or {}).items()
        }
        self._upserts: dict[str, tuple[str, str]] = {}
        self._statements: dict[tuple[str, int], str] = {}
        self._held = False
        self._checkpointer: Checkpointer | None = None

    def _open_writer(self) -> sqlite3.Connection:
        """The writer's connection with its settings: at start-up, and after a fault of
        the file beneath it (`_reopen`)."""
        # room in the statement cache for each table's statements of `_STATEMENT_ROWS`
        conn = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, cached_statements=512
        )
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={_DURABILITY[self._durability]}")
            conn.execute("PRAGMA busy_timeout=5000")
            # 64 MiB of page cache instead of 2: with random ids every batch touched pages
            # all over the id indexes, and re-reading them cost a fifth of a commit (ids
            # now grow with time; the customers' indexes still spread a batch's pages).
            conn.execute("PRAGMA cache_size=-65536")
            # Copy the WAL into the database every 4,000 pages (16 MB) instead of 1,000.
            # A commit rewrites the same index pages as the one before it (the tail of each
            # customer's index and of each id index); a checkpoint copies each
            # page once however many frames it has, and runs inside the writer's COMMIT.
            # Measured at 32 orders a commit: 43 / 20 / 14 us of checkpoint per order at
            # 1,000 / 4,000 / 10,000 pages, for a stall of 17 / 29 / 42 ms each time.
            conn.execute(f"PRAGMA wal_autocheckpoint={self._autocheckpoint}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _note_fault(self, exc: sqlite3.DatabaseError) -> None:
        """Remember a failed write whose fault was the file's (read-only, an I/O error,
        cannot open): the next write opens a fresh connection (`_reopen`)."""
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in _FILE_FAULTS:
            self._faulted = True

    def _reopen(self) -> None:
        """Open the writer's connection afresh, just before a write that follows a fault
        of the file: a connection opened while the file was read-only stays read-only
        once it is writable again, so every write failed until a restart. The fresh one
        sees the file as it is now, and fails as the old one did while the fault lasts.
        `data_version` goes on from the old connection's count: what another process
        committed before the swap still shows, and the swap itself is no change."""
        try:
            seen: int | None = self.data_version()
        except sqlite3.DatabaseError:
            seen = None
        # The `-wal` and `-shm` SQLite made again meanwhile have the database's mode of
        # then (read-only): the owner's to write again before the fresh connection opens.
        private_files.writable_companions(self.path)
        conn = self._open_writer()
        old, self.conn = self.conn, conn
        old.close()
        raw = int(conn.execute("PRAGMA data_version").fetchone()[0])
        # Unknown what the old connection last saw: make the count change, so the engine
        # reloads the log rather than miss another process's commit.
        self._version_base = seen - raw if seen is not None else self._version_base + (1 << 32)
        self._faulted = False
        log.warning("database connection reopened after a fault of its file")

    def _create_schema(self, tables: dict[str, dict[str, Any]]) -> None:
        """All of it in one transaction: a new database is made whole or not at all, and
        one commit instead of one per statement (a fifth of a short backtest's start).
        A database whose schema is already the blank one of `tables` (a new world, a
        world loaded again) is left as it is, without a look at each table's indexes, when
        this process made that blank already: making it takes sqlite-utils, which a command
        that opens a whole database never imports (`_create_tables` finds it whole)."""
        made = _BLANKS.get(repr(tables))
        if not in_memory(self.path) and made is not None and _schema_of(self.conn) == made[0]:
            return
        with self._transaction():
            self._create_tables(tables)

    def _schema_tool(self) -> Any:
        """sqlite-utils on the writer's connection: imported here, when the schema needs
        a table or an index, and never for a database whose schema is whole."""
        return _sqlite_utils().Database(self.conn)

    def _table_names(self) -> set[str]:
        return {
            str(row[0])
            for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }

    def _create_tables(self, tables: dict[str, dict[str, Any]]) -> None:
        existing = self._table_names()
        if not {"events", "sandex_meta", "checkpoint", "state_snapshots"} <= existing:
            db = self._schema_tool()
            if "events" not in existing:
                db.table("events").create(
                    _EVENT_COLUMNS, pk="position", not_null=set(_EVENT_COLUMNS)
                )
                db.table("events").create_index(["stream", "version"], unique=True)
            if "sandex_meta" not in existing:
                db.table("sandex_meta").create({"key": str, "value": str}, pk="key")
            if "checkpoint" not in existing:
                db.table("checkpoint").create({"name": str, "position": int}, pk="name")
                db.table("checkpoint").insert({"name": "read_models", "position": 0})
            if "state_snapshots" not in existing:
                # The writer's state at a position, so that start-up replays only the tail
                # (`startup_cache`); never a source of truth, always droppable.
                db.table("state_snapshots").create(
                    {"position": int, "format": str, "event_check": str, "data": bytes},
                    pk="position",
                    not_null={"format", "event_check", "data"},
                )
        self.create_read_models(tables, existing)

    def create_read_models(
        self, tables: dict[str, dict[str, Any]], existing: set[str] | None = None
    ) -> None:
        """The read-model tables of `tables` that `existing` (else the database) lacks,
        and each table's indexes as its spec names them."""
        existing = self._table_names() if existing is None else existing
        for name, spec in tables.items():
            if name not in existing:
                self._schema_tool().table(name).create(spec["columns"], pk=tuple(spec["pk"]))
            self._migrate_indexes(name, spec.get("indexes", ()))

    def _migrate_indexes(self, table: str, indexes: Sequence[Sequence[str]]) -> None:
        """Give `table` exactly the sandex indexes its spec names: a database written before an
        index was dropped, merged or added opens with the current set (each index costs
        a page write per commit, so one no query needs is not kept)."""
        wanted = {f"idx_{table}_{'_'.join(cols)}": list(cols) for cols in indexes}
        ours = f"idx_{table}_"  # an index somebody else made on the table is left alone
        have = {
            str(row[1])
            for row in self.conn.execute(f"PRAGMA index_list({table})")
            if row[3] == "c" and str(row[1]).startswith(ours)  # by CREATE INDEX, ours
        }
        for name in sorted(have - wanted.keys()):
            self.conn.execute(f"DROP INDEX {name}")
        for name, cols in wanted.items():
            if name not in have:
                self._schema_tool().table(table).create_index(cols, index_name=name)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction around the block, or a savepoint inside an open one (what
        sqlite-utils' `atomic` does, without importing it)."""
        conn = self.conn
        if conn.in_transaction:
            conn.execute("SAVEPOINT block")
            try:
                yield
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK TO block")
                    conn.execute("RELEASE block")
                raise
            conn.execute("RELEASE block")
            return
        conn.execute("BEGIN")
        try:
            yield
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def replace_read_models(self, writes: TableWrites, checkpoint: int) -> None:
        """Empty every read-model table and fill it again, in one transaction, made from
        the log up to `checkpoint`; `Concurrency` if the log ends elsewhere by then (a
        writer without the lease appended meanwhile), and nothing is written."""
        self._write([], writes, checkpoint, clear=True)
        self.finish()

    # -- the port -------------------------------------------------------------------

    def last_position(self) -> int:
        self._move_aside()
        row = self.conn.execute("SELECT max(position) FROM events").fetchone()
        return int(row[0] or 0)

    def stream_version(self, stream: str) -> int:
        self._move_aside()
        row = self.conn.execute(
            "SELECT max(version) FROM events WHERE stream = ?", (stream,)
        ).fetchone()
        return int(row[0] or 0)

    def data_version(self) -> int:
        """Changes whenever another connection commits (a second process wrote the log)."""
        return self._version_base + int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def checkpoint(self) -> int:
        row = self.conn.execute(
            "SELECT position FROM checkpoint WHERE name = 'read_models'"
        ).fetchone()
        return int(row[0]) if row else 0

    def commit(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        self.write(events, writes, checkpoint)
        self.finish()

    def write(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        """The first half of `commit`: everything written, in a transaction left open
        for `finish`. The writer decides its next group while another thread waits in
        `finish` for this one's sync, which holds no Python lock meanwhile."""
        self._write(events, writes, checkpoint, clear=False)

    def finish(self) -> None:
        """Make what `write` wrote durable, or, if that fails, undo all of it. May be
        called from another thread than `write`'s, never while another call runs."""
        conn = self.conn
        try:
            conn.execute("RELEASE batch" if self._held else "COMMIT")
        except sqlite3.DatabaseError as exc:
            self._undo()
            self._note_fault(exc)
            raise StoreUnavailable(str(exc)) from exc
        except BaseException:  # whatever it was, the next write must find no transaction
            self._undo()
            raise
        checkpointer = self._checkpointer
        if checkpointer is not None and checkpointer.idle:
            checkpointer.nudge()  # the first write after a quiet spell: copy it now

    def fold_log(self, aside: bool = False) -> bool:
        """From now on, fold every event written into the log's hash (`log_fold`): only
        for an empty log, whose every row this connection then writes. False if not.

        `aside`: for a log that is likely never read (a backtest's scratch log), each
        write appends the events' rows to a file beside the database, as the JSON lines
        the hash is made of, instead of the events table; the first read of the log
        moves them into the table (a decision that broke is recovered from it). What
        is still aside when the store closes is dropped: for a log dropped unread."""
        if self.last_position() != 0:
            return False
        self._fold = LogFold()
        if aside and not in_memory(self.path):
            self._aside = open(self.path + "-aside", "w+b")  # noqa: SIM115 - closed by `close`
        return True

    def _move_aside(self) -> None:
        """Move the rows written aside into the events table (in the open transaction):
        every read of the log sees the whole log."""
        aside = self._aside
        if aside is None:
            return
        aside.seek(self._aside_moved)
        lines = aside.read()
        aside.seek(0, 2)
        if not lines:
            return
        self._aside_moved += len(lines)
        self.conn.executemany(
            f"INSERT INTO events ({_COLUMNS}) VALUES ({', '.join('?' * 8)})",
            (tuple(orjson.loads(line)) for line in lines.splitlines()),
        )

    def log_fold(self) -> str | None:
        """`log_hash` of the log as written since `fold_log` (None without it)."""
        return None if self._fold is None else self._fold.text()

    def hold(self) -> None:
        """Open one transaction that every commit joins (as a savepoint) until `release`:
        for a single writer whose work is acknowledged once, at its end (a backtest). Its
        own connection reads what it wrote; a crash before `release` leaves nothing of it."""
        if self._held:
            raise RuntimeError("the store already holds a transaction")
        try:
            # A savepoint keeps the pages it changes in a journal of its own: in memory,
            # not in a temporary file (a third of each savepoint's cost).
            self.conn.execute("PRAGMA temp_store=MEMORY")
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise StoreUnavailable(str(exc)) from exc
        self._held = True

    def release(self) -> None:
        """Commit the held transaction: everything since `hold` becomes durable at once."""
        if not self._held:
            return
        self._held = False
        try:
            self.conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise StoreUnavailable(str(exc)) from exc
        finally:
            self.conn.execute("PRAGMA temp_store=DEFAULT")

    def _write(
        self, events: Sequence[Event], writes: TableWrites, checkpoint: int, *, clear: bool
    ) -> None:
        try:
            if self._faulted and not self._held:  # a held transaction lives on its connection
                self._reopen()
            conn = self.conn
            self._fold_before = None
            self._aside_before = -1
            conn.execute("SAVEPOINT batch" if self._held else "BEGIN IMMEDIATE")
            try:
                if clear:
                    last = conn.execute("SELECT max(position) FROM events").fetchone()[0]
                    if (last or 0) != checkpoint:
                        raise Concurrency(f"the log ends at {last}, not {checkpoint}")
                    for table in self._columns:
                        conn.execute(f"DELETE FROM {table}")
                if events:
                    rows: Iterable[tuple[Any, ...]] = _event_rows(events)
                    fold = self._fold
                    text = b""
                    if fold is not None:
                        self._fold_before = fold.digest.copy()  # `_undo` puts it back
                        rows = list(rows)
                        text = fold.add(rows)
                    if self._aside is not None:
                        self._aside_before = self._aside.tell()
                        self._aside.write(text)
                    else:
                        values: list[Any] = []
                        for r in rows:
                            values += r
                        _insert_rows(conn, self._statements, _EVENTS_INSERT, 8, values)
                for table, (upserts, deletes) in writes.items():
                    self._write_table(table, upserts, deletes)
                conn.execute(
                    "UPDATE checkpoint SET position = ? WHERE name = 'read_models'", (checkpoint,)
                )
            except BaseException:
                self._undo()
                raise
        except sqlite3.IntegrityError as exc:
            raise Concurrency(str(exc)) from exc
        except sqlite3.DatabaseError as exc:
            self._note_fault(exc)
            raise StoreUnavailable(str(exc)) from exc

    def _undo(self) -> None:
        """Roll back what the open write holds: in a held transaction, that batch only
        (the batches before it stay whole)."""
        conn = self.conn
        if self._fold is not None and self._fold_before is not None:
            self._fold.digest = self._fold_before
            self._fold_before = None
        if self._aside is not None and self._aside_before >= 0:
            self._aside.truncate(self._aside_before)
            self._aside.seek(self._aside_before)
            self._aside_before = -1
        if self._held:
            conn.execute("ROLLBACK TO batch")
            conn.execute("RELEASE batch")
        elif conn.in_transaction:
            conn.execute("ROLLBACK")

    def _write_table(
        self, table: str, upserts: list[dict[str, Any]], deletes: list[dict[str, Any]]
    ) -> None:
        if deletes:
            pk = self._pks[table]
            where = " AND ".join(f"{c} = ?" for c in pk)
            self.conn.executemany(
                f"DELETE FROM {table} WHERE {where}", [tuple(d[c] for c in pk) for d in deletes]
            )
        if upserts:
            cols = self._columns[table]
            head, tail = self._upsert_sql(table)
            _insert_rows(self.conn, self._statements, head, len(cols), _flat(upserts, cols), tail)

    def _upsert_sql(self, table: str) -> tuple[str, str]:
        """An upsert that updates a row in place: `INSERT OR REPLACE` deletes and inserts
        again, rewriting every index entry of the row even when no indexed column
        changed (an order's row changes at each fill, its customer and seq never).

        The update leaves out the table's `fixed` columns: SQLite rewrites the entry of
        every index that has a column named in the SET list, equal value or not, and an
        old order's entry sits on its own page of each index."""
        sql = self._upserts.get(table)
        if sql is None:
            cols = self._columns[table]
            kept = set(self._pks[table]) | self._fixed.get(table, frozenset())
            pk = self._pks[table]
            changes = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in kept)
            sql = self._upserts[table] = (
                f"INSERT INTO {table} ({', '.join(cols)}) VALUES",
                f" ON CONFLICT ({', '.join(pk)}) DO "
                + (f"UPDATE SET {changes}" if changes else "NOTHING"),
            )
        return sql

    def read(
        self,
        after: int = 0,
        stream: str | None = None,
        limit: int | None = None,
        until: int | None = None,
        with_meta: bool = True,
    ) -> Iterator[Event]:
        """Events after `after` in position order; replay asks `with_meta=False` (faster)."""
        meta_column = "meta" if with_meta else "'{}'"
        chunks = self._chunks(
            f"position, stream, version, type, schema, data, {meta_column}, occurred_at",
            after,
            until,
            2000,
            stream,
            limit,
        )
        loads = orjson.loads
        current = SCHEMA_VERSIONS
        for rows in chunks:
            for pos, st, ver, typ, schema, data, meta, at in rows:
                event = Event(
                    typ, st, loads(data), pos, ver, at, loads(meta) if with_meta else {}, schema
                )
                yield upcast(event) if schema != current.get(typ, 1) else event

    def scan(
        self, after: int = 0, until: int | None = None, first: Sequence[str] = ()
    ) -> Iterator[list[tuple[Any, ...]]]:
        """The log after `after` (up to `until`) as raw rows in chunks, data still JSON
        text: `(position, stream, data, rest)`. The start-up replay decodes only what it
        applies and builds no `Event` where none is needed. `rest` is the index in
        `first` of the event's type when the event is its stream's first (version 1) at
        schema 1: the creations that replayers take, which need nothing more; for any
        other event it is the JSON text of `[version, type, schema, occurred_at]`. Four
        columns, not seven: making each column's Python object was a third of the scan."""
        conn = self.conn
        # An in-memory database has no file to map: SQLite answers no row at all.
        row = conn.execute("PRAGMA mmap_size").fetchone()
        mapped = None if row is None else int(row[0])
        if mapped is not None:
            conn.execute(f"PRAGMA mmap_size={_SCAN_MMAP}")
        whens = "".join(f" WHEN {_quote(t)} THEN {k}" for k, t in enumerate(first))
        brief = f"CASE type{whens} END" if first else "NULL"
        rest = (
            f"IFNULL(IIF(version = 1 AND schema = 1, {brief}, NULL),"
            " json_array(version, type, schema, occurred_at))"
        )
        try:  # 512 rows a chunk: one that stays in the CPU's cache
            yield from self._chunks(f"position, stream, data, {rest}", after, until, 512)
        finally:
            if mapped is not None:
                conn.execute(f"PRAGMA mmap_size={mapped}")

    def occurred_at(self, position: int) -> str | None:
        """The time of the event at `position` (None when there is none)."""
        self._move_aside()
        row = self.conn.execute(
            "SELECT occurred_at FROM events WHERE position = ?", (position,)
        ).fetchone()
        return None if row is None else str(row[0])

    def _chunks(
        self,
        columns: str,
        after: int,
        until: int | None,
        size: int,
        stream: str | None = None,
        limit: int | None = None,
    ) -> Iterator[list[tuple[Any, ...]]]:
        """`columns` of the events after `after` (up to `until`, of `stream`, at most
        `limit`) in position order, `size` rows at a time."""
        self._move_aside()
        where = ["position > ?"]
        params: list[Any] = [after]
        if stream is not None:
            where.append("stream = ?")
            params.append(stream)
        if until is not None:
            where.append("position <= ?")
            params.append(until)
        sql = f"SELECT {columns} FROM events WHERE {' AND '.join(where)} ORDER BY position"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        cursor = self.conn.cursor()
        try:
            cursor.arraysize = size
            cursor.execute(sql, params)
            while rows := cursor.fetchmany():
                yield rows
        finally:
            cursor.close()

    # -- state snapshots (`startup_cache`) ---------------------------------

    def event_check(self, position: int) -> str | None:
        """A fingerprint of the event at `position`: a snapshot taken there applies only
        to a log that still holds that very event."""
        self._move_aside()
        row = self.conn.execute(
            "SELECT stream, version, type, schema, data, occurred_at FROM events"
            " WHERE position = ?",
            (position,),
        ).fetchone()
        if row is None:
            return None
        return hashlib.sha256(orjson.dumps(row)).hexdigest()

    def state_snapshots(self, fmt: str | None) -> list[tuple[int, str]]:
        """(position, event check) of the snapshots written in format `fmt` (None: in any
        format), newest first."""
        return [
            (int(p), str(c))
            for p, c in self.conn.execute(
                "SELECT position, event_check FROM state_snapshots"
                " WHERE format = coalesce(?, format) ORDER BY position DESC",
                (fmt,),
            )
        ]

    def state_snapshot_data(self, position: int) -> bytes | None:
        row = self.conn.execute(
            "SELECT data FROM state_snapshots WHERE position = ?", (position,)
        ).fetchone()
        return None if row is None else bytes(row[0])

    def save_state_snapshot(
        self, position: int, fmt: str, event_check: str, data: bytes, keep: int = 2
    ) -> None:
        """Write a snapshot and drop all but the newest `keep`, in one transaction."""
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT OR REPLACE INTO state_snapshots (position, format, event_check, data)"
                    " VALUES (?, ?, ?, ?)",
                    (position, fmt, event_check, data),
                )
                conn.execute(
                    "DELETE FROM state_snapshots WHERE position NOT IN"
                    " (SELECT position FROM state_snapshots ORDER BY position DESC LIMIT ?)",
                    (keep,),
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            raise StoreUnavailable(str(exc)) from exc

    @classmethod
    def reader(cls, path: str | Path) -> SqliteEventStore:
        """A read-only store on an existing database (no schema work), for a thread or a
        process that only reads the log. Not of an in-memory database: a second
        connection to `:memory:` opens another database, empty, not this one."""
        if in_memory(str(path)):
            raise StoreUnavailable("an in-memory database has no second connection")
        store = cls.__new__(cls)
        store.path = str(path)
        store.conn = connect_read_only(path)
        store.conn.execute("PRAGMA busy_timeout=5000")
        store._tables = {}
        store._columns = {}
        store._pks = {}
        store._fixed = {}
        store._upserts = {}
        store._statements = {}
        store._held = False
        store._checkpointer = None
        store._lease = None
        store._durability = "FULL"
        store._autocheckpoint = 4000
        store._faulted = False
        store._version_base = 0
        return store

    def read_only(self) -> SqliteEventStore:
        """A read-only store on this database, on a connection of its own."""
        if in_memory(self.path):
            raise StoreUnavailable("an in-memory database has no second connection")
        return SqliteEventStore.reader(self.path)

    def read_connection(self) -> sqlite3.Connection:
        """A read-only connection for the read side's SQL (engine/read)."""
        if in_memory(self.path):
            raise StoreUnavailable("an in-memory database has no second connection")
        return connect_read_only(self.path)

    def own_reader(self) -> sqlite3.Connection:
        """The writer's own connection, for queries that must see a held transaction."""
        self._move_aside()
        return self.conn

    def read_model_rows(self, table: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        try:
            cursor = self.conn.execute(f"SELECT {', '.join(columns)} FROM {table}")
        except sqlite3.OperationalError as exc:  # a database older than the table
            raise NoSuchTable(str(exc)) from exc
        for row in cursor:
            yield tuple(row)

    @contextmanager
    def consistent(self) -> Iterator[None]:
        """One read transaction (WAL): its snapshot starts at the first read."""
        conn = self.conn
        conn.execute("BEGIN")
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def position_at(self, time: str) -> int:
        """The last position whose event occurred at or before `time` (0: none)."""
        self._move_aside()
        row = self.conn.execute(
            "SELECT coalesce(max(position), 0) FROM events WHERE occurred_at <= ?", (time,)
        ).fetchone()
        return int(row[0])

    def stored_rows(self) -> Iterator[tuple[Any, ...]]:
        """The log as stored, in position order and not upcast: `(position, stream,
        version, type, schema, data, meta, occurred_at)`, data and meta as JSON text."""
        for rows in self._chunks(_COLUMNS, 0, None, 5000):
            yield from rows

    def all_meta(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.conn.execute("SELECT key, value FROM sandex_meta")}

    def set_metas(self, values: Mapping[str, str]) -> None:
        with self._transaction():
            for key, value in values.items():
                self.set_meta(key, value)

    # -- fork: a new, independent database from this one's log ------------------------

    def fork(
        self,
        target: str,
        up_to: int | None = None,
        *,
        lease: bool = False,
        lease_seconds: float = 5.0,
    ) -> SqliteEventStore:
        """A new database file at `target` (which must not exist), independent of this
        one, opened as a store: at the head (`up_to` None, or at or past the last
        position) a copy of the whole database (log, meta, read models, state
        snapshots) by SQLite's backup API; before the head, the same copy cut to the
        log's prefix up to `up_to`, the state snapshots at or before it, and empty read
        models at checkpoint 0, which an engine opened on it rebuilds from the log (as
        after any crash between a commit and its read models). `up_to` should end a
        decision (time travel's `cut_position`).

        Copied from a read transaction of a connection of its own: one committed state
        of the database, whole, however the writer goes on meanwhile; a write not yet
        committed is not in it. The new file is written without a journal and synced
        once, when whole (under FULL durability: NORMAL promises to survive a process
        crash, not a power cut). The key file is not the store's business: whoever forks
        (the world manager) gives the fork a key file of its own."""
        where = locate(target)
        if where.kind != "file":
            raise ValueError(f"{target}: an SQLite store forks into a new file")
        if Path(target).exists():
            raise FileExistsError(f"{target} exists already; a fork is a new database")
        # `:memory:` has no second connection: its own one, which only its writer uses.
        source = self.conn if in_memory(self.path) else connect_read_only(self.path)
        made = private_files.prepare_database(target)
        try:
            copy = sqlite3.connect(target, isolation_level=None)
            try:
                # Nothing in the new file is worth a journal or a sync until it is whole:
                # one sync at the end (a journaled, synced backup took several times longer).
                copy.execute("PRAGMA journal_mode=OFF")
                copy.execute("PRAGMA synchronous=OFF")
                reading = not source.in_transaction
                if reading:
                    source.execute("BEGIN")
                try:
                    row = source.execute("SELECT max(position) FROM events").fetchone()
                    head = int(row[0] or 0)
                    source.backup(copy)
                finally:
                    if reading and source.in_transaction:
                        source.execute("ROLLBACK")
                if up_to is not None and up_to < head:
                    _cut(copy, up_to)
                copy.execute("PRAGMA journal_mode=WAL")
            finally:
                copy.close()
            if self._durability == "FULL":  # NORMAL: a process crash, not a power cut
                _sync(target)
        except BaseException:
            for leftover in (target, f"{target}-wal", f"{target}-shm"):
                Path(leftover).unlink(missing_ok=True)
            private_files.remove_empty(made)
            raise
        finally:
            if source is not self.conn:
                source.close()
        # `lease_seconds` is PostgreSQL's: a file's lease ends with its holder's process.
        return SqliteEventStore(
            target, durability=self._durability, tables=self._tables, lease=lease
        )

    # -- time travel (engine/tools/time_travel.py): a new database from another -------

    @contextmanager
    def bulk_loading(self) -> Iterator[None]:
        """No journal and no sync while a new database is filled (nothing in it is worth
        protecting until it is whole); WAL again at the end."""
        conn = self.conn
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute("PRAGMA cache_size=-262144")
        yield
        conn.execute("PRAGMA journal_mode=WAL")

    def copy_log(self, source: str | Path, upto: int) -> None:
        """Append the events of the database at `source` up to position `upto`."""
        self._fold = None  # rows this connection does not encode: no longer folded
        with self._attached(source) as conn:
            conn.execute(
                f"INSERT INTO main.events ({_COLUMNS}) SELECT {_COLUMNS} FROM src.events"
                " WHERE position <= ? ORDER BY position",
                (upto,),
            )

    def copy_rows(self, source: str | Path, tables: Mapping[str, str], upto: int) -> None:
        """Copy the rows of `source`'s tables (name: its position column) made by the
        events up to `upto`: append-only read models, whose rows never change."""
        with self._attached(source) as conn:
            for table, position in tables.items():
                columns = ", ".join(self._columns[table])
                conn.execute(
                    f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM src.{table}"
                    f" WHERE {position} <= ?",
                    (upto,),
                )

    def load_events(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Append stored rows (as `stored_rows` gives them, from any store) as they are,
        in one transaction: a log copied from another database."""
        self._fold = None
        with self._transaction():
            self.conn.executemany(
                f"INSERT INTO events ({_COLUMNS}) VALUES ({', '.join('?' * 8)})", rows
            )

    def set_checkpoint(self, position: int) -> None:
        """Move the read models' checkpoint (a copy that filled them by `load_rows`)."""
        self.conn.execute(
            "UPDATE checkpoint SET position = ? WHERE name = 'read_models'", (position,)
        )

    def load_rows(self, table: str, rows: Iterable[Sequence[Any]]) -> None:
        """Insert rows of a read-model table, in its columns' order, as they are."""
        columns = self._columns[table]
        with self._transaction():
            self.conn.executemany(
                f"INSERT INTO {table} ({', '.join(columns)})"
                f" VALUES ({', '.join('?' for _ in columns)})",
                rows,
            )

    def appended_rows(
        self, table: str, columns: Sequence[str], position: str, upto: int
    ) -> Iterator[tuple[Any, ...]]:
        """The rows of an append-only table made by the events up to `upto` (`position`:
        the SQL of the row's log position), as tuples of `columns`."""
        names = ", ".join(columns)
        yield from self.conn.execute(f"SELECT {names} FROM {table} WHERE {position} <= ?", (upto,))

    @contextmanager
    def _attached(self, source: str | Path) -> Iterator[sqlite3.Connection]:
        """The database at `source` attached as `src`, inside one transaction."""
        conn = self.conn
        conn.execute("ATTACH DATABASE ? AS src", (str(source),))
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            conn.execute("DETACH DATABASE src")

    def log_summary(self) -> tuple[int, str]:
        """(events held, time of the last one or "")."""
        self._move_aside()
        count, last = self.conn.execute(
            "SELECT count(*), coalesce(max(occurred_at), '') FROM events"
        ).fetchone()
        return int(count), str(last)

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM sandex_meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO sandex_meta (key, value) VALUES (?, ?)", (key, value)
        )

    def erase_meta(self, key: str) -> None:
        """Delete a meta entry so that its value is gone from the file's bytes, not only
        from the table: the page is overwritten (`secure_delete`) and the write-ahead
        log, which still holds the page as it was, is checkpointed and truncated. Best
        effort for the log: a reader holding an old snapshot open keeps it alive."""
        conn = self.conn
        before = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
        try:
            conn.execute("PRAGMA secure_delete=ON")
            conn.execute("DELETE FROM sandex_meta WHERE key = ?", (key,))
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.DatabaseError as exc:
            raise StoreUnavailable(str(exc)) from exc
        finally:
            conn.execute(f"PRAGMA secure_delete={before}")

    def start_checkpoints(self) -> None:
        """Copy the WAL into the database from a thread of its own from now on
        (engine/store/checkpointer.py); `close` stops it."""
        if self._checkpointer is None and not in_memory(self.path):
            self._checkpointer = Checkpointer(self.path)
            self._checkpointer.start()
            # The writer's own checkpoint becomes the backstop that lets the log start
            # over (checkpointer.py): at 32,000 pages it finds little left to copy.
            self._autocheckpoint = _BACKSTOP_PAGES
            self.conn.execute(f"PRAGMA wal_autocheckpoint={_BACKSTOP_PAGES}")

    def release_memory(self) -> None:
        """The writer's page cache freed (`PRAGMA shrink_memory`); it fills again from
        the file, read as the next writes need it. A connection that cannot keeps it."""
        with suppress(sqlite3.Error):
            self.conn.execute("PRAGMA shrink_memory")

    def close(self) -> None:
        if self._aside is not None:  # a scratch log (`fold_log`): dropped with its database
            self._aside.close()
            Path(self._aside.name).unlink(missing_ok=True)
            self._aside = None
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        self.conn.close()
        self._release_lease()

    def _release_lease(self) -> None:
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.release()


# The blank database of each set of tables met in this process: (its schema, its bytes).
_BLANKS: dict[str, tuple[frozenset[tuple[str, ...]], bytes]] = {}
_BLANKS_LOCK = threading.Lock()
# The database header's file format write and read versions (bytes 18 and 19): 2 is WAL,
# so a file that starts as the blank image opens in WAL mode with no conversion.
_WAL_VERSIONS = slice(18, 20)


def _schema_of(conn: sqlite3.Connection) -> frozenset[tuple[str, ...]]:
    return frozenset(
        (str(kind), str(name), str(table), str(sql or ""))
        for kind, name, table, sql in conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
        )
    )


def _blank(tables: dict[str, dict[str, Any]]) -> tuple[frozenset[tuple[str, ...]], bytes]:
    """The schema and the bytes of a new database of `tables`, made once per process in
    memory the one way a schema is made (`_create_tables`), then reused: a new world's
    database is these bytes written once, where DDL through sqlite-utils and a journaled
    switch to WAL took several statements and syncs each time."""
    key = repr(tables)
    with _BLANKS_LOCK:
        made = _BLANKS.get(key)
        if made is None:
            store = SqliteEventStore(":memory:", tables=tables)
            try:
                schema, image = _schema_of(store.conn), bytearray(store.conn.serialize())
            finally:
                store.close()
            image[_WAL_VERSIONS] = b"\x02\x02"
            made = _BLANKS[key] = (schema, bytes(image))
    return made


def _write_blank(path: str, tables: dict[str, dict[str, Any]], *, sync: bool) -> None:
    """Fill the empty file this store just made at `path` with the blank database of
    `tables`; `sync` (FULL durability): on the disk (file and folder entry) before
    SQLite opens it."""
    image = _blank(tables)[1]
    with open(path, "r+b") as out:
        out.write(image)
        if sync:
            out.flush()
            os.fsync(out.fileno())
    if sync:
        private_files.sync_directory(Path(path).parent)


def _sync(path: str) -> None:
    """The file at `path` on the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _cut(conn: sqlite3.Connection, up_to: int) -> None:
    """Make the copy at `conn` hold the log up to `up_to` only: later events and state
    snapshots go, every read model is emptied and its checkpoint set to 0."""
    base = {"events", "sandex_meta", "checkpoint", "state_snapshots"}
    tables = [
        str(row[0])
        for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not str(row[0]).startswith("sqlite_")
    ]
    conn.execute("BEGIN")
    conn.execute("DELETE FROM events WHERE position > ?", (up_to,))
    conn.execute("DELETE FROM state_snapshots WHERE position > ?", (up_to,))
    for table in tables:
        if table not in base:
            conn.execute(f'DELETE FROM "{table}"')
    conn.execute("UPDATE checkpoint SET position = 0 WHERE name = 'read_models'")
    conn.execute("COMMIT")


# What sqlite-utils imports when installed only to name column types for their values
# (pandas' Timestamp, numpy's scalars), which sandex never gives it: pandas alone was a
# quarter of a second of every new database's (every backtest's) start, numpy 40 ms of a
# server's.
_NOT_FOR_SQLITE_UTILS = frozenset({"pandas", "numpy"})


class _NotForSqliteUtils(importlib.abc.MetaPathFinder):
    """Refuses pandas and numpy to one thread, the one importing sqlite-utils (which
    takes their absence as they are not installed); other threads import what they like
    meanwhile, and so does this one afterwards."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        if name in _NOT_FOR_SQLITE_UTILS and threading.get_ident() == self.thread:
            raise ModuleNotFoundError("not imported for sqlite-utils", name=name)
        return None


def _sqlite_utils() -> Any:
    """The sqlite-utils module; imported without pandas and numpy, unless they are in
    already (then sqlite-utils takes them, as it would anyway)."""
    finder = _NotForSqliteUtils()
    sys.meta_path.insert(0, finder)
    try:
        import sqlite_utils
    finally:
        sys.meta_path.remove(finder)
    return sqlite_utils


def in_memory(path: str) -> bool:
    """A database no second connection can open (no lease, no reader, no snapshots)."""
    return locate(path).in_memory
