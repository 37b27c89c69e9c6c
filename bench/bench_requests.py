"""Issue 31's request log figures, through HTTP against sandex's own server.

    python bench/bench_requests.py [--rounds 5] [--fill 100000] [--requests 200]
                                   [--seconds 3] [--warmup 1] [--only first layer orders]

- `first`: `GET /v2/sandbox/requests`, its first page (100 entries, the bootstrap
  client's: everyone's), at `--fill` recorded requests. Each round starts a server
  process (this script with `--serve`) on a fresh database: 10 tenants, each with 100
  sandbox deposits (real feed events), then the world's request log filled in that
  process with `--fill` entries, each a tenant's deposit with the log positions of one
  of them (so each page reads its events from the feed, as a real one does), then
  served with sandex's own listener and protocol (`serve_on`, `uvicorn_options`). The
  parent asks for the page `--requests` times on one keep-alive connection after a
  warm-up: p50 and p99 of the round; the line is the median of the rounds [min–max]. A
  tenant's first page (its own entries among everyone's) is measured alike.
- `layer`: the access log layer's own time per request with a full request log and
  without, in this process, paired and alternating: what recording adds.
- `orders`: what keeping the log costs the hot path: HTTP orders/s (wrk, 32 connections,
  the HTTP bench's bodies, prices still) on a server that keeps 100,000 requests over one
  that keeps none (`request_log_size: 0`), both running, rounds back to back, the one
  that goes first alternating: the ratio per round, median [min–max].
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, percentiles  # noqa: E402
from bench.bench_withdrawals import _free_port, _start, _stop  # noqa: E402
from bench.bench_worlds import (  # noqa: E402
    default_world,
    orders_per_second,
    paired,
    serving,
    spread,
)

TENANTS = 10
DEPOSITS = 100  # each tenant's, each a feed event
SECRET = "sandex-secret"


# -- the server process ------------------------------------------------------------------


def serve(db: Path, port: int, fill: int) -> None:
    """Open a world on `db`, fill its request log with `fill` entries, serve it on
    `port` until interrupted."""
    from sandex.api_adapter.bootstrap import fixed
    from sandex.api_adapter.logging import configure
    from sandex.api_adapter.recent_requests import Entry
    from sandex.api_adapter.server.connections import uvicorn_options
    from sandex.api_adapter.server.listen import listen, serve_on
    from sandex.api_adapter.world import World
    from sandex.engine import Settings
    from sandex.engine.kernel.commands import Actor, CreateCustomer, SandboxDeposit

    configure(json_lines=True, level="WARNING")
    settings = Settings(
        clock="manual", seed=1, rate_limits_enabled=False, request_log_size=max(fill, 1)
    )
    world = World.open(db, settings, bootstrap=fixed("sandex", SECRET)).start()
    engine = world.engine
    spans: list[tuple[str, str, tuple[int, int]]] = []
    for i in range(TENANTS):
        made = engine.execute(CreateCustomer(client_id=f"tenant{i}", client_secret=SECRET))
        actor = Actor(made["customer_id"], f"tenant{i}")
        for _ in range(DEPOSITS):
            engine.execute(
                SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
            )
            position = engine.state.position
            spans.append((made["customer_id"], f"tenant{i}", (position, position)))
    recent = world.app.state.requests
    at = engine.clock.now()
    for n in range(fill):
        customer_id, client_id, span = spans[n % len(spans)]
        recent.add(
            Entry(
                recent.last_id + 1, at, "POST", "/v2/sandbox/profiles/default/deposit",
                "CreateSandboxDeposit", 200, None, None, [span], 1.0, f"{n:032x}",
                client_id, customer_id,
            )
        )  # fmt: skip
    listener = listen("127.0.0.1", port)
    options = {"log_config": None, "access_log": False, **uvicorn_options(settings)}
    try:
        serve_on(listener, world.front, host="127.0.0.1", port=port, **options)
    finally:
        world.stop()


# -- the parent --------------------------------------------------------------------------


def _token(conn: http.client.HTTPConnection, client_id: str) -> dict[str, str]:
    form = f"grant_type=client_credentials&client_id={client_id}&client_secret={SECRET}"
    conn.request(
        "POST", "/oauth2/token", body=form,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    got = json.loads(conn.getresponse().read())
    return {"Authorization": f"Bearer {got['access_token']}"}


def _latencies(conn: http.client.HTTPConnection, auth: dict[str, str], count: int) -> list[float]:
    """`count` first pages after as many warm-up ones, each timed, ms."""
    taken = []
    for i in range(2 * count):
        started = time.perf_counter()
        conn.request("GET", "/v2/sandbox/requests", headers=auth)
        answer = conn.getresponse()
        body = answer.read()
        elapsed = (time.perf_counter() - started) * 1000
        assert answer.status == 200, body[:300]
        if i == 0:
            assert len(json.loads(body)["items"]) == 100, body[:300]
        if i >= count:
            taken.append(elapsed)
    return taken


def first_pages(folder: Path, rounds: int, fill: int, count: int) -> None:
    results: dict[str, dict[str, list[float]]] = {
        who: {"p50": [], "p99": []} for who in ("everyone", "tenant")
    }
    for r in range(rounds):
        port = _free_port()
        db = folder / f"first{r}.db"
        cmd = [sys.executable, __file__, "--serve", str(db), str(port), str(fill)]
        proc = _start(cmd, f"http://127.0.0.1:{port}/healthz")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            for who, client_id in (("everyone", "sandex"), ("tenant", "tenant3")):
                got = percentiles(_latencies(conn, _token(conn, client_id), count))
                results[who]["p50"].append(got["p50"])
                results[who]["p99"].append(got["p99"])
            conn.close()
        finally:
            _stop(proc)
    for who, label in (
        ("everyone", "the bootstrap client's (everyone's)"),
        ("tenant", f"a tenant's (1 of {TENANTS})"),
    ):
        print(
            f"GET /v2/sandbox/requests first page at {fill:,} recorded requests, {label}, ms:"
            f" p50 {spread(results[who]['p50'])}; p99 {spread(results[who]['p99'])}"
            f" ({rounds} rounds of {count} requests)"
        )


def orders(folder: Path, rounds: int, seconds: int, warmup: int, conns: int) -> None:
    # Still prices: the order bodies' takers stay within the taker band of the mid price.
    still = {"market_volatility": "0"}
    with (
        serving(folder, "none", request_log_size=0, **still) as none,
        serving(folder, "kept", request_log_size=100_000, **still) as kept,
    ):
        sides = [default_world(none), default_world(kept)]
        for side in sides:
            side.fund()
        print(f"orders: wrk -t2 -c{conns}, {seconds} s after {warmup} s warm-up")
        paired(
            "HTTP orders/s, request log kept (100,000) over none",
            ("none", lambda: orders_per_second(sides[:1], seconds, warmup, conns)),
            ("kept", lambda: orders_per_second(sides[1:], seconds, warmup, conns)),
            rounds,
        )


def layer(rounds: int, count: int) -> None:
    """The access log layer's own time per request, in this process, with the request
    log (a full one, on a wall clock) and without: rounds back to back, the side that
    goes first alternating, the difference per round."""
    import asyncio

    from sandex.api_adapter.auth import Principal
    from sandex.api_adapter.logging import RequestLog, configure
    from sandex.api_adapter.operations import operation
    from sandex.api_adapter.pipeline import OPERATION, PASSED, Passage
    from sandex.api_adapter.recent_requests import RecentRequests
    from sandex.engine.kernel.clock import WallClock

    configure(json_lines=True, level="WARNING")
    op = operation("CreateOrder")
    passage = Passage(op, Principal("customer", "client", frozenset()))

    async def app(scope: Any, receive: Any, send: Any) -> None:
        scope["state"][OPERATION] = op  # as the pipeline leaves them
        scope["state"][PASSED] = passage
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    async def nothing(message: Any) -> None:
        return None

    async def receive() -> Any:
        return {"type": "http.request", "body": b""}

    async def per_request(middleware: Any) -> float:
        started = time.perf_counter()
        for _ in range(count):
            scope = {"type": "http", "method": "POST", "path": "/v2/profiles/default/orders"}
            scope["headers"] = [(b"authorization", b"Bearer x")]
            await middleware(scope, receive, nothing)
        return (time.perf_counter() - started) / count * 1e6

    recent = RecentRequests(100_000, WallClock(), lambda _: None)
    sides = {"without": RequestLog(app), "with": RequestLog(app, recent)}
    got: dict[str, list[float]] = {"without": [], "with": []}

    async def rounds_of() -> None:
        await per_request(sides["with"])  # fills the log: every later append drops one
        for _ in range(99_999 // count):
            await per_request(sides["with"])
        for i in range(rounds):
            for name in ("without", "with") if i % 2 == 0 else ("with", "without"):
                got[name].append(await per_request(sides[name]))

    asyncio.run(rounds_of())
    added = [b - a for a, b in zip(got["without"], got["with"], strict=True)]
    print(
        f"access log layer per request, in process, µs: with the request log (full)"
        f" {spread(got['with'])}; without {spread(got['without'])}; added {spread(added)}"
        f" ({rounds} rounds of {count:,} requests)"
    )


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--serve":
        serve(Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return 0
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--fill", type=int, default=100_000)
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--only", nargs="*", default=["first", "layer", "orders"])
    args = p.parse_args()
    print(f"machine: {machine()}; load average at the start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="sandex-bench-requests-") as tmp:
        folder = Path(tmp)
        os.environ["SANDEX_STATE_DIR"] = str(folder / "state")
        if "first" in args.only:
            first_pages(folder, args.rounds, args.fill, args.requests)
        if "layer" in args.only:
            layer(args.rounds, 20_000)
        if "orders" in args.only:
            orders(folder, args.rounds, args.seconds, args.warmup, args.connections)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
