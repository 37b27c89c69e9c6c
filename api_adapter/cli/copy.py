"""`sandex copy`: a whole database into another store (SQLite and PostgreSQL)."""

from __future__ import annotations

import argparse
import sys


def copy(args: argparse.Namespace) -> int:
    """`sandex copy --from A --to B`: 0 when the copy verifies with the source's log hash."""
    from engine.tools.copy import CopyError, display
    from engine.tools.copy import copy as copy_database

    try:
        done = copy_database(args.source, args.target)
    except CopyError as exc:
        print(f"sandex: {exc}", file=sys.stderr)
        return 2
    print(
        f"copied {done.events} events from {display(args.source)} to {display(args.target)};"
        f" verified, log hash {done.log_hash}"
    )
    return 0
