"""The event-store port, by capability: the log (`EventLog`), the read-model tables
(`ReadModelTables`), meta values (`MetaValues`), the start-up cache's blobs
(`StateBlobs`) and the lifecycle (`Lifecycle`); `EventStore` is their union, what the
engine holds. A caller that needs less names the smaller protocol. What only some
stores can do (bulk loading a copy, folding the log's hash as it is written, forking)
is an optional capability, asked for by type with `capability(store, BulkLoad)`, which
answers None where the store lacks it.

Every implementation passes the contract suite (tests/support/store_contract.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar, cast, runtime_checkable

from sandex.engine.kernel.events import Event

# One read-model write: (table, rows to upsert, keys to delete).
TableWrites = dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]


class StoreUnavailable(Exception):
    """The store cannot take the write now (disk full, read-only, locked)."""


class Concurrency(Exception):
    """An append collided with an event already at that position or stream version."""


class NoSuchTable(LookupError):
    """A read-model table the store does not hold (a database older than the table)."""


class SqlRows(Protocol):
    """What a read query answers: its rows as tuples, as an SQLite cursor gives them."""

    def fetchone(self) -> tuple[Any, ...] | None: ...

    def fetchall(self) -> list[tuple[Any, ...]]: ...

    def __iter__(self) -> Iterator[tuple[Any, ...]]: ...


class SqlReader(Protocol):
    """A read-only SQL connection as the read side uses it: `execute(sql, params)` with
    `?` placeholders, answering rows as tuples (`fetchone`, `fetchall`, iteration)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> SqlRows: ...

    def close(self) -> None: ...


class EventLog(Protocol):
    """The log: its positions, appends and reads."""

    def last_position(self) -> int: ...

    def stream_version(self, stream: str) -> int: ...

    def data_version(self) -> int:
        """Changes whenever another connection or process commits; not on this store's own
        commits (the writer reloads the log when it sees a change)."""

    def commit(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        """Append `events` (positions and versions already assigned), apply the read-model
        writes and move the checkpoint, all or nothing."""

    def write(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        """`commit` up to its end: written in a transaction that `finish` ends."""

    def finish(self) -> None:
        """End the transaction `write` opened: durable, or undone and raising."""

    def hold(self) -> None:
        """One transaction that every commit joins until `release` (a backtest)."""

    def release(self) -> None:
        """Make everything since `hold` durable at once."""

    def read(
        self,
        after: int = 0,
        stream: str | None = None,
        limit: int | None = None,
        until: int | None = None,
        with_meta: bool = True,
    ) -> Iterator[Event]:
        """Events after `after` in position order, upcast; replay asks no meta."""

    def scan(
        self, after: int = 0, until: int | None = None, first: Sequence[str] = ()
    ) -> Iterator[list[tuple[Any, ...]]]:
        """The log as raw rows in chunks for the fast replay: `(position, stream, data
        as JSON text, rest)`, `rest` the index in `first` of the type of a stream's first
        event at schema 1, else the JSON text of `[version, type, schema, occurred_at]`."""

    def occurred_at(self, position: int) -> str | None: ...

    def position_at(self, time: str) -> int:
        """The last position whose event occurred at or before `time` (0: none)."""

    def stored_rows(self) -> Iterator[tuple[Any, ...]]:
        """The log as stored, in position order, not upcast: `(position, stream, version,
        type, schema, data, meta, occurred_at)`, data and meta as JSON text (what the log
        hash fingerprints)."""

    def event_check(self, position: int) -> str | None:
        """A fingerprint of the event at `position` (None when there is none)."""

    def consistent(self) -> AbstractContextManager[None]:
        """Reads inside the block see one state of the store (verify compares the read
        models with exactly the log they were written from)."""


class ReadModelTables(Protocol):
    """The read-model tables, their checkpoint and the read side's SQL on them."""

    def checkpoint(self) -> int:
        """The position the read-model tables were last written at."""

    def replace_read_models(self, writes: TableWrites, checkpoint: int) -> None:
        """Empty every read-model table and fill it from `writes`, all or nothing;
        `Concurrency` if the log does not end at `checkpoint`."""

    def read_model_rows(self, table: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        """Every row of a read-model table as a tuple of `columns`; `NoSuchTable`."""

    def read_connection(self) -> SqlReader:
        """A new read-only SQL connection for the read side's queries;
        `StoreUnavailable` where the store has none."""

    def own_reader(self) -> SqlReader:
        """The read side's SQL on this store's own connection, which sees a transaction
        it holds (`hold`: a backtest's strategy reads its own commands);
        `StoreUnavailable` where the store has none."""


class MetaValues(Protocol):
    """The store's named values (the seed, labels, a copy's unfinished mark)."""

    def get_meta(self, key: str) -> str | None: ...

    def all_meta(self) -> dict[str, str]: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def set_metas(self, values: Mapping[str, str]) -> None:
        """Several values at once, all or nothing (a new database is never half-labelled)."""

    def erase_meta(self, key: str) -> None:
        """Delete a value so that its bytes are gone from the storage too (a secret)."""


class StateBlobs(Protocol):
    """The start-up cache's blobs (engine/runtime/startup_cache.py)."""

    def state_snapshots(self, fmt: str | None) -> list[tuple[int, str]]:
        """(position, event check) of the blobs saved in format `fmt` (None: in any
        format), newest first."""

    def state_snapshot_data(self, position: int) -> bytes | None: ...

    def save_state_snapshot(
        self, position: int, fmt: str, event_check: str, data: bytes, keep: int = 2
    ) -> None:
        """Save a blob and prune all but the newest `keep`, all or nothing."""


class Lifecycle(Protocol):
    """Where the store lives, other handles on it, and its end.

    `path` names where the store lives: a file for SQLite, a URL for PostgreSQL,
    ":memory:" for a store no other connection or process can open (no key file, no
    snapshot thread, no lease)."""

    path: str

    def read_only(self) -> EventStore:
        """Another, read-only handle on the same store, for a thread that only reads (the
        snapshot thread); the caller closes it."""

    def start_checkpoints(self) -> None:
        """Tidy the storage off the writer's path from now on (SQLite: copy the WAL)."""

    def close(self) -> None:
        """Release everything, the writer lease included."""


class EventStore(EventLog, ReadModelTables, MetaValues, StateBlobs, Lifecycle, Protocol):
    """Every capability every store has: what the engine holds."""


# -- optional capabilities, asked for by type ---------------------------------------


@runtime_checkable
class BulkLoad(Protocol):
    """Fill a new store from another's rows as they are stored (`sandex copy`, time
    travel): the SQL stores have it."""

    def load_events(self, rows: Iterable[tuple[Any, ...]]) -> None: ...

    def load_rows(self, table: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def set_checkpoint(self, position: int) -> None: ...

    def appended_rows(
        self, table: str, columns: Sequence[str], position: str, upto: int
    ) -> Iterator[tuple[Any, ...]]: ...


@runtime_checkable
class LogFolding(Protocol):
    """Fold the log's hash as it is written, so a scratch log need never be read back."""

    def fold_log(self, aside: bool = False) -> bool: ...

    def log_fold(self) -> str | None: ...


@runtime_checkable
class Forking(Protocol):
    """A new, independent store made from this one's log (a world forked from its
    template): see each store's `fork`. `lease`: the new store holds its writer lease
    (`lease_seconds` as `open_store`'s), so that a writer serves it as it is opened."""

    def fork(
        self,
        target: str,
        up_to: int | None = None,
        *,
        lease: bool = False,
        lease_seconds: float = 5.0,
    ) -> EventStore: ...


@runtime_checkable
class MemoryRelease(Protocol):
    """Give back the memory the writer's connection holds only to go faster (its page
    cache), when its engine has had nothing to write for a while: each of a server's
    idle worlds would hold it for nothing."""

    def release_memory(self) -> None: ...


_Capability = TypeVar("_Capability")


def capability(store: object, kind: Callable[..., _Capability]) -> _Capability | None:
    """`store` as the optional capability `kind` (a runtime-checkable protocol above),
    or None when it lacks it. (`kind` is typed as a callable: mypy takes no protocol
    where `type[...]` is asked.)"""
    if isinstance(store, cast("type", kind)):
        return cast("_Capability", store)
    return None
