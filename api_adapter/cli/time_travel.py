"""`sandex time-travel`: a new database holding a log as it was at a position or a time."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def _until(text: str) -> tuple[int | None, Any]:
    if text.strip().isdigit():
        return int(text), None
    from sandex.engine.kernel.clock import parse_time

    try:
        return None, parse_time(text)
    except ValueError as exc:
        raise ValueError(
            f"--until {text!r} invalid: a log position (an integer) or an RFC 3339 time"
        ) from exc


def time_travel(args: argparse.Namespace) -> int:
    """`sandex time-travel --db F [--world ID] --until POSITION|TIME --out G`."""
    from sandex.api_adapter.cli.worlds import world_db
    from sandex.engine.tools.time_travel import travel

    source = world_db(args.db, getattr(args, "world", None))

    try:
        position, when = _until(args.until)
        done = travel(source, args.out, position=position, until=when)
    except (ValueError, FileExistsError, FileNotFoundError) as exc:
        print(f"sandex: {exc}", file=sys.stderr)
        return 2
    moved = (
        f" (position {done.asked} falls inside a decision; cut at its start)"
        if done.asked != done.position
        else ""
    )
    at = f", last event at {done.occurred_at}" if done.occurred_at else ""
    base = f"; state from the snapshot at {done.base} and the tail" if done.base else ""
    print(f"wrote {args.out}: {done.events} events up to position {done.position}{moved}{at}{base}")
    return 0
