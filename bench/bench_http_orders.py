"""Orders created per second through HTTP on loopback, against the trivial FastAPI
endpoint of bench/_baseline.py measured in the same run (before and after).

`sandex serve` runs on a wall clock with FULL durability; the load generator (wrk when
installed, else the asyncio client of bench_withdrawals.py) cycles through ten order
bodies: seven limit orders that rest, two small IOC limits that cross the house's ladder
and trade, one small market buy. A sandbox deposit (one event, the cheapest write through
the same token check, writer and group commit) is measured too, to separate the cost of
the shared request path from the cost of an order.

Throughput is the load generator's closed-loop maximum. Latencies come from an open-loop
run (bench._common.open_loop: request i is due at start + i/rate and its latency counts
from then, so a stall counts against every request behind it), offered a fixed fraction
of the orders' closed-loop throughput measured just before, and the same rate to the
trivial endpoint. `sandex verify` checks the database at the end.

    python bench/bench_http_orders.py [--seconds 10] [--connections 32] [--warmup 2]
        [--rate-fraction 0.5 | --rate 500] [--open-seconds S]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import (  # noqa: E402
    BENCH_CODE,
    cpu_line,
    machine,
    open_loop,
    open_loop_line,
    server_cpu,
)
from bench.bench_withdrawals import (  # noqa: E402
    TRIVIAL,
    _cli_verify,
    _free_port,
    _python_load,
    _request,
    _start,
    _stop,
    add_open_loop_args,
    open_loop_header,
    run_wrk,
)

BODIES: list[dict[str, Any]] = [
    {"side": "BUY", "market": "BTCUSD", "type": "LIMIT", "price": f"{30000 + i}", "base_amount": "0.0001"}
    for i in range(4)
] + [
    {"side": "SELL", "market": "ETHUSD", "type": "LIMIT", "price": f"{3000 + i}", "base_amount": "0.001"}
    for i in range(3)
] + [
    {"side": "BUY", "market": "BTCUSD", "type": "LIMIT", "price": "45000", "base_amount": "0.0001", "time_in_force": "IOC"},
    {"side": "SELL", "market": "ETHUSD", "type": "LIMIT", "price": "2100", "base_amount": "0.001", "time_in_force": "IOC"},
    {"side": "BUY", "market": "BTCUSD", "type": "MARKET", "quote_amount": "5.00"},
]  # fmt: skip


def _wrk_cycle(
    url: str, bodies: list[dict[str, Any]], headers: dict[str, str], seconds: int, conns: int
) -> dict[str, Any]:
    """wrk, each connection cycling through `bodies`."""
    quoted = ",\n".join(f"[[{json.dumps(b)}]]" for b in bodies)
    heads = ", ".join(
        f'["{k}"] = "{v}"' for k, v in {"Content-Type": "application/json", **headers}.items()
    )
    lua = f"""
local bodies = {{{quoted}}}
local headers = {{{heads}}}
local i = 0
request = function()
  i = i % #bodies + 1
  return wrk.format("POST", nil, headers, bodies[i])
end
"""
    return run_wrk(url, lua, seconds, conns)


def _load(
    url: str, bodies: list[dict[str, Any]], headers: dict[str, str], seconds: int, conns: int
) -> dict[str, Any]:
    if shutil.which("wrk"):
        return _wrk_cycle(url, bodies, headers, seconds, conns)
    return _python_load(url, bodies[0], headers, seconds, conns)  # type: ignore[return-value]


def run_http(
    seconds: int,
    connections: int,
    warmup: int = 2,
    rate_fraction: float = 0.5,
    fixed_rate: float | None = None,
    open_seconds: float | None = None,
) -> None:
    py = sys.executable
    tool = "wrk -t2" if shutil.which("wrk") else "python asyncio (first body only)"
    print(f"\nHTTP on loopback: {tool} -c{connections}, {seconds} s after {warmup} s warm-up")
    open_s = open_seconds or seconds
    encoded = [json.dumps(b).encode() for b in BODIES]

    def baseline(rate: float | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
        port = _free_port()
        base = _start(
            [py, "-m", "uvicorn", "bench._baseline:app", "--app-dir", str(BENCH_CODE)]
            + ["--port", str(port)]
            + ["--log-level", "warning", "--no-access-log"],
            f"http://127.0.0.1:{port}/openapi.json",
        )
        try:
            url = f"http://127.0.0.1:{port}/v2/trivial"
            _load(url, [TRIVIAL], {}, warmup, connections)
            cpu_before = server_cpu(base.pid)
            closed = _load(url, [TRIVIAL], {}, seconds, connections)
            closed["cpu"] = cpu_line(  # type: ignore[assignment]
                "trivial request", cpu_before, server_cpu(base.pid), closed["requests"]
            )
            body = [json.dumps(TRIVIAL).encode()]
            opened = None
            if rate:
                opened = open_loop(url, body, {}, rate, open_s, connections, base.pid)
            return closed, opened
        finally:
            _stop(base)

    before, _ = baseline()
    tmp = Path(tempfile.mkdtemp(prefix="sandex-bench-"))
    db = tmp / "orders.db"
    port = _free_port()
    serve = [
        py, "-m", "sandex.api_adapter.cli", "serve", "--db", str(db), "--port", str(port),
        "--clock", "wall", "--durability", "FULL", "--log-level", "WARNING", "--log-format", "json",
    ]  # fmt: skip
    from sandex.engine import Settings

    if "rate_limits_enabled" in Settings.model_fields:
        # the sandbox's per-client rate limits would answer most of the load with 429
        config = tmp / "bench.yaml"
        config.write_text("rate_limits_enabled: false\n")
        serve += ["--config", str(config)]
    server = _start(serve, f"http://127.0.0.1:{port}/v2/sandbox/clock")
    root = f"http://127.0.0.1:{port}"
    try:
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
        url = f"{root}/v2/profiles/default/orders"
        _load(url, BODIES, auth, warmup, connections)
        cpu_before = server_cpu(server.pid)
        orders = _load(url, BODIES, auth, seconds, connections)
        cpu_orders = cpu_line("order", cpu_before, server_cpu(server.pid), orders["requests"])
        # The cheapest write through the same stack (token check, one command, one
        # event, group commit): what the shared request path itself allows.
        deposit = {"asset": "USD", "amount": "1"}
        cpu_before = server_cpu(server.pid)
        deposits = _load(
            f"{root}/v2/sandbox/profiles/default/deposit", [deposit], auth, seconds, connections
        )
        cpu_deposits = cpu_line("deposit", cpu_before, server_cpu(server.pid), deposits["requests"])
        rate = fixed_rate or rate_fraction * orders["rps"]
        orders_open = open_loop(url, encoded, auth, rate, open_s, connections, server.pid)
    finally:
        _stop(server)
    after, trivial_open = baseline(rate)
    trivial = (before["rps"] + after["rps"]) / 2

    def line(name: str, r: dict[str, Any]) -> str:
        bad = f", {r['non_2xx']:.0f} non-2xx" if r["non_2xx"] else ""
        return f"  {name:<34} {r['rps']:>9,.0f} req/s{bad}"

    print("closed loop (throughput):")
    print(line("trivial FastAPI endpoint, before", before))
    print(line("trivial FastAPI endpoint, after", after))
    print(line("POST orders (FULL)", orders))
    print(line("POST sandbox deposit (FULL)", deposits))
    print(f"  ratio orders / trivial (mean of before and after): {orders['rps'] / trivial:.2f}")
    print(f"  ratio orders / sandbox deposit: {orders['rps'] / deposits['rps']:.2f}")
    print(before["cpu"], "(before)")
    print(after["cpu"], "(after)")
    print(cpu_orders)
    print(cpu_deposits)
    how = argparse.Namespace(
        rate=fixed_rate,
        rate_fraction=rate_fraction,
        open_seconds=open_s,
        seconds=seconds,
        connections=connections,
    )
    print(open_loop_header(rate, how, "POST orders'", orders_open))
    assert trivial_open is not None
    print(open_loop_line("trivial FastAPI endpoint", trivial_open))
    print(open_loop_line("POST orders (FULL)", orders_open))
    said, took = _cli_verify(db)
    print(f"  sandex verify: {said} ({took:.1f} s)")
    shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--warmup", type=int, default=2)
    add_open_loop_args(p)
    args = p.parse_args()
    print(f"machine: {machine()}")
    run_http(
        args.seconds,
        args.connections,
        args.warmup,
        args.rate_fraction,
        args.rate,
        args.open_seconds,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
