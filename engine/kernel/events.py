"""The event record, and the schema versions that let an old log be upcast."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandex.engine.kernel.event_catalogue import CATALOGUE

# Current schema version per event type past version 1 (engine/kernel/event_catalogue.py
# says each type's); a type absent here is at version 1.
SCHEMA_VERSIONS: dict[str, int] = {t: s.schema for t, s in CATALOGUE.items() if s.schema != 1}

# (type, from_version) -> function turning that version's data into the next version's.
UPCASTERS: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {}


@dataclass(slots=True, init=False)
class Event:
    type: str
    stream: str
    data: dict[str, Any]
    position: int
    version: int
    occurred_at: str
    meta: dict[str, Any]
    schema: int

    def __init__(
        self,
        type: str,
        stream: str,
        data: dict[str, Any],
        position: int = 0,
        version: int = 0,
        occurred_at: str = "",
        meta: dict[str, Any] | None = None,
        schema: int = 0,
    ) -> None:
        # Written out rather than generated: one event per posting of every command and
        # per replayed event, and a generated __init__ calls __post_init__ on top.
        self.type = type
        self.stream = stream
        self.data = data
        self.position = position
        self.version = version
        self.occurred_at = occurred_at
        self.meta = {} if meta is None else meta
        self.schema = schema or SCHEMA_VERSIONS.get(type, 1)

    def as_json(self) -> dict[str, Any]:
        return {
            "position": self.position,
            "stream": self.stream,
            "version": self.version,
            "type": self.type,
            "schema": self.schema,
            "occurred_at": self.occurred_at,
            "data": self.data,
            "meta": self.meta,
        }


def upcast(event: Event) -> Event:
    """Bring an event read from an old log to the current schema of its type."""
    target = SCHEMA_VERSIONS.get(event.type, 1)
    while event.schema < target:
        step = UPCASTERS[(event.type, event.schema)]
        event.data = step(event.data)
        event.schema += 1
    return event
