"""Long schemathesis runs: `make fuzz` (or `python bench/fuzz.py --examples 500`).

The suite runs the same fuzzing with a few examples per operation (tests/api/test_fuzz.py);
this runs many more, against sandex's own /openapi.json in-process and against a running
`sandex serve` with the reference's v2-subset.json, and prints each operation's count."""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import schemathesis  # noqa: E402
import structlog  # noqa: E402

from tests.conftest import Sandbox, make_settings  # noqa: E402
from tests.support.fuzzing import OWN_CHECKS, REFERENCE_CHECKS, funded_headers, fuzz  # noqa: E402
from tests.support.reference import SUBSET_NAME, document, find, folder  # noqa: E402
from tests.support.server_helpers import Process  # noqa: E402

FIXED = {"profile_id": "default", "market": "BTCUSD"}


def own(examples: int, tmp: Path) -> list[str]:
    sb = Sandbox(tmp / "own.db", make_settings())
    for asset, amount in (("BTC", "10"), ("ETH", "100"), ("USD", "1000000")):
        sb.deposit(asset, amount)
    schema = schemathesis.openapi.from_asgi("/openapi.json", sb.app)
    failures, calls = fuzz(
        schema,
        headers=sb.headers,
        max_examples=examples,
        checks=OWN_CHECKS,
        fixed_path=FIXED,
        report=print,
    )
    sb.close()
    problems = sb.verify()
    print(f"own document: {calls} calls, {len(failures)} failures, verify: {problems or 'OK'}")
    return failures + problems


def reference(examples: int, tmp: Path) -> list[str]:
    if find(SUBSET_NAME) is None:
        print(f"reference document absent ({folder() / SUBSET_NAME}): skipped")
        return []
    server = Process(tmp / "reference.db", tmp / "server.log")
    try:
        headers = funded_headers(server.base)
        failures, calls = fuzz(
            schemathesis.openapi.from_dict(document()),
            headers=headers,
            max_examples=examples,
            checks=REFERENCE_CHECKS,
            base_url=f"{server.base}/v2",
            fixed_path=FIXED,
            report=print,
        )
    finally:
        server.stop()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sandex.api_adapter.cli",
            "verify",
            "--db",
            str(tmp / "reference.db"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    print(
        f"reference document: {calls} calls, {len(failures)} failures, verify: {done.stdout.strip()}"
    )
    return failures + ([done.stdout.strip()] if done.returncode else [])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--examples", type=int, default=200, help="examples per operation and mode")
    p.add_argument("--only", choices=["own", "reference"], default=None)
    args = p.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    started = time.monotonic()
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "own"):
            failures += own(args.examples, Path(tmp))
        if args.only in (None, "reference"):
            failures += reference(args.examples, Path(tmp))
    print(f"{time.monotonic() - started:.0f} s")
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
