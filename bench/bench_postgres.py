"""sandex on PostgreSQL (issue 18's figures), on a throwaway cluster started here with
fsync ON (tests/support/postgres_server.py; its data folder in the system's temporary
folder), or on the server that SANDEX_TEST_POSTGRES names:

- appends through the writer (group commit, FULL: synchronous_commit on) against a raw
  `COPY` of pre-encoded rows into the same `events` table, 500 a transaction, each run
  the two back to back on fresh databases;
- HTTP order creations through `sandex serve` on PostgreSQL against the same on SQLite
  FULL, closed loop, each run both back to back; then open-loop latencies of both at
  half of PostgreSQL's closed-loop rate;
- start-up with `--replay-events` events on PostgreSQL from the newest state snapshot,
  `--tail` events before the end (the log is built on SQLite and moved by `sandex copy`),
  each in a fresh process;
- failover under load: a writer and a standby on one database, 4 clients depositing to
  whichever answers 2xx; SIGKILL the writer; seconds until the standby's first
  acknowledged write; then every acknowledged write is checked in the log.

    python bench/bench_postgres.py [--events 20000] [--seconds 3] [--replay-events 1000000]
        [--tail 50000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import Timer, machine, measured_tree, open_loop, open_loop_line  # noqa: E402

ROOT = measured_tree()

from bench.bench_http_orders import BODIES, _load  # noqa: E402
from bench.bench_store import (  # noqa: E402
    _STARTUP,
    _Note,
    build_log,
    snapshot_store,
    through_writer,
)
from bench.bench_withdrawals import _free_port, _request, _start, _stop  # noqa: E402


def _spread(values: list[float], fmt: Callable[[float], str]) -> str:
    return (
        f"{fmt(statistics.median(values))} (min {fmt(min(values))}, max {fmt(max(values))};"
        f" median of {len(values)})"
    )


def _rate(x: float) -> str:
    return f"{x:,.0f}/s"


def _secs(x: float) -> str:
    return f"{x:.2f} s"


def raw_copy(url: str, n: int, batch: int = 500) -> float:
    """The baseline: pre-encoded rows COPYed into `events`, one transaction per `batch`,
    synchronous_commit on (what FULL commits with)."""
    import orjson
    import psycopg

    from sandex.engine.runtime.composition import TABLES
    from sandex.engine.store.postgres import PostgresEventStore

    PostgresEventStore(url, tables=TABLES).close()  # the schema
    data = orjson.dumps({"n": 0}).decode()
    meta = orjson.dumps({"command": "Bench", "client_id": "bench"}).decode()
    rows = [
        (i, "bench", i, "BenchNoted", 1, data, meta, "2024-01-01T00:00:00.000000Z")
        for i in range(1, n + 1)
    ]
    columns = "position, stream, version, type, schema, data, meta, occurred_at"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = on")
        with Timer() as t:
            for start in range(0, n, batch):
                with (
                    conn.transaction(),
                    conn.cursor() as cur,
                    cur.copy(f"COPY events ({columns}) FROM STDIN") as copy,  # type: ignore[arg-type]
                ):
                    for row in rows[start : start + batch]:
                        copy.write_row(row)
    return n / t.seconds


def appends(server: Any, events: int, runs: int) -> None:
    pairs = []
    for _ in range(runs):
        raw = raw_copy(server.create("raw"), events)
        writer = through_writer(
            server.create("writer"),  # type: ignore[arg-type]
            [_Note(n=i) for i in range(events)],
            together=64,
        )
        pairs.append((raw, writer))
    print(
        f"raw COPY into events (synchronous_commit on, 500/tx)  {_spread([p[0] for p in pairs], _rate)}"
    )
    ratio = statistics.median(w / r for r, w in pairs)
    print(
        f"writer on PostgreSQL, one-event commands (FULL)      {_spread([p[1] for p in pairs], _rate)}"
        f"  ratio {ratio:.2f} (min {min(w / r for r, w in pairs):.2f},"
        f" max {max(w / r for r, w in pairs):.2f})"
    )


def _serve(db: str, tmp: Path) -> tuple[subprocess.Popen[bytes], str, dict[str, str]]:
    port = _free_port()
    config = tmp / "bench.yaml"
    config.write_text("rate_limits_enabled: false\n")
    proc = _start(
        [sys.executable, "-m", "sandex.api_adapter.cli", "serve", "--db", db, "--port", str(port)]
        + ["--clock", "wall", "--durability", "FULL", "--log-level", "WARNING"]
        + ["--log-format", "json", "--config", str(config)],
        f"http://127.0.0.1:{port}/v2/sandbox/clock",
    )
    root = f"http://127.0.0.1:{port}"
    form = b"grant_type=client_credentials&client_id=sandex&client_secret=sandex-secret"
    token = _request(
        f"{root}/oauth2/token", form, {"Content-Type": "application/x-www-form-urlencoded"}
    )
    auth = {"Authorization": f"Bearer {token['access_token']}"}
    for asset, amount in (("USD", "1000000000"), ("BTC", "100000"), ("ETH", "1000000")):
        _request(
            f"{root}/v2/sandbox/profiles/default/deposit",
            json.dumps({"asset": asset, "amount": amount}).encode(),
            {"Content-Type": "application/json", **auth},
        )
    return proc, f"{root}/v2/profiles/default/orders", auth


def http_orders(server: Any, seconds: int, runs: int, tmp: Path) -> None:
    pairs = []
    encoded = [json.dumps(b).encode() for b in BODIES]
    lat: dict[str, list[dict[str, Any]]] = {"postgresql": [], "sqlite": []}
    for k in range(runs):
        got = {}
        for name, db in (
            ("sqlite", str(tmp / f"orders{k}.db")),
            ("postgresql", server.create("http")),
        ):
            proc, url, auth = _serve(db, tmp)
            try:
                _load(url, BODIES, auth, 1, 32)
                got[name] = _load(url, BODIES, auth, seconds, 32)["rps"]
                got[f"{name}_proc"] = proc.pid
                if name == "postgresql":
                    rate = 0.5 * got["postgresql"]
                    lat[name].append(open_loop(url, encoded, auth, rate, seconds, 32, proc.pid))
            finally:
                _stop(proc)
        # SQLite's latencies at PostgreSQL's offered rate, on a fresh server
        proc, url, auth = _serve(str(tmp / f"orders{k}b.db"), tmp)
        try:
            lat["sqlite"].append(open_loop(url, encoded, auth, rate, seconds, 32, proc.pid))
        finally:
            _stop(proc)
        pairs.append((got["sqlite"], got["postgresql"]))
    print(
        f"HTTP POST orders, SQLite FULL (closed loop)        {_spread([p[0] for p in pairs], lambda x: f'{x:,.0f} req/s')}"
    )
    ratios = [p / s for s, p in pairs]
    print(
        f"HTTP POST orders, PostgreSQL FULL (closed loop)    {_spread([p[1] for p in pairs], lambda x: f'{x:,.0f} req/s')}"
        f"  ratio {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})"
    )
    for name in ("postgresql", "sqlite"):
        p99 = [r["p99"] for r in lat[name]]
        print(open_loop_line(f"POST orders on {name}", lat[name][len(lat[name]) // 2]))
        print(f"  {name} open-loop p99 over the runs: {_spread(p99, lambda x: f'{x:.1f} ms')}")


def startup(url: str) -> tuple[float, int]:
    """Seconds to open an engine on `url` in a fresh process (as bench_store's start-up),
    and the position of the snapshot it started from; its warnings are shown."""
    code = _STARTUP.format(root=str(ROOT), path=url, every=100_000)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *said, figures = done.stdout.splitlines()  # the engine logs to stdout, before the figures
    for line in said + done.stderr.splitlines():
        if "warning" in line.lower() or "error" in line.lower():
            print(f"  start-up said: {line[:300]}")
    out = figures.split()
    return float(out[0]), int(out[2])


def startups(server: Any, n: int, tail: int, runs: int, tmp: Path) -> None:
    from sandex.engine.runtime.composition import TABLES
    from sandex.engine.store import open_store
    from sandex.engine.tools.copy import copy

    sqlite = tmp / "replay.db"
    with Timer() as built:
        build_log(sqlite, n)
    url = server.create("startup")
    with Timer() as copied:
        copy(sqlite, url)
    print(
        f"built {n:,} events on SQLite in {built.seconds:.1f} s, copied to PostgreSQL in {copied.seconds:.1f} s"
    )
    store = open_store(url, tables=TABLES)
    try:
        seconds, size, at = snapshot_store(store, n - tail)
    finally:
        store.close()
    print(f"state snapshot at {at:,} built in {seconds:.1f} s, {size / 1e6:.1f} MB")
    got = [startup(url) for _ in range(runs)]
    print(
        f"start-up on PostgreSQL from a snapshot  {_spread([g[0] for g in got], _secs)};"
        f" {n:,} events, snapshot at {got[0][1]:,}, {n - got[0][1]:,} replayed"
    )


def failover(server: Any, runs: int, tmp: Path) -> None:
    from tests.support.failover_helpers import Load, Node, logged_text, verify

    url = server.create("failover")
    nodes = [Node(url, tmp / "n0.log"), Node(url, tmp / "n1.log")]
    times: list[float] = []
    acknowledged = lost = 0
    try:
        for k in range(runs):
            writer = next(n for n in nodes if n.role() == "writer")
            standby = next(n for n in nodes if n is not writer)
            standby.wait_role("standby")
            load = Load([writer.base, standby.base]).start()
            time.sleep(2)
            killed = time.monotonic()
            writer.signal(signal.SIGKILL)
            writer.proc.wait(timeout=10)
            deadline = killed + 30
            while load.first_after(killed, standby.base) is None and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.5)
            load.finish()
            took = load.first_after(killed, standby.base)
            times.append(took if took is not None else float("inf"))
            text = logged_text(url)
            acknowledged += len(load.acknowledged)
            lost += sum(1 for a in load.acknowledged if a[2] not in text)
            writer.end()
            nodes[nodes.index(writer)] = Node(url, tmp / f"n{k + 2}.log")  # back, as standby
    finally:
        for node in nodes:
            node.end()
    print(f"failover, SIGKILL to the standby's first acknowledged write  {_spread(times, _secs)}")
    print(f"  acknowledged writes: {acknowledged:,}, missing from the log: {lost}")
    done = verify(url)
    print(
        f"sandex verify (failover database): {'OK' if done.returncode == 0 else done.stdout[-300:]}"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=20_000)
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--replay-events", type=int, default=1_000_000)
    p.add_argument("--tail", type=int, default=50_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--only", nargs="*", default=["appends", "http", "startup", "failover"])
    args = p.parse_args()
    from tests.support.postgres_server import ENV, server

    print(f"machine: {machine()}")
    print(
        "PostgreSQL: a throwaway cluster, fsync on, synchronous_commit on"
        if not os.environ.get(ENV)
        else f"PostgreSQL: the server of {ENV}"
    )
    with server(fsync=True) as pg, tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.environ["SANDEX_STATE_DIR"] = str(tmp / "state")  # key files of the databases
        if "appends" in args.only:
            appends(pg, args.events, args.runs)
        if "http" in args.only:
            http_orders(pg, args.seconds, args.runs, tmp)
        if "startup" in args.only:
            startups(pg, args.replay_events, args.tail, args.runs, tmp)
        if "failover" in args.only:
            failover(pg, args.runs, tmp)


if __name__ == "__main__":
    main()
