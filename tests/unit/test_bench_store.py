"""bench_store runs through: its start-up phase builds a state snapshot with the
writer's snapshot thread, as the composition root makes it (the bench built it the old
way, so `make bench`'s store figures stopped at the snapshot)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.run import BENCHES

ROOT = Path(__file__).resolve().parents[2]


def test_the_store_bench_builds_its_snapshot_and_starts_from_it() -> None:
    done = subprocess.run(
        [sys.executable, "bench/bench_store.py", "--skip-writer", "--replay-events", "2000"]
        + ["--tail", "500", "--runs", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = BENCHES["store"].parse(done.stdout)
    assert figures["snapshot_mb"] >= 0 and figures["replay_n"] == 1
    assert figures["tail"] == 500  # started from the snapshot, 500 events before the end
    assert "sandex verify: OK" in done.stdout
