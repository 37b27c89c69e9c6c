"""The system's Chromium for the console's browser tests and bench/bench_console.py,
driven by Playwright (docs/console.md says why): found on PATH, launched headless with
every name resolving nowhere, so the only host a page reaches is a loopback address."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# each browser test's screenshots (docs/testing.md); ignored by git
ARTEFACTS = ROOT / ".artefacts" / "console"
# --no-sandbox: the tests may run as root (CI does), where Chromium's sandbox refuses to
# start; the pages are the console's own, on loopback.
FLAGS = [
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


def chromium() -> str | None:
    """Debian's `chromium` (what `make browser` installs), or another on PATH."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_or_skip() -> str:
    """The browser's path; without one a test skips saying why, except in CI, which
    installs it (`make browser`) and so fails instead of passing with nothing run."""
    found = chromium()
    if found is None:
        reason = "chromium not found on PATH (make browser installs Debian's chromium)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def launch(playwright: Any, executable: str) -> Any:
    """A headless Chromium of the system, not one of Playwright's downloads."""
    return playwright.chromium.launch(executable_path=executable, headless=True, args=FLAGS)
