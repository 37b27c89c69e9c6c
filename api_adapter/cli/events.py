"""`sandex events`: the event log as JSON lines, credentials redacted."""

from __future__ import annotations

import argparse
import sys


def events(args: argparse.Namespace) -> int:
    """`sandex events`."""
    import orjson

    from engine.read.event_listing import redacted_events

    # read-only: safe beside a running server
    listing = redacted_events(args.db, after=args.after, stream=args.stream, limit=args.limit)
    out = sys.stdout.buffer
    try:
        for shown in listing:
            out.write(orjson.dumps(shown) + b"\n")
    except BrokenPipeError:
        pass
    finally:
        listing.close()
    return 0
