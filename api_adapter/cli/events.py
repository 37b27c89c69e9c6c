"""`sandex events`: the event log as JSON lines, credentials redacted."""

from __future__ import annotations

import argparse
import sys


def events(args: argparse.Namespace) -> int:
    """`sandex events`."""
    import orjson

    from engine.kernel.credentials import redact
    from engine.store import SqliteEventStore

    store = SqliteEventStore.reader(args.db)  # read-only: safe beside a running server
    out = sys.stdout.buffer
    try:
        for event in store.read(after=args.after, stream=args.stream, limit=args.limit):
            shown = event.as_json()
            shown["data"] = redact(event.type, event.data)  # no salt, hash or secret
            out.write(orjson.dumps(shown) + b"\n")
    except BrokenPipeError:
        pass
    finally:
        store.close()
    return 0
