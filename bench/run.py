"""`make bench`: every benchmark of bench/, bounded, then docs/performance.md.

    python bench/run.py [--quick] [--out docs/performance.md]

Each benchmark is a plain script that runs alone; this runs each as a separate process
(several times for the cheap ones), reads the figures from what it prints, and writes
for each figure the median with min and max over the runs, the baseline measured in the
same run and the ratio to it, and the goal of issue 8 with met / not met. Expensive
benchmarks run fewer times, and the page says how many. `--quick` shrinks every size
(a smoke test of this script, not figures to publish).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import machine  # noqa: E402

NUM = r"([\d,]+(?:\.\d+)?)"


def _num(text: str) -> float:
    return float(text.replace(",", ""))


@dataclass
class Bench:
    script: str
    args: list[str]
    quick: list[str]
    runs: int
    # figure name -> regex whose first group is the value
    figures: dict[str, str]
    outputs: list[str] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0

    def run(self, quick: bool) -> None:
        runs = 1 if quick else self.runs
        for i in range(runs):
            cmd = [sys.executable, str(ROOT / "bench" / self.script)]
            cmd += self.quick if quick else self.args
            print(f"[{i + 1}/{runs}] {' '.join(cmd[1:])}", flush=True)
            started = time.perf_counter()
            done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
            self.seconds += time.perf_counter() - started
            out = "\n".join(line for line in done.stdout.splitlines() if "[info" not in line[:40])
            self.outputs.append(out)
            if done.returncode != 0:
                print(out + "\n" + done.stderr[-3000:], file=sys.stderr)
                continue
            for name, pattern in self.figures.items():
                m = re.search(pattern, out, re.MULTILINE)
                if m:
                    self.values.setdefault(name, []).append(_num(m.group(1)))
                else:
                    print(f"  {name}: not found in the output", file=sys.stderr)

    def stat(self, name: str) -> tuple[float, float, float, int] | None:
        v = self.values.get(name)
        if not v:
            return None
        return statistics.median(v), min(v), max(v), len(v)


BENCHES = {
    "store": Bench(
        "bench_store.py",
        ["--events", "100000", "--replay-events", "1000000", "--tail", "50000", "--runs", "5"],
        ["--events", "5000", "--replay-events", "30000", "--tail", "3000", "--runs", "2"],
        1,
        {
            "raw": rf"raw executemany.*?{NUM}/s",
            "raw_min": rf"raw executemany.*?min {NUM}/s",
            "raw_max": rf"raw executemany.*?max {NUM}/s",
            "writer": rf"writer, one-event commands.*?{NUM}/s",
            "writer_min": rf"writer, one-event commands.*?min {NUM}/s",
            "writer_max": rf"writer, one-event commands.*?max {NUM}/s",
            "deposits": rf"writer, sandbox deposits.*?{NUM}/s",
            "scan": rf"bare scan.*?{NUM}/s",
            "replay": rf"start-up replay, no snapshot\s+{NUM}/s",
            "replay_min": rf"start-up replay, no snapshot.*?min {NUM}/s",
            "replay_max": rf"start-up replay, no snapshot.*?max {NUM}/s",
            "replay_s": rf"start-up replay, no snapshot.*?\({NUM} s, median",
            "startup": rf"start-up from a snapshot\s+{NUM} s",
            "startup_min": rf"start-up from a snapshot.*?min {NUM}",
            "startup_max": rf"start-up from a snapshot.*?max {NUM};",
            "tail": rf"start-up from a snapshot.*?, {NUM} events replayed",
            "snapshot_s": rf"state snapshot built in the background in {NUM} s",
            "snapshot_mb": rf"state snapshot built.*?, {NUM} MB",
        },
    ),
    "matching": Bench(
        "bench_matching.py",
        ["--orders", "200000", "--engine-orders", "30000", "--runs", "5"],
        ["--orders", "20000", "--engine-orders", "3000", "--runs", "1"],
        3,
        {
            "plain": rf"plain price-time book \(baseline\)\s+{NUM}/s",
            "matching": rf"engine\.book \+ engine\.matching\s+{NUM}/s",
            "memory": rf"decide \+ apply, no store\s+{NUM}/s",
            "persist_full": rf"with persistence, FULL\s+{NUM}/s",
            "persist_normal": rf"with persistence, NORMAL\s+{NUM}/s",
        },
    ),
    "http_orders": Bench(
        "bench_http_orders.py",
        ["--seconds", "5"],
        ["--seconds", "2"],
        3,
        {
            "trivial_before": rf"trivial FastAPI endpoint, before\s+{NUM} req/s",
            "trivial_after": rf"trivial FastAPI endpoint, after\s+{NUM} req/s",
            "orders": rf"POST orders \(FULL\)\s+{NUM} req/s",
            "orders_p50": rf"POST orders \(FULL\).*?p50\s+{NUM} ms",
            "orders_p99": rf"POST orders \(FULL\).*?p99\s+{NUM} ms",
            "deposits": rf"POST sandbox deposit \(FULL\)\s+{NUM} req/s",
        },
    ),
    "withdrawals": Bench(
        "bench_withdrawals.py",
        ["--seconds", "5"],
        ["--seconds", "2"],
        3,
        {
            "trivial_before": rf"trivial FastAPI endpoint, before\s+{NUM} req/s",
            "trivial_after": rf"trivial FastAPI endpoint, after\s+{NUM} req/s",
            "withdrawals": rf"POST crypto-withdrawals \(FULL\)\s+{NUM} req/s",
            "withdrawals_p50": rf"POST crypto-withdrawals \(FULL\).*?p50\s+{NUM} ms",
            "withdrawals_p99": rf"POST crypto-withdrawals \(FULL\).*?p99\s+{NUM} ms",
        },
    ),
    "backtest": Bench(
        "bench_backtest.py",
        ["--points", "1000000", "--bars", "5000", "--orders", "3000", "--runs", "3"],
        ["--points", "50000", "--bars", "1000", "--orders", "300", "--runs", "1"],
        1,
        {
            "idle": rf"idle, nothing resting, no callbacks: {NUM} points/s",
            "ma_ours": rf"MA cross .*?sandex {NUM} s",
            "ma_theirs": rf"backtesting\.py {NUM} s",
            "ma_ratio": rf"sandex/backtesting\.py = {NUM}",
        },
    ),
    "memory": Bench(
        "bench_memory.py",
        ["--orders", "200000"],
        ["--orders", "5000"],
        1,
        {"per_order": rf"memory per resting order {NUM} bytes"},
    ),
    "scenarios": Bench(
        "bench_scenarios.py",
        ["--events", "100000", "--rounds", "300"],
        ["--events", "5000", "--rounds", "20"],
        1,
        {"steps": rf"long scenario: .*?= {NUM}/s"},
    ),
}


def _rate(x: float) -> str:
    return f"{x:,.0f}/s"


def _fmt(b: Bench, name: str, unit: Callable[[float], str] = _rate) -> str:
    s = b.stat(name)
    if s is None:
        return "not measured"
    med, lo, hi, n = s
    spread = f" (min {unit(lo)}, max {unit(hi)}, {n} runs)" if n > 1 else " (1 run)"
    return unit(med) + spread


def _med(b: Bench, name: str) -> float | None:
    s = b.stat(name)
    return None if s is None else s[0]


def _met(ok: bool | None) -> str:
    return "—" if ok is None else ("**met**" if ok else "**not met**")


def table() -> list[str]:
    st, mt, ho, wd, bt, mem = (
        BENCHES[k]
        for k in ("store", "matching", "http_orders", "withdrawals", "backtest", "memory")
    )
    rows: list[list[str]] = []

    def ratio(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None or b == 0 else a / b

    # 1. writer appends
    w, raw = _med(st, "writer"), _med(st, "raw")
    r = ratio(w, raw)
    rows.append(
        [
            "events appended/s through the writer (group commit, FULL), one-event commands",
            f"{_rate(w) if w else '—'} (min {_rate(_med(st, 'writer_min') or 0)}, max {_rate(_med(st, 'writer_max') or 0)}; median of 5 in one process)",
            f"raw `executemany`, 500/tx: {_rate(raw) if raw else '—'}",
            f"{r:.2f}" if r else "—",
            "≥ 0.50",
            _met(None if r is None else r >= 0.5),
        ]
    )
    # 2. replay
    rp, scan = _med(st, "replay"), _med(st, "scan")
    r = ratio(rp, scan)
    rows.append(
        [
            "events replayed/s at start-up, 1,000,000 events, full replay (no snapshot)",
            f"{_rate(rp) if rp else '—'} ({_med(st, 'replay_s') or 0:.1f} s; median of 2 in one process)",
            f"bare scan + orjson: {_rate(scan) if scan else '—'}",
            f"{r:.2f}" if r else "—",
            "≥ 0.50",
            _met(None if r is None else r >= 0.5),
        ]
    )
    # 3. start-up
    su = _med(st, "startup")
    rows.append(
        [
            "start-up time, 1,000,000 events, from the newest state snapshot",
            f"{su or 0:.2f} s (min {_med(st, 'startup_min') or 0:.2f}, max {_med(st, 'startup_max') or 0:.2f}; 5 runs; tail of {_med(st, 'tail') or 0:,.0f} events)",
            "—",
            "—",
            "≤ 3 s",
            _met(None if su is None else su <= 3.0),
        ]
    )
    # 4. matching
    m, plain = _med(mt, "matching"), _med(mt, "plain")
    rows.append(
        [
            "orders/s, matching alone, seeded 70% limit / 20% cancel / 10% market",
            _fmt(mt, "matching") + " (each run a median of 5)",
            f"plain SortedDict book: {_rate(plain) if plain else '—'}",
            f"{ratio(m, plain):.2f}" if m and plain else "—",
            "≥ 250,000/s",
            _met(None if m is None else m >= 250_000),
        ]
    )
    # 5. engine with persistence
    pf = _med(mt, "persist_full")
    r = ratio(pf, m)
    rows.append(
        [
            "orders/s, engine with persistence (FULL), same mix",
            _fmt(mt, "persist_full"),
            f"matching alone: {_rate(m) if m else '—'}",
            f"{r:.2f}" if r else "—",
            "≥ 0.25",
            _met(None if r is None else r >= 0.25),
        ]
    )
    # 6. HTTP orders
    o = _med(ho, "orders")
    tb, ta = _med(ho, "trivial_before"), _med(ho, "trivial_after")
    triv = (tb + ta) / 2 if tb and ta else None
    r = ratio(o, triv)
    p99 = _med(ho, "orders_p99")
    rows.append(
        [
            "HTTP order creations/s, 32 connections (wrk)",
            _fmt(ho, "orders")
            + f"; p50 {_med(ho, 'orders_p50') or 0:.1f} ms, p99 {p99 or 0:.1f} ms",
            f"trivial FastAPI endpoint: {_rate(triv) if triv else '—'}",
            f"{r:.2f}" if r else "—",
            "≥ 0.50, p99 ≤ 25 ms",
            _met(None if r is None or p99 is None else (r >= 0.5 and p99 <= 25)),
        ]
    )
    # 7. withdrawals
    wv = _med(wd, "withdrawals")
    tb, ta = _med(wd, "trivial_before"), _med(wd, "trivial_after")
    triv = (tb + ta) / 2 if tb and ta else None
    r = ratio(wv, triv)
    rows.append(
        [
            "HTTP withdrawals/s, 32 connections (wrk)",
            _fmt(wd, "withdrawals")
            + f"; p50 {_med(wd, 'withdrawals_p50') or 0:.1f} ms, p99 {_med(wd, 'withdrawals_p99') or 0:.1f} ms",
            f"trivial FastAPI endpoint: {_rate(triv) if triv else '—'}",
            f"{r:.2f}" if r else "—",
            "≥ 0.50",
            _met(None if r is None else r >= 0.5),
        ]
    )
    # 8. backtest
    idle, mar = _med(bt, "idle"), _med(bt, "ma_ratio")
    rows.append(
        [
            "backtest: idle reference points/s (1,000,000 points)",
            f"{_rate(idle) if idle else '—'} (median of 3 in one process)",
            "—",
            "—",
            "≥ 200,000/s",
            _met(None if idle is None else idle >= 200_000),
        ]
    )
    rows.append(
        [
            "backtest: MA-cross wall time, 5,000 hourly bars",
            f"sandex {_med(bt, 'ma_ours') or 0:.3f} s"
            + (
                f", backtesting.py {_med(bt, 'ma_theirs'):.3f} s"
                if _med(bt, "ma_theirs")
                else " (backtesting.py not installed)"
            ),
            "backtesting.py, same data",
            f"{mar:.2f}" if mar else "—",
            "≤ 1.0",
            _met(None if mar is None else mar <= 1.0),
        ]
    )
    # 9. memory
    per = _med(mem, "per_order")
    rows.append(
        [
            "memory per resting order (200,000 resting; grows linearly)",
            f"{per:,.0f} bytes" if per else "not measured",
            "—",
            "—",
            "report; < 1 KiB",
            _met(None if per is None else per < 1024),
        ]
    )
    head = ["figure", "measured (median, min–max)", "baseline in the same run", "ratio", "goal", ""]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def write(out: Path, started: float, quick: bool) -> None:
    lines = [
        "# Performance",
        "",
        "Written by `make bench` (`bench/run.py`); do not edit by hand. Each benchmark is a",
        "plain script of `bench/` that also runs alone; the exact commands are listed below.",
        "",
        f"Machine: {machine()}. Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())};"
        f" the whole run took {(time.perf_counter() - started) / 60:.1f} minutes.",
        "",
    ]
    if quick:
        lines += ["**`--quick` run: sizes shrunk, not figures to publish.**", ""]
    lines += [
        "Each figure is the median over separate runs of its benchmark, with min and max.",
        "The cheap benchmarks run their figure 5 times inside one process; the HTTP ones",
        "run 3 times (each run starts the trivial endpoint, measures it, then sandex, then",
        "the trivial endpoint again, and compares with the mean of the two); the 1,000,000-",
        "event start-up figures run 2 (full replay, ~15 s each) and 5 (from a snapshot)",
        "times in one process. The baseline of each figure is measured in the same run.",
        "",
    ]
    lines += table()
    lines += [
        "",
        "Notes on the figures:",
        "",
        "- HTTP latencies come from `wrk` (closed loop: 32 connections each waiting for its",
        "  answer), so they carry coordinated omission; a constant-arrival-rate generator",
        "  (wrk2, not in Debian's packages) is not used yet. p99.9 and max are not reported",
        "  by the benchmarks yet.",
        "- Start-up from a snapshot: the snapshot is the one the writer had built in the",
        "  background; the tail after it is replayed. Its size and the time to build it are",
        "  below. Full replay and snapshot loading are dominated by the state the log builds:",
        "  every deposit keeps its transfer record and its public feed item (with its JSON)",
        "  in the writer's memory.",
        "- `sandex verify` runs after the store, HTTP and withdrawal benchmarks (lines below).",
        "",
        "## Every benchmark's output",
        "",
    ]
    for name, b in BENCHES.items():
        args = " ".join(b.quick if quick else b.args)
        lines += [
            f"### {name}: `python bench/{b.script} {args}`",
            "",
            f"{len(b.outputs)} run(s), {b.seconds:.0f} s in all. Last run's output:",
            "",
            "```text",
            *(b.outputs[-1].strip().splitlines() if b.outputs else ["(not run)"]),
            "```",
            "",
        ]
        extra = b.values
        if name == "store" and extra.get("snapshot_s"):
            lines += [
                f"State snapshot: built in the background in {extra['snapshot_s'][0]:.1f} s"
                f" (replay from the previous snapshot or the start, pickle, zlib),"
                f" {extra.get('snapshot_mb', [0])[0]:.1f} MB compressed.",
                "",
            ]
    out.write_text("\n".join(lines).rstrip() + "\n")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md")
    p.add_argument("--only", nargs="*", default=None, help="benchmarks to run (default: all)")
    args = p.parse_args()
    started = time.perf_counter()
    for name, b in BENCHES.items():
        if args.only and name not in args.only:
            continue
        if not (ROOT / "bench" / b.script).exists():
            continue
        print(f"== {name}", flush=True)
        b.run(args.quick)
    write(args.out, started, args.quick)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
