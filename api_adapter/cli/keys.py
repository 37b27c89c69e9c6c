"""`sandex keys rotate`: a new token signing key in the database's key file."""

from __future__ import annotations

import argparse
import sys


def rotate(args: argparse.Namespace) -> int:
    """`sandex keys rotate`."""
    from sandex.engine.runtime.key_file import KeyFile, KeyFileError

    try:
        keys = KeyFile.open(args.db)
        keys.rotate()
    except (KeyFileError, OSError) as exc:
        print(f"sandex: {exc}", file=sys.stderr)
        return 1
    print(
        f"signing key of {args.db} rotated in {keys.path}: tokens issued before are refused"
        " from now on (a running server too); clients get new tokens with their secrets"
    )
    return 0
