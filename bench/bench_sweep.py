"""Sweep speed: a grid of `--combinations` MA-cross backtests run one after another, then
with joblib's processes (`--jobs`, default 2), and the speed-up of the second.

    python bench/bench_sweep.py [--combinations 100] [--bars 5000] [--jobs 2] [--rounds 5]

The strategy is `scenarios/backtests/ma_cross.py` (fast x slow grid, 0.1% taker fee) on
`--bars` hourly bars (5,000 by default, the size of issue 17's SMA-cross figure), the
seeded mean-reverting path of bench_backtest.py. Starting a worker (a fresh interpreter importing the engine) costs about a
second, so the speed-up of a sweep of very short runs is lower. Each round times both, the order alternating between rounds;
each joblib sweep starts its workers afresh (the loky pool of the round before is shut
down first), as one `sandex sweep` does, so the figure includes worker start-up. The
figure is the median over the rounds of the per-round speed-up. Every round's rows are
compared: serial and joblib must give the same rows, log hashes included. After the
rounds, one more joblib sweep on a pool already running (warm: a second sweep in a
session, an Optuna search's later batches, a Dask cluster already up) shows what worker
start-up costs. Each timing also says what share of the cores it had (CPU time of the
process and of its workers over the wall time): on 2 shared cores anything else running
takes from the parallel run first, and the figure is only the machine's when both shares
are near 100%. The load average is printed too.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, measured_tree  # noqa: E402

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

from bench.bench_backtest import bars_file  # noqa: E402
from sandex.engine.backtest import sweep  # noqa: E402

STRATEGY = f"{ROOT / 'scenarios/backtests/ma_cross.py'}:MaCross"


def grid(combinations: int) -> dict[str, list[int]]:
    """fast x slow, about `combinations` of them (fast 2.., slow 20.. by 5)."""
    side = max(1, round(combinations**0.5))
    other = max(1, combinations // side)
    return {"fast": list(range(2, 2 + side)), "slow": list(range(20, 20 + 5 * other, 5))}


def fresh_pool() -> None:
    """Shut joblib's reusable loky pool down, if one runs (asking for it would start
    one): the next sweep starts its own workers."""
    from joblib.externals.loky import reusable_executor

    pool = reusable_executor._executor
    if pool is not None:
        pool.shutdown(wait=True)


def cpu_seconds() -> float:
    """CPU time of this process and of its children that have ended (loky's workers are
    its children, counted once their pool is shut down)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--combinations", type=int, default=100)
    p.add_argument("--bars", type=int, default=5000)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    print(f"machine: {machine()}")
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="sandex-bench-sweep-") as tmp:
        data = bars_file(Path(tmp), args.bars)
        axes = grid(args.combinations)
        n = len(axes["fast"]) * len(axes["slow"])
        print(
            f"sweep of {n} combinations: MA cross, fast {axes['fast'][0]}..{axes['fast'][-1]}"
            f" x slow {axes['slow'][0]}..{axes['slow'][-1]}, {args.bars} hourly bars each,"
            f" 0.1% taker fee"
        )
        options = {"taker_fee": "0.001"}
        ups, serials, parallels = [], [], []
        same = True
        for r in range(args.rounds):
            timed: dict[str, float] = {}
            cpu: dict[str, float] = {}
            rows = {}
            for kind in ("serial", "joblib") if r % 2 == 0 else ("joblib", "serial"):
                fresh_pool()
                cpu_before = cpu_seconds()
                started = time.perf_counter()
                result = sweep(
                    STRATEGY, data, "BTCUSD", grid=axes, executor=kind, n_jobs=args.jobs, **options
                )
                timed[kind] = time.perf_counter() - started
                fresh_pool()  # its workers end, and their CPU time is counted
                cpu[kind] = cpu_seconds() - cpu_before
                rows[kind] = result.rows
                failed = result.errors
                if failed:
                    print(f"  {len(failed)} runs failed: {failed[0].error}")
                    same = False
            same = same and rows["serial"] == rows["joblib"]
            up = timed["serial"] / timed["joblib"]
            ups.append(up)
            serials.append(timed["serial"])
            parallels.append(timed["joblib"])
            # The share of the cores a run had: below 100% (of one core, of --jobs cores)
            # another process of the machine took the rest.
            print(
                f"  round {r + 1}: one after another {timed['serial']:.2f} s"
                f" ({cpu['serial'] / timed['serial']:.0%} of a core), joblib {args.jobs} jobs"
                f" {timed['joblib']:.2f} s ({cpu['joblib'] / timed['joblib'] / args.jobs:.0%}"
                f" of {args.jobs} cores, workers started in the round): {up:.2f}x"
            )
        print(
            f"sweep speed-up, joblib {args.jobs} jobs over one after another:"
            f" {statistics.median(ups):.2f}x (median of {len(ups)} rounds, min {min(ups):.2f}"
            f" max {max(ups):.2f}; goal >= 1.6x)"
        )
        print(
            f"  one after another {statistics.median(serials):.2f} s"
            f" ({statistics.median(serials) / n * 1000:.0f} ms a run),"
            f" joblib {statistics.median(parallels):.2f} s (medians)"
        )
        sweep(STRATEGY, data, "BTCUSD", grid={"fast": [2, 3]}, executor="joblib", n_jobs=args.jobs)
        started = time.perf_counter()
        warm = sweep(
            STRATEGY, data, "BTCUSD", grid=axes, executor="joblib", n_jobs=args.jobs, **options
        )
        warm_s = time.perf_counter() - started
        same = same and warm.rows == rows["serial"]
        print(
            f"  warm pool (workers already running, 1 run): joblib {warm_s:.2f} s,"
            f" {statistics.median(serials) / warm_s:.2f}x over the median one after another"
        )
        print(
            f"  load average (1 min) {os.getloadavg()[0]:.2f} at the end, {load:.2f} at the start"
        )
        print(
            "verify (serial and joblib rows identical, log hashes included): "
            + ("OK" if same else "rows differ or runs failed")
        )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
