"""An event store in memory: the whole port, with no file, for unit tests that run an
Engine (deciders, appliers, the writer) without SQLite.

Events are kept as their stored rows (data and meta as JSON text, as SQLite keeps
them), so a read decodes a fresh copy and the start-up scan gives SQLite's rows; read
models are dicts keyed by primary key, honouring a table's `fixed` columns as SQLite's
upsert does. Nothing is durable and no other process can reach it: `path` is
":memory:" (so an Engine on it keeps its keys in memory and builds no state snapshots),
`data_version` never changes, and `hold`/`release` only mark a transaction that a
crash could not have cut short anyway.

The read side's SQL: this store has none. `read_connection` raises `StoreUnavailable`
rather than mirror every read-model table into an in-memory SQLite: tests of the read
side and the HTTP adapter run on the SQLite store, whose rows `read_model_rows` lets a
unit test compare with this one's.
"""

from __future__ import annotations

import bisect
import hashlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, NoReturn

import orjson

from sandex.engine.kernel.events import SCHEMA_VERSIONS, Event, upcast
from sandex.engine.store.port import Concurrency, NoSuchTable, StoreUnavailable, TableWrites
from sandex.engine.store.read_model_indexes import with_indexes

# A stored event: (position, stream, version, type, schema, data, meta, occurred_at).
_Row = tuple[int, str, int, str, int, str, str, str]


class _Log:
    """What every handle on one memory store shares."""

    def __init__(self, tables: dict[str, dict[str, Any]]) -> None:
        tables = with_indexes(tables)  # an update keeps `fixed` columns, as on SQLite
        self.lock = threading.Lock()
        self.rows: list[_Row] = []
        self.positions: list[int] = []  # rows' positions, ascending, for bisect
        self.versions: dict[str, int] = {}
        self.taken: set[tuple[str, int]] = set()
        self.meta: dict[str, str] = {}
        self.checkpoint = 0
        self.columns = {name: list(spec["columns"]) for name, spec in tables.items()}
        self.pks = {name: list(spec["pk"]) for name, spec in tables.items()}
        self.kept = {
            name: set(spec["pk"]) | set(spec.get("fixed", ())) for name, spec in tables.items()
        }
        self.tables: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {n: {} for n in tables}
        self.snapshots: dict[int, tuple[str, str, bytes]] = {}


class _Pending:
    """A write that `finish` makes visible."""

    __slots__ = ("rows", "writes", "checkpoint", "clear")

    def __init__(self, rows: list[_Row], writes: TableWrites, checkpoint: int, clear: bool):
        self.rows = rows
        self.writes = writes
        self.checkpoint = checkpoint
        self.clear = clear


class MemoryEventStore:
    """The port on dicts and lists; `read_only` handles share them."""

    path = ":memory:"

    def __init__(
        self, *, tables: dict[str, dict[str, Any]] | None = None, _log: _Log | None = None
    ) -> None:
        self._log = _log if _log is not None else _Log(tables or {})
        self._writable = _log is None
        self._pending: _Pending | None = None
        self._held = False
        self._closed = False

    # -- positions --------------------------------------------------------------------

    def last_position(self) -> int:
        positions = self._log.positions
        return positions[-1] if positions else 0

    def stream_version(self, stream: str) -> int:
        return self._log.versions.get(stream, 0)

    def checkpoint(self) -> int:
        return self._log.checkpoint

    def data_version(self) -> int:
        """No other process can write this store: it never changes."""
        return 0

    # -- appending --------------------------------------------------------------------

    def commit(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        self.write(events, writes, checkpoint)
        self.finish()

    def write(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        self._stage(_stored(events), writes, checkpoint, clear=False)

    def finish(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            raise StoreUnavailable("no write to finish")
        log = self._log
        with log.lock:
            if pending.clear:
                for rows in log.tables.values():
                    rows.clear()
            for row in pending.rows:
                log.rows.append(row)
                log.positions.append(row[0])
                log.versions[row[1]] = max(row[2], log.versions.get(row[1], 0))
                log.taken.add((row[1], row[2]))
            for table, (upserts, deletes) in pending.writes.items():
                self._write_table(table, upserts, deletes)
            log.checkpoint = pending.checkpoint

    def hold(self) -> None:
        if self._held:
            raise RuntimeError("the store already holds a transaction")
        self._held = True

    def release(self) -> None:
        self._held = False

    def replace_read_models(self, writes: TableWrites, checkpoint: int) -> None:
        self._stage([], writes, checkpoint, clear=True)
        self.finish()

    def _stage(
        self, rows: list[_Row], writes: TableWrites, checkpoint: int, *, clear: bool
    ) -> None:
        """Check a write as SQLite's constraints would, and keep it for `finish`."""
        if not self._writable or self._closed:
            raise StoreUnavailable("this memory store is read-only or closed")
        if self._pending is not None:
            raise StoreUnavailable("a write is already waiting for its finish")
        log = self._log
        if clear and self.last_position() != checkpoint:
            raise Concurrency(f"the log ends at {self.last_position()}, not {checkpoint}")
        last = self.last_position()
        seen: set[tuple[str, int]] = set()
        for row in rows:
            key = (row[1], row[2])
            if row[0] <= last or key in log.taken or key in seen:
                raise Concurrency(f"position {row[0]} or version {key} is taken")
            last = row[0]
            seen.add(key)
        for table in writes:
            if table not in log.tables:
                raise StoreUnavailable(f"no such table: {table}")
        # Copied: the writer reuses its row dicts once the write returns.
        copied = {
            t: ([dict(r) for r in up], [dict(d) for d in de]) for t, (up, de) in writes.items()
        }
        self._pending = _Pending(rows, copied, checkpoint, clear)

    def _write_table(
        self, table: str, upserts: list[dict[str, Any]], deletes: list[dict[str, Any]]
    ) -> None:
        log = self._log
        rows = log.tables[table]
        pk = log.pks[table]
        for deleted in deletes:
            rows.pop(tuple(deleted[c] for c in pk), None)
        columns = log.columns[table]
        kept = log.kept[table]
        for upsert in upserts:
            row = {c: upsert.get(c) for c in columns}
            key = tuple(row[c] for c in pk)
            old = rows.get(key)
            if old is not None:  # an update leaves the key and the fixed columns alone
                row.update({c: old[c] for c in kept})
            rows[key] = row

    # -- reading ----------------------------------------------------------------------

    def _after(self, after: int, until: int | None) -> list[_Row]:
        log = self._log
        start = bisect.bisect_right(log.positions, after)
        end = len(log.positions) if until is None else bisect.bisect_right(log.positions, until)
        return log.rows[start:end]

    def read(
        self,
        after: int = 0,
        stream: str | None = None,
        limit: int | None = None,
        until: int | None = None,
        with_meta: bool = True,
    ) -> Iterator[Event]:
        loads = orjson.loads
        current = SCHEMA_VERSIONS
        count = 0
        for pos, st, ver, typ, schema, data, meta, at in self._after(after, until):
            if stream is not None and st != stream:
                continue
            if limit is not None and count >= limit:
                return
            count += 1
            event = Event(
                typ, st, loads(data), pos, ver, at, loads(meta) if with_meta else {}, schema
            )
            yield upcast(event) if schema != current.get(typ, 1) else event

    def scan(
        self, after: int = 0, until: int | None = None, first: Sequence[str] = ()
    ) -> Iterator[list[tuple[Any, ...]]]:
        brief = {t: k for k, t in enumerate(first)}
        dumps = orjson.dumps
        rows = self._after(after, until)
        for start in range(0, len(rows), 512):
            chunk: list[tuple[Any, ...]] = []
            for pos, st, ver, typ, schema, data, _, at in rows[start : start + 512]:
                rest: Any = brief.get(typ) if ver == 1 and schema == 1 else None
                if rest is None:
                    rest = dumps([ver, typ, schema, at]).decode()
                chunk.append((pos, st, data, rest))
            yield chunk

    def _row(self, position: int) -> _Row | None:
        log = self._log
        i = bisect.bisect_left(log.positions, position)
        if i < len(log.positions) and log.positions[i] == position:
            return log.rows[i]
        return None

    def occurred_at(self, position: int) -> str | None:
        row = self._row(position)
        return None if row is None else row[7]

    def event_check(self, position: int) -> str | None:
        row = self._row(position)
        if row is None:
            return None
        _, stream, version, typ, schema, data, _, at = row
        return hashlib.sha256(orjson.dumps((stream, version, typ, schema, data, at))).hexdigest()

    def position_at(self, time: str) -> int:
        last = 0
        for row in self._log.rows:
            if row[7] <= time:
                last = max(last, row[0])
        return last

    def stored_rows(self) -> Iterator[tuple[Any, ...]]:
        yield from list(self._log.rows)

    def read_model_rows(self, table: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        rows = self._log.tables.get(table)
        if rows is None:
            raise NoSuchTable(f"no such table: {table}")
        for row in list(rows.values()):
            yield tuple(row[c] for c in columns)

    def consistent(self) -> AbstractContextManager[None]:
        """One process, one writer: a read sees whole commits already."""
        return nullcontext()

    def read_only(self) -> MemoryEventStore:
        return MemoryEventStore(_log=self._log)

    def read_connection(self) -> NoReturn:
        raise StoreUnavailable("the in-memory store has no SQL reader (engine/store/memory.py)")

    def own_reader(self) -> NoReturn:
        raise StoreUnavailable("the in-memory store has no SQL reader (engine/store/memory.py)")

    # -- meta values ------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        return self._log.meta.get(key)

    def all_meta(self) -> dict[str, str]:
        return dict(self._log.meta)

    def set_meta(self, key: str, value: str) -> None:
        self._log.meta[key] = value

    def set_metas(self, values: Mapping[str, str]) -> None:
        self._log.meta.update(values)

    def erase_meta(self, key: str) -> None:
        self._log.meta.pop(key, None)

    # -- the start-up cache's blobs ---------------------------------------------------

    def state_snapshots(self, fmt: str | None) -> list[tuple[int, str]]:
        found = [(p, c) for p, (f, c, _) in self._log.snapshots.items() if fmt in (None, f)]
        return sorted(found, reverse=True)

    def state_snapshot_data(self, position: int) -> bytes | None:
        found = self._log.snapshots.get(position)
        return None if found is None else found[2]

    def save_state_snapshot(
        self, position: int, fmt: str, event_check: str, data: bytes, keep: int = 2
    ) -> None:
        snapshots = self._log.snapshots
        with self._log.lock:
            snapshots[position] = (fmt, event_check, bytes(data))
            for old in sorted(snapshots, reverse=True)[keep:]:
                del snapshots[old]

    # -- fork -------------------------------------------------------------------------

    def fork(
        self,
        target: str = ":memory:",
        up_to: int | None = None,
        *,
        lease: bool = False,
        lease_seconds: float = 5.0,
    ) -> MemoryEventStore:
        """A new, independent memory store (`target` is ":memory:"): at the head a copy
        of everything committed; before it, the log up to `up_to`, the state snapshots
        at or before it, and empty read models at checkpoint 0 for an engine to rebuild,
        as the SQLite store's `fork`. The key file is not the store's business; a memory
        store has no writer lease to hold."""
        if target != ":memory:":
            raise ValueError("a memory store forks into another memory store")
        src = self._log
        new = _Log({})
        with src.lock:
            cut = len(src.rows) if up_to is None else bisect.bisect_right(src.positions, up_to)
            at_head = cut == len(src.rows)
            new.rows = src.rows[:cut]
            new.positions = src.positions[:cut]
            for row in new.rows:
                new.versions[row[1]] = max(row[2], new.versions.get(row[1], 0))
                new.taken.add((row[1], row[2]))
            new.meta = dict(src.meta)
            new.columns, new.pks, new.kept = src.columns, src.pks, src.kept
            new.tables = {
                name: ({key: dict(row) for key, row in rows.items()} if at_head else {})
                for name, rows in src.tables.items()
            }
            new.checkpoint = src.checkpoint if at_head else 0
            new.snapshots = {
                p: blob for p, blob in src.snapshots.items() if up_to is None or p <= up_to
            }
        forked = MemoryEventStore()
        forked._log = new
        return forked

    # -- lifecycle --------------------------------------------------------------------

    def start_checkpoints(self) -> None:
        """Nothing to tidy in memory."""

    def close(self) -> None:
        self._closed = True


def _stored(events: Sequence[Event]) -> list[_Row]:
    dumps = orjson.dumps
    return [
        (
            e.position,
            e.stream,
            e.version,
            e.type,
            e.schema,
            dumps(e.data).decode(),
            dumps(e.meta).decode(),
            e.occurred_at,
        )
        for e in events
    ]
