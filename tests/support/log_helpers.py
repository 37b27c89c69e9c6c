"""The event log as tests compare it: every stored column, credential fields masked.

A client's salt and secret hash and a webhook's sealed secret come from the OS, so two
runs of the same commands differ there by design (engine/kernel/credentials.py); everything
else must be equal byte for byte, which is what `sandex.engine.tools.time_travel.log_hash` hashes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from sandex.engine.kernel.credentials import EVENT_FIELDS, redact
from sandex.engine.store import open_reader


def masked_log(db: Path | str) -> list[tuple[Any, ...]]:
    """Every row of the events table in position order, credential fields masked."""
    reader = open_reader(db)
    try:
        rows = list(reader.stored_rows())
    finally:
        reader.close()
    return [
        (*r[:5], orjson.dumps(redact(r[3], orjson.loads(r[5]))).decode(), *r[6:])
        if r[3] in EVENT_FIELDS
        else r
        for r in rows
    ]
