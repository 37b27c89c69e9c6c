"""`sandex openapi`: the OpenAPI document a server serves at /openapi.json, printed, so a
user can generate a client for the API's operations without starting a server."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def openapi(args: argparse.Namespace) -> int:
    """`sandex openapi`: 0 with the document on stdout (or in `--out`)."""
    from sandex.api_adapter.bootstrap import served_on
    from sandex.api_adapter.world import World
    from sandex.engine.config.settings import Settings

    # The document is the app's, and an app is a world's: one on a throwaway database,
    # never started (no clock, no scheduler, nothing served).
    with tempfile.TemporaryDirectory(prefix="sandex-openapi-") as tmp:
        db, settings = Path(tmp) / "openapi.db", Settings(clock="manual")
        # never started, so the bootstrap client is never made
        world = World.open(db, settings, bootstrap=served_on("127.0.0.1"), worlds=False)
        try:
            document = world.app.openapi()
        finally:
            world.stop()
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
