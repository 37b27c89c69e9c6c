"""`sandex events`: the event log as JSON lines, credentials redacted."""

from __future__ import annotations

import argparse
import sys


def events(args: argparse.Namespace) -> int:
    """`sandex events`."""
    import orjson

    # read-only: safe beside a running server
    from sandex.api_adapter.cli.worlds import world_db
    from sandex.engine.read.event_listing import redacted_events

    db = world_db(args.db, getattr(args, "world", None))
    listing = redacted_events(db, after=args.after, stream=args.stream, limit=args.limit)
    out = sys.stdout.buffer
    try:
        for shown in listing:
            out.write(orjson.dumps(shown) + b"\n")
    except BrokenPipeError:
        pass
    finally:
        listing.close()
    return 0
