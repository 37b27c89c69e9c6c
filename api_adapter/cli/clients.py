"""`sandex clients revoke`: a client's tokens stop working, beside a running server too."""

from __future__ import annotations

import argparse
import sys


def revoke(args: argparse.Namespace) -> int:
    """`sandex clients revoke`."""
    from sandex.engine import open_engine
    from sandex.engine.kernel.commands import RevokeClient
    from sandex.engine.kernel.errors import DomainError

    # Beside a running server, which holds the writer lease: one event, through SQLite's
    # write lock; the server reloads the log it finds changed before deciding again.
    engine = open_engine(args.db, lease=False).start()
    try:
        engine.execute(RevokeClient(client_id=args.client_id))
    except DomainError as exc:
        print(f"sandex: {exc.detail}", file=sys.stderr)
        return 1
    finally:
        engine.stop()
    print(f"client {args.client_id} revoked")
    return 0
