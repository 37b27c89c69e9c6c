"""Stores and watches the engine's writer tests share: a store that breaks beyond any
`except Exception`, and a flag raised when an idle writer gives back its store's cache."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from sandex.engine.kernel.events import Event
from sandex.engine.runtime.composition import TABLES
from sandex.engine.store import MemoryEventStore, TableWrites


class Escaped(BaseException):
    """An error no `except Exception` catches: it ends the writer thread it reaches."""


class DyingStore(MemoryEventStore):
    """A memory store whose next write raises `Escaped` once `die` is set."""

    def __init__(self) -> None:
        super().__init__(tables=TABLES)
        self.die = False

    def write(self, events: Sequence[Event], writes: TableWrites, checkpoint: int) -> None:
        if self.die:
            self.die = False
            raise Escaped("the store broke in a way nobody expected")
        super().write(events, writes, checkpoint)


def release_watched(engine: Any, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once `engine`'s store has given back its memory (`release_memory` called)."""
    released = threading.Event()
    release = engine.store.release_memory

    def recorded() -> None:
        release()
        released.set()

    monkeypatch.setattr(engine.store, "release_memory", recorded)
    return released
