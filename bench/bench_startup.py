"""Start-up from a state snapshot, two source trees paired on one log: the figure of
issue 20 ("start-up with 1,000,000 events from a state snapshot"), measured apart from
`make bench` (whose `store` rows build the log anew for every run).

    python bench/bench_startup.py --base TREE --head TREE [--events 1000000]
                                  [--tail 50000] [--rounds 5] [--dir DIR]

One log of `--events` events (bench/bench_store.py's `build_log`: sandbox deposits) is
built once and copied for each side; on its copy each tree's own snapshot thread builds
the state snapshot `--tail` events before the end (`take_snapshot`), since a snapshot is
read only by the code that wrote it. Then `--rounds` rounds, base then head, each a fresh
process timing `open_engine` with snapshots on, as a restarted server starts (imports
not counted): wall time, the process's CPU time (steadier on a shared machine), peak
resident memory, and the load average at its end. Each side's database is verified
(`sandex verify`) at the end.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import machine  # noqa: E402

SIDES = ("base", "head")

_SNAPSHOT = """
import sys
sys.path.insert(0, {tree!r})
from pathlib import Path
from bench.bench_store import take_snapshot
seconds, size = take_snapshot(Path({db!r}), {position})
print(seconds, size)
"""

_START = """
import os, resource, sys, time
sys.path.insert(0, {tree!r})
from sandex.engine import Settings, open_engine
wall, cpu = time.perf_counter(), time.process_time()
engine = open_engine({db!r}, Settings(clock="manual", snapshot_every_events=100000))
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
assert engine.loaded_from == {position}, engine.loaded_from
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(wall, cpu, rss, os.getloadavg()[0])
"""

_VERIFY = """
import sys
sys.path.insert(0, {tree!r})
from sandex.engine.tools.verify import verify
print(len(verify({db!r})))
"""


def _run(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()[-1].split()


def _copy(source: Path, target: Path) -> None:
    for suffix in ("", ".key"):
        shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")


def _spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}–{max(values):.{digits}f}]"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--base", required=True, help="source tree of the base revision")
    p.add_argument("--head", required=True, help="source tree of the head revision")
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--tail", type=int, default=50_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--dir", default=None, help="where the logs go (default: a temporary one)")
    args = p.parse_args()
    trees = {"base": str(Path(args.base).resolve()), "head": str(Path(args.head).resolve())}
    position = args.events - args.tail
    print(f"machine: {machine()}")
    work = Path(args.dir or tempfile.mkdtemp(prefix="sandex-startup-"))
    work.mkdir(parents=True, exist_ok=True)
    log = work / "log.db"
    if not log.exists():
        from bench.bench_store import build_log

        build_log(log, args.events)
    dbs = {side: work / f"{side}.db" for side in SIDES}
    for side in SIDES:
        _copy(log, dbs[side])
        seconds, size = _run(
            _SNAPSHOT.format(tree=trees[side], db=str(dbs[side]), position=position)
        )
        print(
            f"{side}: snapshot at {position:,} built in {float(seconds):.1f} s, {int(size) / 1e6:.1f} MB"
        )
    figures: dict[str, list[tuple[float, ...]]] = {side: [] for side in SIDES}
    for n in range(args.rounds):
        for side in SIDES:
            out = _run(_START.format(tree=trees[side], db=str(dbs[side]), position=position))
            figures[side].append(tuple(map(float, out)))
            wall, cpu, rss, load = figures[side][-1]
            print(
                f"round {n + 1} {side}: wall {wall:.3f} s, CPU {cpu:.3f} s, {rss:.0f} MiB, load {load:.2f}"
            )
    print(
        f"\nstart-up from the snapshot at {position:,} of {args.events:,} events, {args.rounds} rounds"
    )
    for k, name, digits in ((0, "wall s", 2), (1, "process CPU s", 2), (2, "peak RSS MiB", 0)):
        base = [f[k] for f in figures["base"]]
        head = [f[k] for f in figures["head"]]
        ratios = [h / b for b, h in zip(base, head, strict=True)]
        print(
            f"{name:14} base {_spread(base, digits)}  head {_spread(head, digits)}"
            f"  head/base {_spread(ratios)}"
        )
    loads = [f[3] for side in SIDES for f in figures[side]]
    print(f"load average {min(loads):.2f}–{max(loads):.2f}")
    for side in SIDES:
        problems = int(_run(_VERIFY.format(tree=trees[side], db=str(dbs[side])))[0])
        print(f"sandex verify {side}: {'ok' if problems == 0 else f'{problems} problems'}")
    if args.dir is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
