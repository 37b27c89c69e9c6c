"""The pytest plugin's costs (issue 32): what a user's suite pays for sandex.

    python bench/bench_plugin.py [--tests 200] [--rounds 5] [--workers 2]

Each round runs pytest in a subprocess on suites generated in a temporary folder, with
the plugin loaded from its entry point in thread mode and a small measuring plugin of
this script's (`-p sandex_bench_hooks`) that records pytest's own per-phase durations,
each sandex fixture's setup (a `pytest_fixture_setup` wrapper) and when the first test
began. The dev environment's heavy plugins of other projects (hypothesis, schemathesis,
anyio) are left out, as a user's suite would not have them.

- the `sandex_world` fixture's cost per test: a suite of `--tests` tests that only ask
  for a world and take its bearer token (the login a test's first call makes); per test
  its setup (the fork) plus the token plus its teardown (the world deleted), the first
  test left out (it also starts the server and builds the template). p50 and p99 per
  round;
- session start: from pytest's process start (the time before the subprocess was
  started) to the first test's body, and the `sandex_server` fixture's setup alone;
- an example suite of `--tests` tests, each placing a GTT order in its own world,
  advancing its clock past the expiry and asserting the order expired: run with `-n 0`
  and with `-n --workers` (one shared server), alternating; the outcomes and what each
  test saw must be identical; its fixture overhead is the setup and teardown time of the
  tests (pytest's durations: the sandex fixtures are all a test of it sets up) over the
  suite's wall time (the subprocess's, start to end), per worker under xdist (the sum
  over the workers divided by their number).

Every subprocess runs with bytecode cached (`PYTHONPYCACHEPREFIX` in the temporary
folder, written by a warm-up run that is not measured), as an installed sandex has it
(`pip install` compiles it), even where the environment sets `PYTHONDONTWRITEBYTECODE`.

Printed: per figure the median of the rounds with min–max.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine  # noqa: E402

PLUGINS_OFF = ["-p", "no:hypothesispytest", "-p", "no:schemathesis", "-p", "no:anyio"]

HOOKS = '''
"""bench_plugin's measuring plugin: durations and fixture setups, one JSON file a process."""
import json, os, time
import pytest

_seen = {"phases": [], "fixtures": [], "first_call": None, "observed": {}}
SANDEX = ("sandex_server", "sandex_template", "sandex_world")


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef, request):
    started = time.perf_counter()
    try:
        return (yield)
    finally:
        if fixturedef.argname in SANDEX:
            _seen["fixtures"].append(
                [request.node.nodeid, fixturedef.argname, time.perf_counter() - started]
            )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    if _seen["first_call"] is None:
        _seen["first_call"] = time.time()


def pytest_runtest_logreport(report):
    _seen["phases"].append([report.nodeid, report.when, report.duration, report.outcome])


def observe(nodeid, value):
    _seen["observed"][nodeid] = value


def pytest_sessionfinish(session):
    worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
    if worker == "main" and session.config.pluginmanager.hasplugin("dsession"):
        return  # xdist's controller: its reports are the workers' (their files)
    out = os.path.join(os.environ["SANDEX_BENCH_OUT"], f"{worker}-{os.getpid()}.json")
    with open(out, "w") as f:
        json.dump(_seen, f)
'''

WORLD_SUITE = """
import time
import pytest
import sandex_bench_hooks


@pytest.mark.parametrize("n", range({tests}))
def test_world(sandex_world, request, n):
    started = time.perf_counter()
    sandex_world.token()
    sandex_bench_hooks.observe(request.node.nodeid, {{"login": time.perf_counter() - started}})
"""

EXAMPLE_SUITE = """
from datetime import datetime, timedelta
import pytest
import sandex_bench_hooks


@pytest.mark.parametrize("n", range({tests}))
def test_gtt_expires(sandex_world, request, n):
    w = sandex_world
    now = datetime.fromisoformat(w.clock.now().replace("Z", "+00:00"))
    expiry = now + timedelta(seconds=60 + n % 7)
    order = w.post(f"/profiles/{{w.profile_id}}/orders", {{
        "market": "BTCUSD", "side": "BUY", "type": "LIMIT", "price": str(1000 + n),
        "base_amount": "0.01", "time_in_force": "GTT",
        "expiration_date": str(int(expiry.timestamp() * 1000)),
    }})
    assert order["status"] in ("SUBMITTED", "OPEN")
    w.clock.advance(seconds=120)
    done = w.get(f"/profiles/{{w.profile_id}}/orders/{{order['id']}}")
    assert done["status"] == "CANCELLED"
    sandex_bench_hooks.observe(request.node.nodeid, [order["status"], done["status"],
                                                     done["created_at"], w.clock.now()])
"""


def run_suite(folder: Path, suite: str, *args: str) -> tuple[float, list[dict[str, Any]], float]:
    """(wall seconds, each process's records, when the subprocess was started)."""
    out = Path(tempfile.mkdtemp(prefix="out-", dir=folder))
    env = {
        **os.environ,
        "SANDEX_BENCH_OUT": str(out),
        "PYTHONPATH": str(folder) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        # bytecode cached, as `pip install` leaves an installed package's (`main`'s
        # warm-up run writes it), wherever the environment asks for none
        "PYTHONPYCACHEPREFIX": str(folder / "pycache"),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("SANDEX_URL", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PLUGINS_OFF]
    cmd += ["-p", "sandex_bench_hooks", "--rootdir", str(folder), suite, *args]
    began = time.time()
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    records = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    return wall, records, began


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def world_costs(records: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per test (the first left out), seconds: its setup, login and teardown, and their
    sum ("world")."""
    parts: dict[str, dict[str, float]] = {}
    for record in records:
        for nodeid, when, duration, _ in record["phases"]:
            if when in ("setup", "teardown"):
                parts.setdefault(nodeid, {})[when] = duration
        for nodeid, seen in record["observed"].items():
            parts.setdefault(nodeid, {})["login"] = seen["login"]
    tests = list(parts.values())[1:]
    costs = {part: [t.get(part, 0.0) for t in tests] for part in ("setup", "login", "teardown")}
    costs["world"] = [sum(t.values()) for t in tests]
    return costs


def fixture_overhead(records: list[dict[str, Any]], wall: float, workers: int) -> float:
    spent = sum(
        duration
        for record in records
        for _, when, duration, _ in record["phases"]
        if when in ("setup", "teardown")
    )
    return spent / max(1, workers) / wall


def outcomes(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Each test's outcome of its call and what it saw."""
    seen: dict[str, Any] = {}
    for record in records:
        for nodeid, when, _, outcome in record["phases"]:
            if when == "call":
                seen[nodeid] = json.dumps([outcome, record["observed"].get(nodeid)])
    return seen


def line(name: str, values: list[float], unit: str, fmt: str = "{:.1f}") -> str:
    med, lo, hi = statistics.median(values), min(values), max(values)
    return f"{name}: {fmt.format(med)} {unit} [{fmt.format(lo)}–{fmt.format(hi)}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(f"machine: {machine()}; load {os.getloadavg()[0]:.2f}")
    p50s: list[float] = []
    p99s: list[float] = []
    parts: dict[str, list[float]] = {"setup": [], "login": [], "teardown": []}
    starts: list[float] = []
    server_starts: list[float] = []
    overheads: dict[int, list[float]] = {0: [], args.workers: []}
    walls: dict[int, list[float]] = {0: [], args.workers: []}
    differing = 0
    with tempfile.TemporaryDirectory(prefix="bench-plugin-") as tmp:
        folder = Path(tmp)
        (folder / "sandex_bench_hooks.py").write_text(HOOKS)
        (folder / "test_worlds.py").write_text(
            textwrap.dedent(WORLD_SUITE.format(tests=args.tests))
        )
        (folder / "test_example.py").write_text(EXAMPLE_SUITE.format(tests=args.tests))
        run_suite(folder, "test_example.py", "-k", "test_gtt_expires[0]")  # warm-up, not kept
        for round_ in range(args.rounds):
            _, records, began = run_suite(folder, "test_worlds.py")
            costs = world_costs(records)
            p50s.append(percentile(costs["world"], 0.50) * 1000)
            p99s.append(percentile(costs["world"], 0.99) * 1000)
            for part in ("setup", "login", "teardown"):
                parts[part].append(percentile(costs[part], 0.50) * 1000)
            starts.append(records[0]["first_call"] - began)
            server_starts.append(
                sum(s for _, name, s in records[0]["fixtures"] if name == "sandex_server")
            )
            seen: dict[int, dict[str, Any]] = {}
            # -n 0 and -n N alternate, the first of the pair changing each round
            pair = [0, args.workers] if round_ % 2 == 0 else [args.workers, 0]
            for workers in pair:
                wall, records, _ = run_suite(folder, "test_example.py", "-n", str(workers))
                walls[workers].append(wall)
                overheads[workers].append(fixture_overhead(records, wall, workers) * 100)
                seen[workers] = outcomes(records)
            differ = sorted(set(seen[0].items()) ^ set(seen[args.workers].items()), key=str)
            missing = 2 * args.tests - len(seen[0]) - len(seen[args.workers])
            same = not differ and not missing
            differing += len({nodeid for nodeid, _ in differ}) + missing
            if not same:
                print(f"  -n 0 and -n {args.workers} differ: {differ[:2]}", flush=True)
            print(
                f"round {round_ + 1}: world p50 {p50s[-1]:.1f} ms, p99 {p99s[-1]:.1f} ms;"
                f" start {starts[-1]:.2f} s (server {server_starts[-1]:.2f} s);"
                f" -n 0 {walls[0][-1]:.1f} s ({overheads[0][-1]:.1f}%),"
                f" -n {args.workers} {walls[args.workers][-1]:.1f} s"
                f" ({overheads[args.workers][-1]:.1f}%); identical {same}",
                flush=True,
            )
    print(line("sandex_world per test (fork, login, teardown), thread mode: p50", p50s, "ms"))
    print(line("sandex_world per test (fork, login, teardown), thread mode: p99", p99s, "ms"))
    for part, values in parts.items():
        print(line(f"sandex_world per test, its {part} alone: p50", values, "ms"))
    print(line("session start, thread mode: pytest start to the first test", starts, "s", "{:.2f}"))
    print(
        line("session start, thread mode: the sandex_server fixture", server_starts, "s", "{:.3f}")
    )
    n = args.workers
    print(
        f"example suite of {args.tests} tests, -n {n} and -n 0, {args.rounds} rounds:"
        f" tests whose outcome or observations differ: {differing}"
    )
    for workers in (0, n):
        print(line(f"example suite, -n {workers}: wall time", walls[workers], "s"))
        print(
            line(
                f"example suite, -n {workers}: fixture overhead",
                overheads[workers],
                "% of wall time",
            )
        )


if __name__ == "__main__":
    main()
