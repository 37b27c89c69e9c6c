"""`sandex verify`: every invariant of a database, checked."""

from __future__ import annotations

import argparse


def verify(args: argparse.Namespace) -> int:
    """`sandex verify`: 0 when every check passes, 1 with the problems found."""
    from sandex.api_adapter.cli.progress import progress_bar
    from sandex.api_adapter.cli.worlds import world_db
    from sandex.engine.tools import verify as checks

    db = world_db(args.db, getattr(args, "world", None))
    with progress_bar("verifying", "events") as shown:
        problems = checks.verify(db, progress=shown)
    if problems:
        print(f"FAILED: {problems[0]}")
        for extra in problems[1:]:
            print(f"  also: {extra}")
        return 1
    print("OK: log gapless, ledger balanced, no negative balance, read models equal a rebuild")
    return 0
