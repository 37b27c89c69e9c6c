"""The event-store port."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from engine.kernel.events import Event

# One read-model write: (table, rows to upsert, keys to delete).
TableWrites = dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]


class StoreUnavailable(Exception):
    """The store cannot take the write now (disk full, read-only, locked)."""


class Concurrency(Exception):
    """An append collided with an event already at that position or stream version."""


class EventStore(Protocol):
    def last_position(self) -> int: ...

    def stream_version(self, stream: str) -> int: ...

    def commit(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        """Append `events` (positions and versions already assigned), apply the read-model
        writes and move the checkpoint, all or nothing."""

    def write(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        """`commit` up to its end: written in a transaction that `finish` ends."""

    def finish(self) -> None:
        """End the transaction `write` opened: durable, or undone and raising."""

    def read(
        self,
        after: int = 0,
        stream: str | None = None,
        limit: int | None = None,
        until: int | None = None,
    ) -> Iterator[Event]: ...

    def get_meta(self, key: str) -> str | None: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def checkpoint(self) -> int: ...

    def close(self) -> None: ...
