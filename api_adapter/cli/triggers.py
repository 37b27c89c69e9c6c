"""`sandex triggers`: the sandbox's magic values as docs/sandbox-triggers.md shows them."""

from __future__ import annotations

import argparse


def triggers(args: argparse.Namespace) -> int:
    """`sandex triggers`: print the page generated from the registry of triggers."""
    from sandex.engine.domain.sandbox_triggers import page

    print(page(), end="")
    return 0
