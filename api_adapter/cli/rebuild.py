"""`sandex rebuild`: drop the read models and replay the log into them."""

from __future__ import annotations

import argparse
import sys


def rebuild(args: argparse.Namespace) -> int:
    """`sandex rebuild`."""
    from sandex.api_adapter.cli.progress import progress_bar
    from sandex.engine.store import StoreUnavailable
    from sandex.engine.tools import verify

    try:
        with progress_bar("rebuilding", "events") as shown:
            position = verify.rebuild(args.db, progress=shown)
    except StoreUnavailable as exc:  # a server runs on it (engine/store/lease.py)
        print(f"sandex: {exc}", file=sys.stderr)
        return 2
    print(f"read models rebuilt from {position} events")
    return 0
