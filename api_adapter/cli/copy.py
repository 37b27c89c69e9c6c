"""`sandex copy`: a whole database into another store (SQLite and PostgreSQL)."""

from __future__ import annotations

import argparse
import sys


def copy(args: argparse.Namespace) -> int:
    """`sandex copy --from A [--world ID] --to B`: 0 when the copy verifies with the
    source's log hash."""
    from sandex.api_adapter.cli.worlds import world_db
    from sandex.engine.tools.copy import CopyError, display
    from sandex.engine.tools.copy import copy as copy_database

    source = world_db(args.source, getattr(args, "world", None))
    try:
        done = copy_database(source, args.target)
    except CopyError as exc:
        print(f"sandex: {exc}", file=sys.stderr)
        return 2
    print(
        f"copied {done.events} events from {display(source)} to {display(args.target)};"
        f" verified, log hash {done.log_hash}"
    )
    return 0
