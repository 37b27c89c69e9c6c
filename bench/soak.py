"""Soak: mixed load from several clients on loopback for a bounded time, then verify.

`sandex serve` (wall clock, FULL durability, rate limits off) takes an open-loop load at a
constant arrival rate: request i is due at start + i/rate whatever happened to the ones
before it, and its latency is measured from that moment, so a stall shows up in the
percentiles instead of silently slowing the load (no coordinated omission). Several
customers' clients read balances, orders, transfers and the order book, place and cancel
resting orders, trade, withdraw, deposit and move funds between profiles. The run reports
throughput, p50/p99/p99.9 latency, errors by status, the server's memory over time, and
ends with `sandex verify` on the database.

    python bench/soak.py [--seconds 60] [--rate 300] [--clients 8] [--connections 32]
    make soak DURATION=600
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import cpus, machine, percentiles, pin  # noqa: E402
from bench.bench_withdrawals import _free_port  # noqa: E402

SANDEX = [sys.executable, "-m", "sandex.api_adapter.cli"]
ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
HOST = "127.0.0.1"
# (kind, weight): reads dominate, as they do for a trading integration.
MIX = [
    ("balances", 25),
    ("order_book", 10),
    ("list_orders", 10),
    ("list_transfers", 10),
    ("rest_order", 15),
    ("cancel_order", 5),
    ("market_order", 8),
    ("withdrawal", 7),
    ("deposit", 5),
    ("internal", 5),
]


@dataclass
class Client:
    client_id: str
    token: str
    profile: str
    desk: str
    resting: list[str] = field(default_factory=list)


@dataclass
class Stats:
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[Any] = field(default_factory=Counter)
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    window: list[float] = field(default_factory=list)


# -- the server --------------------------------------------------------------------------


def start_server(db: Path, log: Path, durability: str) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    cmd = [*SANDEX, "serve", "--db", str(db), "--port", str(port), "--no-rate-limits"]
    cmd += ["--durability", durability, "--log-format", "json", "--log-level", "WARNING"]
    out = log.open("ab")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=out)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {log.read_text()[-2000:]}")
        try:
            status, _ = asyncio.run(_once("GET", port, "/v2/sandbox/clock"))
            if status == 200:
                return proc, port
        except OSError:
            time.sleep(0.1)
    raise SystemExit("server did not start")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- a small HTTP/1.1 client: cheap enough that the load generator is not the bottleneck --


def _raw(
    method: str,
    port: int,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    form: str | None = None,
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{port}"]
    payload = b""
    if body is not None:
        payload = json.dumps(body).encode()
        lines.append("Content-Type: application/json")
    elif form is not None:
        payload = form.encode()
        lines.append("Content-Type: application/x-www-form-urlencoded")
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    lines.append(f"Content-Length: {len(payload)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes
) -> tuple[int, bytes]:
    writer.write(raw)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = await reader.readexactly(length) if length else b""
    return status, body


async def _once(method: str, port: int, path: str, **kw: Any) -> tuple[int, Any]:
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        status, body = await _exchange(reader, writer, _raw(method, port, path, **kw))
    finally:
        writer.close()
    return status, json.loads(body) if body else None


# -- set-up: customers, their clients and their money -----------------------------------


async def make_clients(port: int, n: int) -> list[Client]:
    form = "grant_type=client_credentials&client_id=sandex&client_secret=sandex-secret"
    _, token = await _once("POST", port, "/oauth2/token", form=form)
    admin = {"Authorization": f"Bearer {token['access_token']}"}
    clients = []
    for _ in range(n):
        _, made = await _once("POST", port, "/v2/sandbox/customers", body={}, headers=admin)
        form = (
            f"grant_type=client_credentials&client_id={made['client_id']}"
            f"&client_secret={made['client_secret']}"
        )
        _, tok = await _once("POST", port, "/oauth2/token", form=form)
        auth = {"Authorization": f"Bearer {tok['access_token']}"}
        _, desk = await _once("POST", port, "/v2/profiles", body={"nickname": "desk"}, headers=auth)
        for asset, amount in (("BTC", "100"), ("USD", "10000000")):
            status, _ = await _once(
                "POST",
                port,
                "/v2/sandbox/profiles/default/deposit",
                body={"asset": asset, "amount": amount},
                headers=auth,
            )
            assert status == 200
        clients.append(
            Client(made["client_id"], tok["access_token"], made["profile_id"], desk["id"])
        )
    return clients


def request_for(kind: str, c: Client, n: int, port: int) -> tuple[bytes, str]:
    auth = {"Authorization": f"Bearer {c.token}", "X-Request-ID": f"soak-{n}"}
    p = c.profile
    if kind == "balances":
        return _raw("GET", port, f"/v2/profiles/{p}/balances", headers=auth), kind
    if kind == "order_book":
        return _raw("GET", port, "/v2/markets/BTCUSD/order-book"), kind
    if kind == "list_orders":
        return _raw("GET", port, f"/v2/profiles/{p}/orders?limit=20", headers=auth), kind
    if kind == "list_transfers":
        return _raw("GET", port, "/v2/transfer/transfers?limit=20", headers=auth), kind
    if kind == "cancel_order" and c.resting:
        order = c.resting.pop(0)
        return _raw("DELETE", port, f"/v2/profiles/{p}/orders/{order}", headers=auth), kind
    if kind in ("rest_order", "cancel_order"):
        body = {"side": "BUY", "market": "BTCUSD", "type": "LIMIT", "price": "29750"}
        body |= {"base_amount": "0.001", "ref_id": f"soak-{n}"}
        return _raw("POST", port, f"/v2/profiles/{p}/orders", body, auth), "rest_order"
    if kind == "market_order":
        body = {"side": "BUY", "market": "BTCUSD", "type": "MARKET", "quote_amount": "20"}
        if n % 2:
            body = {"side": "SELL", "market": "BTCUSD", "type": "MARKET", "base_amount": "0.0004"}
        return _raw("POST", port, f"/v2/profiles/{p}/orders", body, auth), kind
    if kind == "withdrawal":
        body = {
            "profile_id": p,
            "asset": "BTC",
            "destination_address": ADDRESS,
            "crypto_network": "BITCOIN",
            "amount": "0.0001",
            "ref_id": f"soak-{n}",
        }
        return _raw("POST", port, "/v2/transfer/crypto-withdrawals", body, auth), kind
    if kind == "deposit":
        body = {"asset": "BTC", "amount": "0.001"}
        return _raw("POST", port, f"/v2/sandbox/profiles/{p}/deposit", body, auth), kind
    body = {"from_profile_id": p, "to_profile_id": c.desk, "asset": "BTC", "amount": "0.0001"}
    return _raw("POST", port, "/v2/transfer/internal", body, auth), "internal"


# -- the open-loop run -----------------------------------------------------------------


async def run_load(
    port: int,
    clients: list[Client],
    seconds: float,
    rate: float,
    connections: int,
    pid: int,
    sample_every: float,
    seed: int,
) -> tuple[Stats, list[dict[str, float]], float]:
    rng = random.Random(seed)
    kinds = [k for k, w in MIX for _ in range(w)]
    queue: asyncio.Queue[tuple[float, bytes, str, Client] | None] = asyncio.Queue()
    stats = Stats()
    samples: list[dict[str, float]] = []

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(HOST, port)
        while (item := await queue.get()) is not None:
            due, raw, kind, client = item
            try:
                status, body = await _exchange(reader, writer, raw)
            except (OSError, asyncio.IncompleteReadError):
                status, body = 0, b""
                writer.close()
                reader, writer = await asyncio.open_connection(HOST, port)
            latency = time.perf_counter() - due
            stats.latencies.append(latency)
            stats.window.append(latency)
            stats.by_kind.setdefault(kind, []).append(latency)
            stats.statuses[(kind, status)] += 1
            if kind == "rest_order" and status == 200:
                client.resting.append(json.loads(body)["id"])
        writer.close()

    async def sampler(start: float) -> None:
        while True:
            await asyncio.sleep(sample_every)
            window, stats.window = stats.window, []
            p = percentiles(window) if window else {"p50": 0.0, "p99": 0.0}
            sample = {
                "t": round(time.perf_counter() - start, 1),
                "rss_mb": round(rss_mb(pid), 1),
                "completed_per_s": round(len(window) / sample_every, 1),
                "p50_ms": round(p["p50"] * 1000, 2),
                "p99_ms": round(p["p99"] * 1000, 2),
                "queued": queue.qsize(),
            }
            samples.append(sample)
            print("  " + "  ".join(f"{k}={v}" for k, v in sample.items()), flush=True)

    workers = [asyncio.create_task(connection()) for _ in range(connections)]
    start = time.perf_counter()
    sampling = asyncio.create_task(sampler(start))
    total = int(seconds * rate)
    for n in range(total):
        due = start + n / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        client = clients[n % len(clients)]
        raw, kind = request_for(rng.choice(kinds), client, n, port)
        queue.put_nowait((due, raw, kind, client))
    for _ in workers:
        queue.put_nowait(None)
    await asyncio.gather(*workers)
    elapsed = time.perf_counter() - start
    sampling.cancel()
    return stats, samples, elapsed


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seconds", type=float, default=60, help="how long the load runs (bounded)")
    p.add_argument("--rate", type=float, default=300, help="requests per second offered")
    p.add_argument("--clients", type=int, default=8, help="customers, one API client each")
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--durability", choices=["FULL", "NORMAL"], default="FULL")
    p.add_argument("--sample", type=float, default=None, help="seconds between samples")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--db", type=Path, default=None, help="keep the database here")
    p.add_argument("--json", type=Path, default=None, help="write the figures to this file")
    args = p.parse_args()
    if not 0 < args.seconds <= 24 * 3600:
        raise SystemExit("--seconds must be within a day")
    sample_every = args.sample or max(2.0, args.seconds / 20)
    tmp = Path(tempfile.mkdtemp(prefix="sandex-soak-"))
    db = args.db or tmp / "soak.db"
    print(f"machine: {machine()}")
    print(
        f"soak: {args.seconds:g} s at {args.rate:g} req/s offered (open loop), {args.clients} clients, "
        f"{args.connections} connections, durability {args.durability}, db {db}"
    )
    proc, port = start_server(db, tmp / "server.log", args.durability)
    try:
        clients = asyncio.run(make_clients(port, args.clients))
        rss_start = rss_mb(proc.pid)
        # the generator and the server on separate cores, so that they do not take turns
        avail = cpus()
        if len(avail) > 1 and pin(proc.pid, {avail[0]}):
            os.sched_setaffinity(0, {avail[-1]})
            print(f"server pinned to CPU {avail[0]}, load generator to CPU {avail[-1]}")
        stats, samples, elapsed = asyncio.run(
            run_load(
                port,
                clients,
                args.seconds,
                args.rate,
                args.connections,
                proc.pid,
                sample_every,
                args.seed,
            )
        )
        rss_end = rss_mb(proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    verify = subprocess.run(
        [*SANDEX, "verify", "--db", str(db)], cwd=ROOT, capture_output=True, text=True
    )
    lat = percentiles(stats.latencies)
    ok = sum(n for (_, s), n in stats.statuses.items() if 200 <= s < 300)
    errors = {f"{k} {s}": n for (k, s), n in sorted(stats.statuses.items()) if not 200 <= s < 300}
    server_errors = sum(n for (_, s), n in stats.statuses.items() if s >= 500 or s == 0)
    report = {
        "seconds": round(elapsed, 1),
        "offered_per_s": args.rate,
        "completed": len(stats.latencies),
        "throughput_per_s": round(len(stats.latencies) / elapsed, 1),
        "ok": ok,
        "p50_ms": round(lat["p50"] * 1000, 2),
        "p99_ms": round(lat["p99"] * 1000, 2),
        "p99.9_ms": round(lat["p99.9"] * 1000, 2),
        "max_ms": round(lat["max"] * 1000, 2),
        "errors": errors,
        "server_errors": server_errors,
        "rss_mb_start": round(rss_start, 1),
        "rss_mb_end": round(rss_end, 1),
        "db_mb": round(sum(f.stat().st_size for f in db.parent.glob(db.name + "*")) / 2**20, 1),
        "verify": verify.stdout.strip() or verify.stderr.strip(),
        "by_kind_p99_ms": {
            k: round(percentiles(v)["p99"] * 1000, 2) for k, v in sorted(stats.by_kind.items())
        },
        "samples": samples,
    }
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0 if verify.returncode == 0 and server_errors == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
