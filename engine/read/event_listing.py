"""The event log as `sandex events` prints it: each event's JSON form with credentials
redacted, read through a read-only store (safe beside a running server)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

from sandex.engine.kernel.credentials import redact
from sandex.engine.read.connections import log_reader


def redacted_events(
    db: str | Path, *, after: int = 0, stream: str | None = None, limit: int | None = None
) -> Generator[dict[str, Any], None, None]:
    """The events after `after` (of `stream`, at most `limit`), each with no salt, hash
    or secret; closing the iterator closes the store."""
    store = log_reader(db)
    try:
        for event in store.read(after=after, stream=stream, limit=limit):
            shown = event.as_json()
            shown["data"] = redact(event.type, event.data)
            yield shown
    finally:
        store.close()
