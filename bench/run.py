"""`make bench`: every benchmark of bench/, bounded, then docs/performance.md.

    python bench/run.py [--quick] [--runs N] [--only http_orders ...] [--out FILE]

Each benchmark is a plain script that runs alone; this runs each as a separate process
(five times; bench_store once, repeating each of its figures five times inside its one
process because it builds a 1,000,000-event log first; bench_scenarios, which has no
figure of issue 8, once; bench_sweep, bench_cli and bench_decide once, each with its
five rounds in one process), reads the figures from what it prints, and writes for each figure the
median with min and max over
the runs, the baseline measured in the same run and the median of the per-run ratios to
it, the goal of issue 8 with met / not met, the open-loop latencies of the HTTP routes
(p50, p99, p99.9, max) and what `sandex verify` said after each benchmark that writes a
database.
`--quick` shrinks every size and runs each benchmark once (a smoke test of this script,
not figures to publish); `--runs` overrides the number of runs.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import machine  # noqa: E402

NUM = r"([\d,]+(?:\.\d+)?)"
RUNS = 5
# the open-loop line of a route: offered rate, p50, p99, p99.9, max
OPEN = (
    r"open loop, {name}\s+{n} req/s offered\s+p50\s+{n} ms\s+p99\s+{n} ms"
    r"\s+p99\.9\s+{n} ms\s+max\s+{n} ms"
)
LATENCY_KEYS = ("offered", "p50", "p99", "p99.9", "max")


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
    # open-loop route name -> the name as the script prints it (a regex)
    routes: dict[str, str] = field(default_factory=dict)
    verifies: bool = True
    timeout: float = 240  # seconds for one run: `make bench` stays bounded
    outputs: list[str] = field(default_factory=list)
    per_run: list[dict[str, float]] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    failed: int = 0
    used: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def run(self, quick: bool, runs: int | None) -> None:
        runs = runs or (1 if quick else self.runs)
        for i in range(runs):
            cmd = [sys.executable, str(ROOT / "bench" / self.script)]
            cmd += self.quick if quick else self.args
            self.used = cmd[2:]
            print(f"[{i + 1}/{runs}] {' '.join(cmd[1:])}", flush=True)
            started = time.perf_counter()
            try:
                done = subprocess.run(
                    cmd, cwd=ROOT, capture_output=True, text=True, check=False, timeout=self.timeout
                )
            except subprocess.TimeoutExpired as e:
                out = e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or ""
                done = subprocess.CompletedProcess(cmd, -1, out, f"killed after {self.timeout} s")
            self.seconds += time.perf_counter() - started
            out = "\n".join(line for line in done.stdout.splitlines() if "[info" not in line[:40])
            self.outputs.append(out)
            if done.returncode != 0:
                self.failed += 1
                print(out + "\n" + done.stderr[-3000:], file=sys.stderr)
            # A run that failed in one phase keeps the figures its other phases printed.
            self.per_run.append(self.parse(out))
            said = re.findall(r"\bverify\b[^:\n]*: (.*)$", out, re.M)
            if said:
                bad = [s for s in said if not s.startswith("OK")]
                self.verified.append(bad[0] if bad else "OK")

    def parse(self, out: str) -> dict[str, float]:
        """The figures in one run's output (bench/ab.py reads its runs with this too)."""
        values: dict[str, float] = {}
        for name, pattern in self.figures.items():
            m = re.search(pattern, out, re.MULTILINE)
            if m:
                values[name] = _num(m.group(1))
            else:
                print(f"  {name}: not found in the output", file=sys.stderr)
        for route, printed in self.routes.items():
            m = re.search(OPEN.format(name=printed, n=NUM), out)
            if m:
                for key, group in zip(LATENCY_KEYS, m.groups(), strict=True):
                    values[f"{route}.{key}"] = _num(group)
            else:
                print(f"  open loop of {route}: not found in the output", file=sys.stderr)
        return values

    def arg(self, name: str) -> str:
        """The value of option `name` in the last command run ("?" when absent)."""
        return self.used[self.used.index(name) + 1] if name in self.used else "?"

    def values(self, name: str) -> list[float]:
        return [r[name] for r in self.per_run if name in r]

    def ratios(self, num: str, den: str | tuple[str, str]) -> list[float]:
        """The figure over its baseline, run by run (a baseline given as two names is the
        mean of the two: the trivial endpoint before and after)."""
        out = []
        for r in self.per_run:
            names = (den,) if isinstance(den, str) else den
            if num in r and all(n in r for n in names):
                base = sum(r[n] for n in names) / len(names)
                if base:
                    out.append(r[num] / base)
        return out


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
            "writer_ratio": rf"writer, one-event commands.*?ratio {NUM}",
            "deposits": rf"writer, sandbox deposits.*?{NUM}/s",
            "scan": rf"bare scan.*?{NUM}/s",
            "replay": rf"start-up replay, no snapshot\s+{NUM}/s",
            "replay_min": rf"start-up replay, no snapshot.*?min {NUM}/s",
            "replay_max": rf"start-up replay, no snapshot.*?max {NUM}/s",
            "replay_s": rf"start-up replay, no snapshot.*?\({NUM} s, median",
            "replay_n": rf"start-up replay, no snapshot.*?median of {NUM}\)",
            "startup": rf"start-up from a snapshot\s+{NUM} s",
            "startup_min": rf"start-up from a snapshot.*?min {NUM}",
            "startup_max": rf"start-up from a snapshot.*?max {NUM};",
            "tail": rf"start-up from a snapshot.*?, {NUM} events replayed",
            "snapshot_s": rf"state snapshot built in the background in {NUM} s",
            "snapshot_mb": rf"state snapshot built.*?, {NUM} MB",
        },
        timeout=900,
    ),
    "matching": Bench(
        "bench_matching.py",
        ["--orders", "200000", "--engine-orders", "20000", "--runs", "5"],
        ["--orders", "20000", "--engine-orders", "3000", "--runs", "1"],
        RUNS,
        {
            "plain": rf"plain price-time book \(baseline\)\s+{NUM}/s",
            "matching": rf"engine\.book \+ engine\.matching\s+{NUM}/s",
            "matching_n": rf"matching alone \(median of {NUM}\)",
            "memory": rf"decide \+ apply, no store\s+{NUM}/s",
            "persist_full": rf"with persistence, FULL\s+{NUM}/s",
            "persist_normal": rf"with persistence, NORMAL\s+{NUM}/s",
        },
    ),
    "http_orders": Bench(
        "bench_http_orders.py",
        ["--seconds", "3", "--warmup", "1", "--open-seconds", "4"],
        ["--seconds", "1", "--warmup", "1"],
        RUNS,
        {
            "trivial_before": rf"trivial FastAPI endpoint, before\s+{NUM} req/s",
            "trivial_after": rf"trivial FastAPI endpoint, after\s+{NUM} req/s",
            "orders": rf"POST orders \(FULL\)\s+{NUM} req/s",
            "ratio": rf"ratio orders / trivial.*?: {NUM}",
            "deposits": rf"POST sandbox deposit \(FULL\)\s+{NUM} req/s",
        },
        routes={"orders": r"POST orders \(FULL\)", "trivial": "trivial FastAPI endpoint"},
    ),
    "withdrawals": Bench(
        "bench_withdrawals.py",
        ["--seconds", "3", "--warmup", "1", "--open-seconds", "4"],
        ["--seconds", "1", "--warmup", "1"],
        RUNS,
        {
            "trivial_before": rf"trivial FastAPI endpoint, before\s+{NUM} req/s",
            "trivial_after": rf"trivial FastAPI endpoint, after\s+{NUM} req/s",
            "withdrawals": rf"POST crypto-withdrawals \(FULL\)\s+{NUM} req/s",
            "ratio": rf"ratio withdrawals / trivial.*?: {NUM}",
        },
        routes={
            "withdrawals": r"POST crypto-withdrawals \(FULL\)",
            "trivial": "trivial FastAPI endpoint",
        },
    ),
    "backtest": Bench(
        "bench_backtest.py",
        ["--points", "1000000", "--bars", "5000", "--orders", "3000", "--runs", "1"],
        ["--points", "50000", "--bars", "1000", "--orders", "300", "--runs", "1"],
        RUNS,
        {
            "idle": rf"idle, nothing resting, no callbacks: {NUM} points/s",
            "ma_ours": rf"MA cross .*?sandex {NUM} s",
            "ma_theirs": rf"backtesting\.py {NUM} s",
            "ma_ratio": rf"sandex/backtesting\.py = {NUM}",
        },
    ),
    # speed-up of joblib over one after another; five rounds inside one process
    "sweep": Bench(
        "bench_sweep.py",
        ["--combinations", "100", "--bars", "5000", "--jobs", "2", "--rounds", "5"],
        ["--combinations", "9", "--bars", "200", "--jobs", "2", "--rounds", "1"],
        1,
        {
            "speedup": rf"sweep speed-up, joblib \d+ jobs over one after another: {NUM}x",
            "speedup_min": rf"sweep speed-up.*?min {NUM}",
            "speedup_max": rf"sweep speed-up.*?max {NUM};",
            "rounds": rf"sweep speed-up.*?median of {NUM} rounds",
            "serial_s": rf"one after another {NUM} s \(",
            "joblib_s": rf"\), joblib {NUM} s \(medians\)",
            "warm": rf"warm pool .*?, {NUM}x over",
            "combinations": rf"sweep of {NUM} combinations",
        },
        timeout=600,
    ),
    # issue 20: the command line's start; five rounds inside one process
    "cli": Bench(
        "bench_cli.py",
        ["--runs", "5"],
        ["--runs", "1"],
        1,
        {
            f"{name}{end}": rf"{line}: {where}"
            for name, line in (
                ("help_s", r"sandex --help"),
                ("backtest_s", r"sandex backtest, 600 hourly bars, MA cross"),
                ("serve_s", r"sandex serve, empty database, to its first answer"),
            )
            for end, where in (
                ("", rf"{NUM} s"),
                ("_min", rf".*?\[{NUM}–"),
                ("_max", rf".*?–{NUM}\]"),
            )
        },
    ),
    "memory": Bench(
        "bench_memory.py",
        ["--orders", "1000000"],
        ["--orders", "5000"],
        RUNS,
        {"per_order": rf"memory per resting order {NUM} bytes"},
        verifies=False,
    ),
    "postgres": Bench(
        "bench_postgres.py",
        ["--events", "20000", "--seconds", "3", "--replay-events", "1000000", "--runs", "5"],
        ["--events", "2000", "--seconds", "1", "--replay-events", "20000", "--tail", "2000"]
        + ["--runs", "2"],
        1,
        {
            **{
                f"{name}{end}": rf"{line}.*?{where} {NUM}{unit}"
                for name, line, unit in (
                    ("pg_raw", r"raw COPY into events", "/s"),
                    ("pg_writer", r"writer on PostgreSQL, one-event", "/s"),
                    ("pg_http_sqlite", r"HTTP POST orders, SQLite FULL", " req/s"),
                    ("pg_http", r"HTTP POST orders, PostgreSQL FULL", " req/s"),
                    ("pg_p99", r"postgresql open-loop p99 over the runs:", " ms"),
                    ("pg_sqlite_p99", r"sqlite open-loop p99 over the runs:", " ms"),
                    ("pg_startup", r"start-up on PostgreSQL from a snapshot", " s"),
                    ("pg_failover", r"failover, SIGKILL to the standby's first", " s"),
                )
                for end, where in (("", r"\)?"), ("_min", "min"), ("_max", "max"))
            },
            "pg_writer_ratio": rf"writer on PostgreSQL, one-event.*?ratio {NUM}",
            "pg_http_ratio": rf"HTTP POST orders, PostgreSQL FULL.*?ratio {NUM}",
            "pg_lost": rf"missing from the log: {NUM}",
            "pg_snapshot_at": rf"start-up on PostgreSQL.*?snapshot at {NUM}",
            "pg_acknowledged": rf"acknowledged writes: {NUM}",
        },
        timeout=1800,
    ),
    "decide": Bench(
        "bench_decide.py",
        ["--orders", "20000", "--count-orders", "3000", "--rounds", "5"],
        ["--orders", "2000", "--count-orders", "500", "--rounds", "2"],
        1,
        {
            "calls": rf"Python calls per order: {NUM}",
            "decided_calls": rf"Python calls per order: .*?\({NUM} in the decision",
            "cpu_us": rf"CPU per order: {NUM}",
            "cpu_us_min": rf"CPU per order: .*?min {NUM}",
            "cpu_us_max": rf"CPU per order: .*?max {NUM}",
            "memory": rf"decided alone on the memory store\s+{NUM}/s",
            "persisted": rf"with persistence \(SQLite FULL, writer thread\)\s+{NUM}/s",
            "persisted_min": rf"with persistence \(SQLite FULL.*?min {NUM}/s",
            "persisted_max": rf"with persistence \(SQLite FULL.*?max {NUM}/s",
            "persisted_ratio": rf"ratio persistence / decided alone: {NUM}",
            "persisted_ratio_min": rf"ratio persistence / decided alone: .*?min {NUM}",
            "persisted_ratio_max": rf"ratio persistence / decided alone: .*?max {NUM}",
            "cpu_ratio": rf"CPU ratio decided alone / persistence: {NUM}",
            "cpu_ratio_min": rf"CPU ratio decided alone / persistence: .*?min {NUM}",
            "cpu_ratio_max": rf"CPU ratio decided alone / persistence: .*?max {NUM}",
        },
    ),
    "wal": Bench(
        "bench_wal.py",
        ["--orders", "6000", "--runs", "1"],
        ["--orders", "500", "--runs", "1"],
        RUNS,
        {
            "wal_kib": rf"WAL bytes per order: {NUM}",
            "writer_cpu_us": rf"engine threads' CPU per order: {NUM}",
        },
    ),
    # issue 30: a store's fork (SQLite, and PostgreSQL on a throwaway cluster); five
    # rounds of 50 forks in one process
    "fork": Bench(
        "bench_fork.py",
        ["--events", "1000", "--forks", "50", "--rounds", "5", "--postgres"],
        ["--events", "200", "--forks", "5", "--rounds", "1"],
        1,
        {
            f"{name}_{q}_ms{end}": rf"fork at the head, {store}: .*?{q} {where}"
            for name, store in (
                ("fork", "SQLite"),
                ("pg_fork", "PostgreSQL"),
                ("pg_paced", "PostgreSQL, paced"),
            )
            for q in ("p50", "p99")
            for end, where in (
                ("", rf"{NUM} ms"),
                ("_min", rf"[\d.]+ ms \[{NUM}–"),
                ("_max", rf"[\d.]+ ms \[[\d.]+–{NUM}\]"),
            )
        },
        verifies=False,
        timeout=900,
    ),
    # issue 30: worlds through HTTP, each figure's rounds in one process
    "worlds": Bench(
        "bench_worlds.py",
        ["--rounds", "5", "--alive", "1000", "--alive-seconds", "240"],
        ["--rounds", "2", "--creates", "5", "--unloads", "3", "--alive", "20", "--seconds", "1"],
        1,
        {
            f"{name}{end}": rf"{line}{where}"
            for name, line in (
                ("create_ms", r"create an empty world, ms: p50 "),
                ("create_p99_ms", r"create an empty world, ms: .*?; p99 "),
                ("first_ms", r"first request to an unloaded world, ms: p50 "),
                ("loaded_ms", r"first request to an unloaded world, .*?loaded: p50 "),
                ("world_ratio", r"a non-default world over the default world: ratio "),
                ("world_rps", r"a non-default world over the default world: .*?; a world "),
                ("default_rps", r"a non-default world over the default world: .*?; default world "),
                ("eight_ratio", r"8 worlds at once over one world alone: ratio "),
                ("eight_rps", r"8 worlds at once over one world alone: .*?; 8 worlds "),
                ("one_rps", r"8 worlds at once over one world alone: .*?; one world "),
                ("rss_mib", r"worlds alive, .*?RSS per world, MiB: "),
            )
            for end, where in (
                ("", NUM),
                ("_min", rf"[\d.,]+ \[{NUM}–"),
                ("_max", rf"[\d.,]+ \[[\d.,]+–{NUM}\]"),
            )
        }
        | {
            "alive": rf"{NUM} worlds alive",
            "rss_whole_mib": rf"worlds alive, .*?whole: {NUM} MiB a world",
            "answered": rf"worlds alive, .*?answered {NUM} of",
            "threads_before": rf"worlds alive, .*?threads {NUM} to",
            "threads_after": rf"worlds alive, .*?threads [\d,]+ to {NUM}",
        },
        timeout=1200,
    ),
    # issue 31: the fault gate's cost, paired against a server without it, in one process
    "faults": Bench(
        "bench_faults.py",
        ["--rounds", "5"],
        ["--rounds", "1", "--seconds", "1"],
        1,
        {
            f"{name}{end}": rf"{line}{where}"
            for name, line in (
                (
                    "gate_ratio",
                    r"HTTP orders/s, the fault gate with no rule armed over without the gate: ratio ",
                ),
                (
                    "gate_rps",
                    r"HTTP orders/s, the fault gate with no rule armed over .*?; gate, no rule ",
                ),
                (
                    "without_rps",
                    r"HTTP orders/s, the fault gate with no rule armed over .*?; without the gate ",
                ),
                (
                    "other_ratio",
                    r"HTTP orders/s, 100 rules of other operations armed over .*?: ratio ",
                ),
                (
                    "other_rps",
                    r"HTTP orders/s, 100 rules of other operations armed .*?; 100 rules, other operations ",
                ),
                (
                    "same_ratio",
                    r"HTTP orders/s, 100 CreateOrder rules whose body does not match .*?: ratio ",
                ),
                (
                    "same_rps",
                    r"HTTP orders/s, 100 CreateOrder rules whose body .*?; 100 rules, CreateOrder ",
                ),
                ("gate_cpu_ratio", r"per server CPU second, the fault gate with .*?: ratio "),
                ("other_cpu_ratio", r"per server CPU second, 100 rules of other .*?: ratio "),
                ("same_cpu_ratio", r"per server CPU second, 100 CreateOrder rules .*?: ratio "),
            )
            for end, where in (
                ("", NUM),
                ("_min", rf"[\d.,]+ \[{NUM}–"),
                ("_max", rf"[\d.,]+ \[[\d.,]+–{NUM}\]"),
            )
        },
        timeout=900,
    ),
    # issue 31: the request log through HTTP, each figure's rounds in one process
    "requests": Bench(
        "bench_requests.py",
        ["--rounds", "5", "--fill", "100000"],
        ["--rounds", "1", "--fill", "5000", "--requests", "20", "--seconds", "1"],
        1,
        {
            f"{name}{end}": rf"{line}{where}"
            for name, line in (
                ("first_p50", r"first page at [\d,]+ recorded requests, the bootstrap.*?p50 "),
                ("first_p99", r"first page at [\d,]+ recorded requests, the bootstrap.*?p99 "),
                ("tenant_p50", r"first page at [\d,]+ recorded requests, a tenant.*?p50 "),
                ("log_ratio", r"request log kept \(100,000\) over none: ratio "),
                ("kept_rps", r"request log kept \(100,000\) over none: .*?; kept "),
                ("none_rps", r"request log kept \(100,000\) over none: .*?; none "),
                ("layer_added", r"access log layer per request, .*?; added "),
                ("layer_without", r"access log layer per request, .*?; without "),
            )
            for end, where in (
                ("", NUM),
                ("_min", rf"[\d.,]+ \[{NUM}–"),
                ("_max", rf"[\d.,]+ \[[\d.,]+–{NUM}\]"),
            )
        }
        | {"fill": rf"first page at {NUM} recorded requests"},
        timeout=900,
    ),
    # issue 33: the console's timeline, live view and assets, each figure's rounds in one process
    "console": Bench(
        "bench_console.py",
        ["--events", "1000000", "--rounds", "5"],
        ["--events", "5000", "--rounds", "1", "--calls", "10", "--commits", "5"],
        1,
        {
            f"{name}{end}": rf"{line}{where}"
            for name, line in (
                ("page_p50", r"timeline first page, [\d,]+ events, ms at the client p50 "),
                ("small_p50", r"timeline first page, a world of one page, ms p50 "),
                (
                    "page_ratio",
                    r"timeline first page, [\d,]+ events over a world of one page: ratio ",
                ),
                ("live_p50", r"commit to its event on an open timeline, ms p50 "),
                ("post_p50", r"the deposit's POST alone, ms p50 "),
                ("load_bytes", r"console first load, bytes transferred "),
            )
            for end, where in (
                ("", NUM),
                ("_min", rf"[\d.,]+ \[{NUM}–"),
                ("_max", rf"[\d.,]+ \[[\d.,]+–{NUM}\]"),
            )
        }
        | {"events": rf"timeline first page, {NUM} events, ms"},
        timeout=900,
    ),
    # issue 32: the pytest plugin's costs, each figure's rounds in one process
    "plugin": Bench(
        "bench_plugin.py",
        ["--tests", "200", "--rounds", "5", "--workers", "2"],
        ["--tests", "10", "--rounds", "1", "--workers", "2"],
        1,
        {
            f"{name}{end}": rf"{line}{where}"
            for name, line in (
                (
                    "world_p50_ms",
                    r"sandex_world per test \(fork, login, teardown\), thread mode: p50: ",
                ),
                (
                    "world_p99_ms",
                    r"sandex_world per test \(fork, login, teardown\), thread mode: p99: ",
                ),
                ("setup_ms", r"sandex_world per test, its setup alone: p50: "),
                ("login_ms", r"sandex_world per test, its login alone: p50: "),
                ("teardown_ms", r"sandex_world per test, its teardown alone: p50: "),
                ("start_s", r"session start, thread mode: pytest start to the first test: "),
                ("server_s", r"session start, thread mode: the sandex_server fixture: "),
                ("n0_wall_s", r"example suite, -n 0: wall time: "),
                ("n0_overhead_pct", r"example suite, -n 0: fixture overhead: "),
                ("n2_wall_s", r"example suite, -n 2: wall time: "),
                ("n2_overhead_pct", r"example suite, -n 2: fixture overhead: "),
            )
            for end, where in (
                ("", NUM),
                ("_min", rf"[\d.,]+ [^\[\n]*\[{NUM}–"),
                ("_max", rf"[\d.,]+ [^\[\n]*\[[\d.,]+–{NUM}\]"),
            )
        }
        | {"differing": rf"tests whose outcome or observations differ: {NUM}"},
        verifies=False,
        timeout=1800,
    ),
    "scenarios": Bench(
        "bench_scenarios.py",
        ["--events", "100000", "--rounds", "300"],
        ["--events", "5000", "--rounds", "20"],
        1,
        {"steps": rf"long scenario: .*?= {NUM}/s"},
    ),
}


@dataclass
class Stat:
    median: float
    low: float
    high: float
    runs: str


def per_run(b: Bench, name: str, note: str = "") -> Stat | None:
    v = b.values(name)
    if not v:
        return None
    how = f"{len(v)} runs{note}" if len(v) > 1 else f"1 run{note}"
    return Stat(statistics.median(v), min(v), max(v), how)


def in_process(b: Bench, name: str, runs: str) -> Stat | None:
    """A figure that its script repeats inside one process and prints as a median with
    min and max (bench_store)."""
    v, lo, hi = b.values(name), b.values(f"{name}_min"), b.values(f"{name}_max")
    if not v:
        return None
    return Stat(v[0], lo[0] if lo else v[0], hi[0] if hi else v[0], runs)


def _rate(x: float) -> str:
    return f"{x:,.0f}/s"


def _secs(x: float) -> str:
    return f"{x:.2f} s"


def _bytes(x: float) -> str:
    return f"{x:,.0f} bytes"


def _ratio(values: list[float] | float | None) -> float | None:
    if isinstance(values, list):
        return statistics.median(values) if values else None
    return values


def _met(ok: bool | None) -> str:
    return "—" if ok is None else ("**met**" if ok else "**not met**")


def _verify(b: Bench) -> str:
    if not b.verifies:
        return "—"
    if not b.verified:
        return "not run" if not b.per_run else "not printed"
    ok = sum(1 for v in b.verified if v == "OK")
    return f"OK ({ok} of {len(b.verified)})" if ok == len(b.verified) else b.verified[-1]


def _latency(b: Bench, route: str) -> str:
    """Open-loop latencies: the median over the runs of each percentile, and the spread
    of p99 and the worst max over the runs."""
    got = {k: b.values(f"{route}.{k}") for k in LATENCY_KEYS}
    if not got["p99"]:
        return "not measured"
    med = {k: statistics.median(v) for k, v in got.items()}
    text = (
        f"p50 {med['p50']:.1f} / p99 {med['p99']:.1f} / p99.9 {med['p99.9']:.1f} /"
        f" max {med['max']:.1f} ms at {med['offered']:,.0f} req/s offered"
    )
    if len(got["p99"]) > 1:
        text += (
            f" (medians of {len(got['p99'])} runs; p99 {min(got['p99']):.1f}–"
            f"{max(got['p99']):.1f}, worst max {max(got['max']):.1f} ms)"
        )
    return text


HEAD = [
    "figure",
    "median",
    "min",
    "max",
    "runs",
    "baseline in the same run (median)",
    "ratio (median of the runs')",
    "goal",
    "",
    "latency, open loop (p50 / p99 / p99.9 / max)",
    "`sandex verify`",
]


def _row(
    figure: str,
    stat: Stat | None,
    unit: object,
    baseline: str,
    ratio: float | None,
    goal: str,
    met: bool | None,
    latency: str,
    verify: str,
) -> list[str]:
    fmt = unit if callable(unit) else _rate
    if stat is None:
        cells = ["not measured", "—", "—", "—"]
    else:
        cells = [fmt(stat.median), fmt(stat.low), fmt(stat.high), stat.runs]
    return [
        figure,
        *cells,
        baseline,
        "—" if ratio is None else f"{ratio:.2f}",
        goal,
        _met(met),
        latency,
        verify,
    ]


def _trivial(b: Bench) -> float | None:
    """The trivial endpoint's closed-loop req/s: per run the mean of before and after."""
    both = [r for r in b.per_run if "trivial_before" in r and "trivial_after" in r]
    return _ratio([(r["trivial_before"] + r["trivial_after"]) / 2 for r in both])


def table() -> list[str]:
    st, mt, ho, wd, bt, mem = (
        BENCHES[k]
        for k in ("store", "matching", "http_orders", "withdrawals", "backtest", "memory")
    )
    rows: list[list[str]] = []

    def med(b: Bench, name: str) -> float | None:
        v = b.values(name)
        return statistics.median(v) if v else None

    def base(label: str, value: float | None, unit: object = _rate) -> str:
        fmt = unit if callable(unit) else _rate
        return f"{label}: {'—' if value is None else fmt(value)}"

    # 1. writer appends
    raw = med(st, "raw")
    r = med(st, "writer_ratio")  # the median of the runs' ratios, each run paired
    rows.append(
        _row(
            "events appended/s through the writer (group commit, FULL), one-event commands",
            in_process(st, "writer", f"{st.arg('--runs')} in one process"),
            _rate,
            base("raw `executemany`, 500/tx", raw),
            r,
            "≥ 0.50",
            None if r is None else r >= 0.5,
            "—",
            _verify(st),
        )
    )
    # 2. replay
    events = f"{int(st.arg('--replay-events')):,}" if st.used else "1,000,000"
    rp, scan = med(st, "replay"), med(st, "scan")
    r = None if rp is None or not scan else rp / scan
    n = med(st, "replay_n")
    rows.append(
        _row(
            f"events replayed/s at start-up, {events} events, full replay (no snapshot;"
            f" {med(st, 'replay_s') or 0:.1f} s)",
            in_process(st, "replay", f"{n or 0:.0f}, each in a fresh process"),
            _rate,
            base("bare scan + orjson decode", scan),
            r,
            "≥ 0.50",
            None if r is None else r >= 0.5,
            "—",
            _verify(st),
        )
    )
    # 3. start-up
    su = in_process(st, "startup", f"{st.arg('--runs')}, each in a fresh process")
    rows.append(
        _row(
            f"start-up time, {events} events, from the newest state snapshot"
            f" (tail of {med(st, 'tail') or 0:,.0f} events)",
            su,
            _secs,
            "—",
            None,
            "≤ 3 s",
            None if su is None else su.median <= 3.0,
            "—",
            _verify(st),
        )
    )
    # 4. matching
    m = per_run(mt, "matching", f", each a median of {med(mt, 'matching_n') or 0:.0f}")
    r = _ratio(mt.ratios("matching", "plain"))
    rows.append(
        _row(
            "orders/s, matching alone, seeded 70% limit / 20% cancel / 10% market",
            m,
            _rate,
            base("plain SortedDict book", med(mt, "plain")),
            r,
            "≥ 250,000/s",
            None if m is None else m.median >= 250_000,
            "—",
            "—",
        )
    )
    # 5. engine with persistence
    r = _ratio(mt.ratios("persist_full", "matching"))
    rows.append(
        _row(
            "orders/s, engine with persistence (FULL), same mix",
            per_run(mt, "persist_full"),
            _rate,
            base("matching alone", med(mt, "matching")),
            r,
            "≥ 0.25",
            None if r is None else r >= 0.25,
            "—",
            _verify(mt),
        )
    )
    # 6. HTTP orders
    triv = _trivial(ho)
    r = _ratio(ho.values("ratio"))
    p99 = med(ho, "orders.p99")
    rows.append(
        _row(
            "HTTP order creations/s, 32 connections (wrk, closed loop)",
            per_run(ho, "orders"),
            _rate,
            base("trivial FastAPI endpoint", triv)
            + f"; open loop at the same rate: {_latency(ho, 'trivial')}",
            r,
            "≥ 0.50, p99 ≤ 25 ms",
            None if r is None or p99 is None else (r >= 0.5 and p99 <= 25),
            _latency(ho, "orders"),
            _verify(ho),
        )
    )
    # 7. withdrawals
    triv = _trivial(wd)
    r = _ratio(wd.values("ratio"))
    rows.append(
        _row(
            "HTTP withdrawals/s, 32 connections (wrk, closed loop; 2xx only in the ratio)",
            per_run(wd, "withdrawals"),
            _rate,
            base("trivial FastAPI endpoint", triv)
            + f"; open loop at the same rate: {_latency(wd, 'trivial')}",
            r,
            "≥ 0.50",
            None if r is None else r >= 0.5,
            _latency(wd, "withdrawals"),
            _verify(wd),
        )
    )
    # 8. backtest
    idle = per_run(bt, "idle")
    rows.append(
        _row(
            "backtest: idle reference points/s (1,000,000 points)",
            idle,
            _rate,
            "—",
            None,
            "≥ 200,000/s",
            None if idle is None else idle.median >= 200_000,
            "—",
            _verify(bt),
        )
    )
    mar = _ratio(bt.values("ma_ratio"))
    theirs = med(bt, "ma_theirs")
    rows.append(
        _row(
            "backtest: MA-cross wall time, 5,000 hourly bars",
            per_run(bt, "ma_ours"),
            _secs,
            base("backtesting.py, same data", theirs, _secs)
            if theirs
            else "backtesting.py not installed",
            mar,
            "ratio ≤ 1.0",
            None if mar is None else mar <= 1.0,
            "—",
            _verify(bt),
        )
    )
    # 8b. sweep
    sw = BENCHES["sweep"]
    up = med(sw, "speedup")
    warm = med(sw, "warm")
    rows.append(
        _row(
            f"sweep: {med(sw, 'combinations') or 0:.0f} MA-cross backtests of {sw.arg('--bars')} bars on"
            f" 2 cores, joblib's speed-up, workers started in the sweep"
            + ("" if warm is None else f" (warm pool: {warm:.2f}x)"),
            in_process(sw, "speedup", f"{med(sw, 'rounds') or 0:.0f} rounds in one process"),
            lambda x: f"{x:.2f}x",
            base("one after another", med(sw, "serial_s"), _secs),
            up,
            "≥ 1.6x",
            None if up is None else up >= 1.6,
            "—",
            _verify(sw),
        )
    )
    # 9. memory
    per = per_run(mem, "per_order")
    rows.append(
        _row(
            "memory per resting order (1,000,000 resting)",
            per,
            _bytes,
            "—",
            None,
            "report; < 1 KiB",
            None if per is None else per.median < 1024,
            "—",
            _verify(mem),
        )
    )
    # 10. issue 20: bytes written and the writer's CPU per order
    wal = BENCHES["wal"]
    for label, name, unit, goal, most in (
        ("bytes written to the WAL per order, 32 in flight", "wal_kib", "KiB", "≤ 20 KiB", 20),
        ("writer CPU per order (writer, committer, checkpointer), 32 in flight",
         "writer_cpu_us", "µs", "≤ 90 µs", 90),
    ):  # fmt: skip
        stat = per_run(wal, name)
        rows.append(
            _row(
                label,
                stat,
                lambda x, unit=unit: f"{x:,.1f} {unit}",
                "—",
                None,
                goal,
                None if stat is None else stat.median <= most,
                "—",
                _verify(wal),
            )
        )
    rows += decide_rows(BENCHES["decide"])
    rows += cli_rows(BENCHES["cli"])
    rows += postgres_rows(BENCHES["postgres"])
    rows += worlds_rows(BENCHES["fork"], BENCHES["worlds"])
    rows += faults_rows(BENCHES["faults"])
    rows += requests_rows(BENCHES["requests"])
    rows += plugin_rows(BENCHES["plugin"])
    rows += console_rows(BENCHES["console"])
    out = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def console_rows(cs: Bench) -> list[list[str]]:
    """Issue 33's console (bench_console): the timeline's first page on a big log against
    a one-page world on the same server, a commit to its event on a timeline open in
    Chromium, and the bytes of the console's first load; each the median of its rounds in
    one process."""
    rounds = f"{cs.arg('--rounds')} rounds in one process"
    events = cs.values("events")
    page = in_process(cs, "page_p50", rounds)
    small = in_process(cs, "small_p50", rounds)
    ratio = in_process(cs, "page_ratio", rounds)
    live = in_process(cs, "live_p50", rounds)
    post = in_process(cs, "post_p50", rounds)
    load = in_process(cs, "load_bytes", rounds)

    def ms(x: float) -> str:
        return f"{x:,.2f} ms"

    return [
        _row(
            f"console timeline, first page (50 events) of a world of"
            f" {events[0] if events else 0:,.0f} events, answered at the client on loopback: p50",
            page,
            ms,
            "—" if small is None else f"a one-page world's first page: p50 {ms(small.median)}",
            None if ratio is None else ratio.median,
            "p50 ≤ 150 ms",
            None if page is None else page.median <= 150.0,
            "—",
            _verify(cs),
        ),
        _row(
            "console: a commit to its event on an open timeline (headless Chromium, the"
            " server-sent event stream): p50",
            live,
            ms,
            "—" if post is None else f"the deposit's POST alone: p50 {ms(post.median)}",
            None,
            "p50 ≤ 500 ms",
            None if live is None else live.median <= 500.0,
            "—",
            "—",
        ),
        _row(
            "console: bytes transferred on its first load (fresh browser, /console through"
            " sign-in to the timeline)",
            load,
            _bytes,
            "—",
            None,
            "≤ 500 KB",
            None if load is None else load.median <= 500_000,
            "—",
            "—",
        ),
    ]


def plugin_rows(pl: Bench) -> list[list[str]]:
    """Issue 32's figures: the pytest plugin in a user's suite (bench_plugin), thread
    mode, each the median of its rounds in one process."""
    rounds = f"{pl.arg('--rounds')} rounds in one process"

    def ms(x: float) -> str:
        return f"{x:,.1f} ms"

    def pct(x: float) -> str:
        return f"{x:.1f}%"

    p50, p99 = in_process(pl, "world_p50_ms", rounds), in_process(pl, "world_p99_ms", rounds)
    parts = [
        (name, in_process(pl, f"{name}_ms", rounds)) for name in ("setup", "login", "teardown")
    ]
    rows = [
        _row(
            "`sandex_world` per test (fork, login, teardown), thread mode: p50",
            p50,
            ms,
            "p50 of each alone: "
            + ", ".join(f"{name} {'—' if s is None else ms(s.median)}" for name, s in parts),
            None,
            "p50 ≤ 20 ms, p99 ≤ 100 ms",
            None if p50 is None or p99 is None else p50.median <= 20 and p99.median <= 100,
            "—" if p99 is None else f"p99 {ms(p99.median)} [{ms(p99.low)}–{ms(p99.high)}]",
            "—",
        )
    ]
    tests = pl.arg("--tests")
    differing = pl.values("differing")
    for workers in ("0", pl.arg("--workers")):
        overhead = in_process(pl, f"n{workers}_overhead_pct", rounds)
        wall = in_process(pl, f"n{workers}_wall_s", rounds)
        same = bool(differing) and differing[0] == 0
        rows.append(
            _row(
                f"example suite of {tests} tests (a GTT order each, its clock advanced past"
                f" the expiry), -n {workers}: fixture overhead (setup and teardown over wall"
                " time, per worker)",
                overhead,
                pct,
                "—"
                if wall is None
                else f"wall time {wall.median:.1f} s [{wall.low:.1f}–{wall.high:.1f}]",
                None,
                "≤ 10%" + ("; identical results to -n 0" if workers != "0" else ""),
                None if overhead is None else overhead.median <= 10 and (workers == "0" or same),
                "—",
                "—" if workers == "0" or not differing else f"{differing[0]:.0f} tests differ",
            )
        )
    start, server = in_process(pl, "start_s", rounds), in_process(pl, "server_s", rounds)
    rows.append(
        _row(
            "session start, thread mode: pytest's start to the first test's body",
            start,
            _secs,
            "—"
            if server is None
            else f"the `sandex_server` fixture alone: {_secs(server.median)}"
            f" [{_secs(server.low)}–{_secs(server.high)}]",
            None,
            "≤ 1 s",
            None if start is None else start.median <= 1.0,
            "—",
            "—",
        )
    )
    return rows


def faults_rows(ft: Bench) -> list[list[str]]:
    """Issue 31's figures: HTTP orders/s with the fault gate over a server without it
    (bench_faults), each ratio paired per round, the rounds in one process."""
    rounds = f"{ft.arg('--rounds')} pairs, alternating, one process"
    rows = []
    for name, label, goal in (
        ("gate", "HTTP orders/s with the fault gate, no rule armed, over without the gate", 0.98),
        ("other", "HTTP orders/s with 100 rules armed on other operations, over without the gate",
         0.95),
        ("same", "HTTP orders/s with 100 CreateOrder rules whose body does not match, over"
         " without the gate", 0.95),
    ):  # fmt: skip
        ratio = in_process(ft, f"{name}_ratio", rounds)
        num = in_process(ft, f"{name}_rps", rounds)
        den = in_process(ft, "without_rps", rounds)
        cpu = in_process(ft, f"{name}_cpu_ratio", rounds)
        rows.append(
            _row(
                label + " (wrk, closed loop, 32 connections)",
                num,
                _rate,
                f"without the gate: {'—' if den is None else _rate(den.median)}"
                + ("" if ratio is None else f"; ratio min–max {ratio.low:.2f}–{ratio.high:.2f}")
                + (
                    ""
                    if cpu is None
                    else f"; orders per server CPU second, ratio {cpu.median:.2f}"
                    f" [{cpu.low:.2f}–{cpu.high:.2f}]"
                ),
                None if ratio is None else ratio.median,
                f"≥ {goal}",
                None if ratio is None else ratio.median >= goal,
                "—",
                _verify(ft),
            )
        )
    return rows


def decide_rows(dc: Bench) -> list[list[str]]:
    """Issue 20's figures of deciding: calls and CPU per order on the memory store, and
    the engine with persistence beside the same commands decided alone (bench_decide)."""
    rows: list[list[str]] = []
    for label, name, goal in (
        ("Python calls per order, decided on the memory store (unit tier)", "calls", "report"),
        ("CPU per order (µs), decided on the memory store (unit tier)", "cpu_us", "report"),
    ):
        stat = in_process(dc, name, f"{dc.arg('--rounds')} in one process")
        if name == "calls" and stat is not None:
            stat = Stat(stat.median, stat.median, stat.median, "a count (1 run)")
        rows.append(_row(label, stat, lambda x: f"{x:,.1f}", "—", None, goal, None, "—", "—"))
    ratio = in_process(dc, "persisted_ratio", f"{dc.arg('--rounds')} rounds in one process")
    alone = dc.values("memory")
    baseline = _rate(statistics.median(alone)) if alone else "—"
    rows.append(
        _row(
            "orders/s, engine with persistence (FULL, writer thread)",
            in_process(dc, "persisted", f"{dc.arg('--rounds')} rounds in one process"),
            _rate,
            f"the same commands decided alone on the memory store: {baseline}",
            None if ratio is None else ratio.median,
            "≥ 0.70",
            None if ratio is None else ratio.median >= 0.7,
            "—",
            _verify(dc),
        )
    )
    cpu_ratio = in_process(dc, "cpu_ratio", f"{dc.arg('--rounds')} rounds in one process")
    rows.append(
        _row(
            "the same in CPU per order: deciding alone over the engine's threads (FULL)",
            cpu_ratio,
            lambda x: f"{x:.2f}",
            "—",
            None,
            "report",
            None,
            "—",
            _verify(dc),
        )
    )
    return rows


def cli_rows(cli: Bench) -> list[list[str]]:
    """Issue 20's figures: whole `sandex` processes, wall time (bench_cli)."""
    runs = f"{cli.arg('--runs')} in one process"
    rows = []
    for name, figure, goal in (
        ("help_s", "`sandex --help`, process wall time", 0.4),
        ("backtest_s", "`sandex backtest`, 600 hourly bars, MA cross: process wall time", 0.4),
        ("serve_s", "`sandex serve` on an empty database: start to its first answer", 1.0),
    ):
        stat = in_process(cli, name, runs)
        rows.append(
            _row(
                figure,
                stat,
                lambda x: f"{x:.3f} s",
                "—",
                None,
                f"< {goal} s",
                None if stat is None else stat.median < goal,
                "—",
                _verify(cli) if name == "serve_s" else "—",
            )
        )
    return rows


def postgres_rows(pg: Bench) -> list[list[str]]:
    """Issue 18's figures: sandex on PostgreSQL (a cluster with fsync on, bench_postgres)."""
    runs = f"{pg.arg('--runs')} in one process"
    fsync = " (PostgreSQL with fsync on)"

    def one(name: str) -> float | None:
        v = pg.values(name)
        return v[0] if v else None

    rows = []
    r = one("pg_writer_ratio")
    rows.append(
        _row(
            "PostgreSQL: events appended/s through the writer (group commit, FULL)" + fsync,
            in_process(pg, "pg_writer", runs),
            _rate,
            f"raw `COPY`, 500/tx: {_rate(one('pg_raw') or 0)}",
            r,
            "≥ 0.50",
            None if r is None else r >= 0.5,
            "—",
            "—",
        )
    )
    r, p99, p99s = one("pg_http_ratio"), one("pg_p99"), one("pg_sqlite_p99")
    rows.append(
        _row(
            "PostgreSQL: HTTP order creations/s, 32 connections (closed loop)" + fsync,
            in_process(pg, "pg_http", runs),
            _rate,
            f"the same on SQLite FULL: {_rate(one('pg_http_sqlite') or 0)};"
            f" SQLite's open-loop p99 at the same rate: {p99s or 0:.1f} ms",
            r,
            "≥ 0.70; report p99",
            None if r is None else r >= 0.7,
            f"p99 {p99 or 0:.1f} ms (median of the runs) at half PostgreSQL's closed-loop rate",
            "—",
        )
    )
    su = in_process(pg, "pg_startup", runs)
    rows.append(
        _row(
            f"PostgreSQL: start-up time, {int(pg.arg('--replay-events') if pg.used else 0):,}"
            " events, from the newest state snapshot (at"
            f" {one('pg_snapshot_at') or 0:,.0f}; 0: none was used)" + fsync,
            su,
            _secs,
            "—",
            None,
            "≤ 3 s",
            None if su is None else su.median <= 3.0,
            "—",
            "—",
        )
    )
    fo = in_process(pg, "pg_failover", runs)
    lost = one("pg_lost")
    rows.append(
        _row(
            "PostgreSQL: failover under load, SIGKILL of the writer to the standby's first"
            f" acknowledged write ({one('pg_acknowledged') or 0:,.0f} acknowledged writes,"
            f" {lost or 0:.0f} missing from the log)" + fsync,
            fo,
            _secs,
            "—",
            None,
            "≤ 5 s, none lost",
            None if fo is None else fo.median <= 5.0 and fo.high <= 5.0 and not lost,
            "—",
            _verify(pg),
        )
    )
    return rows


def requests_rows(rq: Bench) -> list[list[str]]:
    """Issue 31's request log (bench_requests): its first page at a full log, and what
    keeping it costs HTTP orders, each the median of its rounds in one process."""
    rounds = f"{rq.arg('--rounds')} rounds in one process"
    fill = rq.values("fill")
    p50 = in_process(rq, "first_p50", rounds)
    p99 = in_process(rq, "first_p99", rounds)
    tenant = in_process(rq, "tenant_p50", rounds)

    def ms(x: float) -> str:
        return f"{x:,.2f} ms"

    rows = [
        _row(
            f"`GET /v2/sandbox/requests` first page (100 entries, everyone's) at"
            f" {fill[0] if fill else 0:,.0f} recorded requests: p50",
            p50,
            ms,
            "—" if tenant is None else f"a tenant's own first page: p50 {ms(tenant.median)}",
            None,
            "p50 ≤ 20 ms",
            None if p50 is None else p50.median <= 20.0,
            "—" if p99 is None else f"p99 {ms(p99.median)} [{ms(p99.low)}–{ms(p99.high)}]",
            "—",
        )
    ]
    added = in_process(rq, "layer_added", f"{rq.arg('--rounds')} pairs, alternating, one process")
    without = in_process(rq, "layer_without", rounds)
    rows.append(
        _row(
            "time the request log adds to a request, in process (the access log layer with a"
            " full log over without)",
            added,
            lambda x: f"{x:,.2f} µs",
            "—" if without is None else f"the layer without it: {without.median:,.2f} µs",
            None,
            "report",
            None,
            "—",
            "—",
        )
    )
    ratio = in_process(rq, "log_ratio", f"{rq.arg('--rounds')} pairs, alternating, one process")
    kept, none = in_process(rq, "kept_rps", rounds), in_process(rq, "none_rps", rounds)
    rows.append(
        _row(
            "HTTP orders/s keeping the request log (100,000) over keeping none"
            " (wrk, closed loop, 32 connections)",
            kept,
            _rate,
            "none: "
            + ("—" if none is None else _rate(none.median))
            + ("" if ratio is None else f"; ratio min–max {ratio.low:.2f}–{ratio.high:.2f}"),
            None if ratio is None else ratio.median,
            "report",
            None,
            "—",
            "—",
        )
    )
    return rows


def worlds_rows(fk: Bench, wd: Bench) -> list[list[str]]:
    """Issue 30's figures: forks of a store (bench_fork) and worlds through HTTP against
    `sandex serve` (bench_worlds), each the median of its rounds in one process."""
    forks = f"{fk.arg('--rounds')} rounds of {fk.arg('--forks')} forks in one process"
    rounds = f"{wd.arg('--rounds')} rounds in one process"

    def one(b: Bench, name: str) -> float | None:
        v = b.values(name)
        return v[0] if v else None

    def ms(x: float) -> str:
        return f"{x:,.1f} ms"

    rows = []
    for store, name, goal, most, p99_most in (
        ("SQLite", "fork", "p50 ≤ 15 ms, p99 ≤ 60 ms", 15.0, 60.0),
        ("PostgreSQL (a schema of the same database), back to back", "pg_fork", "p50 ≤ 100 ms", 100.0, None),
        ("PostgreSQL, paced: the spare schema ready, as between a suite's tests", "pg_paced", "p50 ≤ 100 ms", 100.0, None),
    ):  # fmt: skip
        p50, p99 = in_process(fk, f"{name}_p50_ms", forks), in_process(fk, f"{name}_p99_ms", forks)
        met = None if p50 is None else p50.median <= most
        if met is not None and p99_most is not None:
            met = met and p99 is not None and p99.median <= p99_most
        rows.append(
            _row(
                f"fork a world's store, {fk.arg('--events')} events and one funded customer,"
                f" at its head: p50 of one fork, {store}",
                p50,
                ms,
                "—",
                None,
                goal,
                met,
                "—" if p99 is None else f"p99 {ms(p99.median)} [{ms(p99.low)}–{ms(p99.high)}]",
                "—",
            )
        )
    for name, label, goal, most in (
        ("create_ms", "create an empty world (`POST /v2/sandbox/worlds`): p50", "p50 ≤ 40 ms", 40.0),
        ("first_ms", "first request to an unloaded world (a balances read): p50", "p50 ≤ 50 ms", 50.0),
    ):  # fmt: skip
        stat = in_process(wd, name, rounds)
        extra = {
            "create_ms": ("create_p99_ms", "p99"),
            "first_ms": ("loaded_ms", "the same request to it loaded, p50"),
        }[name]
        other = in_process(wd, extra[0], rounds)
        rows.append(
            _row(
                label,
                stat,
                ms,
                "—"
                if other is None
                else f"{extra[1]}: {ms(other.median)} [{ms(other.low)}–{ms(other.high)}]",
                None,
                goal,
                None if stat is None else stat.median <= most,
                "—",
                "—",
            )
        )
    alive, answered = one(wd, "alive"), one(wd, "answered")
    rss = in_process(wd, "rss_mib", f"{wd.arg('--rounds')} slices of the worlds, one process")
    whole = one(wd, "rss_whole_mib")
    threads = (one(wd, "threads_before"), one(wd, "threads_after"))
    rows.append(
        _row(
            f"{alive or 0:,.0f} worlds alive (loaded) in one process, each with a customer and a"
            f" resting order: RSS growth per world; {answered or 0:,.0f} of them answered",
            rss,
            lambda x: f"{x:.2f} MiB",
            "—"
            if whole is None
            else f"over all the worlds: {whole:.2f} MiB a world; threads"
            f" {threads[0] or 0:,.0f} to {threads[1] or 0:,.0f}",
            None,
            "≤ 1 MiB a world; all answer",
            None if rss is None else rss.median <= 1.0 and answered == alive,
            "—",
            _verify(wd),
        )
    )
    for name, label, base, goal in (
        ("world_ratio", "HTTP orders/s in a non-default world over the default world, same server",
         ("world_rps", "default_rps", "default world"), 0.95),
        ("eight_ratio", "HTTP orders/s, 8 worlds driven at once (total) over one world alone",
         ("eight_rps", "one_rps", "one world alone"), 0.9),
    ):  # fmt: skip
        ratio = in_process(wd, name, f"{wd.arg('--rounds')} pairs, alternating, one process")
        num = in_process(wd, base[0], rounds)
        den = one(wd, base[1])
        rows.append(
            _row(
                label + " (wrk, closed loop, 32 connections)",
                num,
                _rate,
                f"{base[2]}: {'—' if den is None else _rate(den)}"
                + ("" if ratio is None else f"; ratio min–max {ratio.low:.2f}–{ratio.high:.2f}"),
                None if ratio is None else ratio.median,
                f"≥ {goal}",
                None if ratio is None else ratio.median >= goal,
                "—",
                "—",
            )
        )
    return rows


def http_runs(b: Bench, route: str, label: str) -> list[str]:
    """Each HTTP run on its own line: the spread the medians above hide."""
    head = [
        "run",
        f"{label} req/s (closed loop)",
        "trivial req/s (before, after)",
        "offered req/s",
        f"{label} p50 / p99 / p99.9 / max ms",
        "trivial p50 / p99 / p99.9 / max ms",
    ]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, r in enumerate(b.per_run, 1):

        def lat(name: str, r: dict[str, float] = r) -> str:
            if f"{name}.p99" not in r:
                return "—"
            return " / ".join(f"{r[f'{name}.{k}']:.1f}" for k in ("p50", "p99", "p99.9", "max"))

        out.append(
            f"| {i} | {r.get(route, 0):,.0f} | {r.get('trivial_before', 0):,.0f},"
            f" {r.get('trivial_after', 0):,.0f} | {r.get(f'{route}.offered', 0):,.0f} |"
            f" {lat(route)} | {lat('trivial')} |"
        )
    return out


NOTES = """\
Notes on the figures:

- **How many runs.** Every benchmark but two runs as five separate processes, and each
  figure is the median of the five with min and max. bench_store builds a 1,000,000-event
  log once (about 70 s) and repeats each of its figures five times inside that process:
  the writer, the bare scan, the full replay and the start-up from a snapshot (each
  start-up in a fresh process of its own, as a restarted server starts).
  bench_scenarios (steps/s of scenario replay, time travel) is not a figure of issue 8
  and runs once. The ratio is the median of the per-run ratios of a figure to its
  baseline measured in the same run (for bench_store's writer, each of its five runs
  measures the baseline and the writer back to back; its replay: median over median).
- **HTTP throughput** is wrk's closed-loop maximum (`wrk -t2 -c32`, 3 s after 1 s of
  warm-up, one uvicorn worker). Each run measures the trivial endpoint, then sandex,
  then the trivial endpoint again, and compares with the mean of the two, so that a
  machine busy with something else during one of them shows as a gap between the two.
- **HTTP latencies** do not come from wrk: in a closed loop a stalled server also stops
  the load, so the requests that would have waited behind the stall are never sent and
  the percentiles look better than what a client sees (coordinated omission). They come
  from an open-loop run at a constant arrival rate (`bench._common.open_loop`): request
  i is due at start + i/rate whatever happened to the ones before it, is written on the
  first free one of 32 keep-alive connections, and its latency counts from its due time,
  so a stall counts against every request queued behind it. The rate offered is 50% of
  the route's closed-loop throughput measured a moment before in the same run, and the
  trivial endpoint is offered the same rate, for 4 s each. For the run, the server is
  pinned to the first CPU and the generator to the last (`sched_setaffinity`, as
  `taskset` does). The generator prints how late its pacer was at most: that lateness
  is inside the latencies (it can only make them worse).
- **Why not a packaged load generator for the latencies.** Debian has no wrk2 and no
  vegeta; `wrk` with a Lua script that paces requests is still a closed loop (each
  connection waits for its answer before the next, so a stall delays the sends and is
  not counted). `httperf` (Debian) is open loop, but opens a new connection for every
  request, reports only min/avg/median/max (no p99 or p99.9), and busy-polls: it used 76%
  of a core to send 1,000 requests/s on this machine, half of the two cores the server
  and the generator share. `hey`, `siege`, `jmeter` and locust are closed loops too
  (locust's `constant_throughput` users wait for their answer). So the latencies come
  from the small asyncio generator in `bench/_common.py` (the same design as
  `bench/soak.py`); wrk still gives the throughput.
- Start-up from a snapshot: the snapshot is the one the writer had built in the
  background; the tail after it is replayed. Its size and the time to build it are
  below.
- **PostgreSQL** (issue 18): bench_postgres runs once and repeats each figure five
  times inside, on a throwaway cluster it starts with fsync on (the tests' cluster has
  it off): the writer against raw `COPY`, HTTP orders against SQLite FULL (each run both
  back to back; p99 of both at half PostgreSQL's closed-loop rate), start-up with
  1,000,000 events from a snapshot, and failover under load (SIGKILL of the writer to
  the standby's first 2xx; every 2xx checked in the log). docs/operations.md explains.
- **Worlds** (issue 30): bench_fork forks a store holding one funded customer and 1,000
  events at its head, 5 rounds of 50 forks in one process (SQLite; PostgreSQL on a
  throwaway cluster with fsync on, each fork a schema), the median of the rounds' p50
  and p99 with min–max. bench_worlds drives `sandex serve` through HTTP, a server per
  figure, 5 rounds in one process: 20 world creations a round; 10 funded worlds a round
  unloaded by the idle sweep (`world_idle_unload_seconds` 1 s on that server) and read
  once; orders/s in a world over the default world of the same server, and spread over
  8 worlds over one world alone, each round both sides back to back, the side that goes
  first alternating, the ratio per round (wrk cycling the HTTP bench's ten bodies, each
  request to the next world); and 1,000 worlds made one after another, each with a
  customer, a deposit and a resting order, on a server whose `max_loaded_worlds` is
  raised above 1,000 so that every one stays loaded (an unloaded world holds no memory,
  which would make the figure say nothing), the server's RSS from /proc before the first
  and after each fifth of them (the five slices are the rounds), then every world's order
  read back.
- **Faults** (issue 31): bench_faults drives pairs of fresh `sandex serve`, funded alike,
  prices held still: one started without the fault gate (`SANDEX_NO_FAULT_GATE=1`, an
  internal switch for this figure) against one with the gate and no rule, one with 100
  rules armed on other operations, or one with 100 `CreateOrder` rules whose body field
  no order has. HTTP orders/s (wrk cycling the HTTP bench's ten bodies) over the
  gateless server, and beside it orders per second of the server's CPU (from /proc,
  which a busy machine disturbs less), 5 rounds in one process, each round both sides
  back to back, the side that goes first alternating, the ratio per round.
- **Request log** (issue 31): bench_requests, 5 rounds in one process, each a server
  process (the bench itself, serving with sandex's listener and protocol) on a fresh
  database with 10 tenants of 100 deposits each, its request log filled in that process
  with 100,000 entries each naming one deposit's events; the first page of `GET
  /v2/sandbox/requests` asked 200 times on one keep-alive connection after 200 warm-up
  ones, by the bootstrap client (everyone's) and by a tenant (its own); the median of
  the rounds' p50 and p99 with min–max. What keeping the log costs: the access log
  layer's time per request in the bench's own process, with a full log over without,
  each round 20,000 requests a side, the side that goes first alternating; and HTTP orders/s on a
  `sandex serve` keeping 100,000 requests over one keeping none (`request_log_size: 0`),
  both up, each round both sides back to back, the side that goes first alternating,
  the ratio per round.
- `sandex verify` runs on every database a benchmark writes (store: the 1,000,000-event
  log; matching: the FULL and NORMAL logs; both HTTP benches; scenarios: the time-travel
  copy; backtest: every run's database; cli: the last database `sandex serve` made;
  decide: the database of each round with persistence).
  bench_memory decides its orders without the store (no log to verify).
"""


# A section of docs/performance.md whose heading ends so was measured by hand, not by this
# run: writing the page again keeps it, and whatever follows it.
MEASURED_APART = "measured apart"


def kept_sections(previous: str) -> list[str]:
    """The hand-measured sections at the end of the page being replaced, as lines."""
    lines = previous.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("## ") and line.rstrip().endswith(MEASURED_APART):
            return ["", *lines[k:]]
    return []


def write(out: Path, started: float, quick: bool, load: tuple[float, ...]) -> None:
    kept = kept_sections(out.read_text()) if out.exists() else []
    lines = [
        "# Performance",
        "",
        "Written by `make bench` (`bench/run.py`); do not edit by hand. Each benchmark is a",
        "plain script of `bench/` that also runs alone; the exact commands are listed below.",
        "To compare two revisions on these figures, `make bench-ab BASE=rev [HEAD=rev]` (`bench/ab.py`)",
        "runs base and head alternately, 5 rounds: per figure the paired ratios, **worse** if all agree.",
        f'Sections at the end whose heading ends in "{MEASURED_APART}" were measured by hand and are kept.',
        "",
        f"Machine: {machine()}. Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())};"
        f" the whole run took {(time.perf_counter() - started) / 60:.1f} minutes. Load average"
        f" (1 min) {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end.",
        "",
    ]
    if quick:
        lines += ["**`--quick` run: sizes shrunk, not figures to publish.**", ""]
    lines += table()
    lines += ["", NOTES, "## HTTP runs, one by one", ""]
    for name, route, label in (
        ("http_orders", "orders", "orders"),
        ("withdrawals", "withdrawals", "withdrawals"),
    ):
        lines += [f"{name}:", "", *http_runs(BENCHES[name], route, label), ""]
    lines += ["## Every benchmark's output", ""]
    for name, b in BENCHES.items():
        args = " ".join(b.quick if quick else b.args)
        failed = f", {b.failed} failed" if b.failed else ""
        lines += [
            f"### {name}: `python bench/{b.script} {args}`",
            "",
            f"{len(b.outputs)} run(s){failed}, {b.seconds:.0f} s in all. Last run's output:",
            "",
            "```text",
            *(b.outputs[-1].strip().splitlines() if b.outputs else ["(not run)"]),
            "```",
            "",
        ]
        snap_s, snap_mb = b.values("snapshot_s"), b.values("snapshot_mb")
        if name == "store" and snap_s:
            lines += [
                f"State snapshot: built in the background in {snap_s[0]:.1f} s"
                f" (replay from the previous snapshot or the start, pickle, zlib),"
                f" {snap_mb[0] if snap_mb else 0:.1f} MB compressed.",
                "",
            ]
    lines += kept
    out.write_text("\n".join(lines).rstrip() + "\n")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="tiny sizes, one run each: a smoke test")
    p.add_argument("--runs", type=int, default=None, help="runs of each repeated benchmark")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md")
    p.add_argument("--only", nargs="*", default=None, help="benchmarks to run (default: all)")
    args = p.parse_args()
    started = time.perf_counter()
    load = os.getloadavg()
    for name, b in BENCHES.items():
        if args.only and name not in args.only:
            continue
        if not (ROOT / "bench" / b.script).exists():
            continue
        print(f"== {name}", flush=True)
        b.run(args.quick, args.runs if b.runs > 1 else None)
    write(args.out, started, args.quick, load)
    print(f"wrote {args.out}")
    # the page is written either way; a crashed run or a failed verify fails `make bench`
    bad = [n for n, b in BENCHES.items() if b.failed or any(v != "OK" for v in b.verified)]
    if bad:
        print(f"failed runs or verify in: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
