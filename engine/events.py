"""The event record, and the schema versions that let an old log be upcast."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Current schema version per event type; a type absent here is at version 1.
SCHEMA_VERSIONS: dict[str, int] = {}

# (type, from_version) -> function turning that version's data into the next version's.
UPCASTERS: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {}


@dataclass(slots=True)
class Event:
    type: str
    stream: str
    data: dict[str, Any]
    position: int = 0
    version: int = 0
    occurred_at: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    schema: int = 0

    def __post_init__(self) -> None:
        if not self.schema:
            self.schema = SCHEMA_VERSIONS.get(self.type, 1)

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
