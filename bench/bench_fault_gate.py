"""What the fault gate costs the orders (issue 31's figures): orders per second through
the whole ASGI app in one process, paired and alternating, for three apps on one engine:

- `without`: no fault gate and no FaultLayer (the pipeline as before the gate);
- `no rule`: the gate and the layer, no rule armed;
- `100 rules`: the gate and the layer, 100 rules armed on an operation the load never
  calls (GetTransfer), so each order costs the index's dict lookup.

Each app is built by `create_app` on the same started engine; the rules are armed through
the `100 rules` app after the other two were built, so only its index holds them (each
app loads its index when built). The load is `--concurrency` requests at a time through
httpx's ASGI transport, for `--seconds` per run; each round runs the three in turn, in an
order that alternates between rounds. Figures: each variant's orders/s median [min–max],
and the paired ratios to `without`, median [min–max]. Then the gate's own work per
request (the layer's header scan and the gate's check, no app behind them), in ns, median
[min–max] of the rounds: what the ratios above cannot resolve on a loaded machine.

    python bench/bench_fault_gate.py [--rounds 5] [--seconds 2] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, measured_tree  # noqa: E402

measured_tree()

import httpx  # noqa: E402

from api_adapter import logging as sandex_logging  # noqa: E402
from api_adapter.app import create_app  # noqa: E402
from api_adapter.faults import FaultGate, FaultIndex, FaultLayer, _preference  # noqa: E402
from api_adapter.operations import operation  # noqa: E402
from api_adapter.pipeline import Passage  # noqa: E402
from engine import Settings, open_engine  # noqa: E402
from engine.kernel.commands import CreateCustomer, SandboxDeposit  # noqa: E402

ORDER = {"side": "BUY", "market": "BTCUSD", "type": "LIMIT", "price": "30000", "base_amount": "0.0001"}  # fmt: skip


def _without_gate(app: Any) -> Any:
    app.user_middleware = [m for m in app.user_middleware if m.cls is not FaultLayer]
    app.state.gates = ()
    return app


async def _token(client: httpx.AsyncClient) -> dict[str, str]:
    form = {"grant_type": "client_credentials", "client_id": "sandex", "client_secret": "pw"}
    r = await client.post("/oauth2/token", data=form)
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


async def _rate(app: Any, seconds: float, concurrency: int) -> float:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        headers = await _token(client)
        done = 0
        end = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal done
            while time.perf_counter() < end:
                r = await client.post("/v2/profiles/default/orders", json=ORDER, headers=headers)
                assert r.status_code == 200, r.text
                done += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return done / (time.perf_counter() - started)


async def _arm(app: Any, rules: int) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        headers = await _token(client)
        rule = {"match": {"operation": "GetTransfer"}, "action": {"problem": {"status": 503}}}
        for _ in range(rules):
            r = await client.post("/v2/sandbox/faults", json=rule, headers=headers)
            assert r.status_code == 200, r.text


def _gate_ns(rules: int, calls: int = 200_000) -> float:
    """Nanoseconds per request of the fault layer's and gate's own checks for an order,
    with `rules` rules armed on another operation."""
    state = type("State", (), {})()
    state.faults = FaultIndex()
    for i in range(rules):
        state.faults.add(
            {
                "id": f"r{i}",
                "position": i,
                "when": "before",
                "match": {"operation": "GetTransfer"},
                "spent": False,
            }
        )
    gate = FaultGate(state)
    headers = [(b"host", b"bench"), (b"authorization", b"Bearer x"), (b"content-type", b"json")]
    scope: dict[str, Any] = {"headers": headers, "state": {}}
    passage = Passage(operation("CreateOrder"), None)
    started = time.perf_counter()
    for _ in range(calls):
        _preference(scope)
        gate(scope, passage)
    return (time.perf_counter() - started) / calls * 1e9


def _spread(values: list[float], digits: int = 3) -> str:
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}–{max(values):.{digits}f}]"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--concurrency", type=int, default=32)
    args = p.parse_args()
    print(f"machine: {machine()}")
    sandex_logging.configure(json_lines=True, level="WARNING")
    settings = Settings(clock="manual", seed=1, durability="NORMAL", rate_limits_enabled=False)
    with tempfile.TemporaryDirectory() as tmp, open_engine(Path(tmp) / "g.db", settings) as engine:
        made = engine.execute(
            CreateCustomer(client_id="sandex", client_secret="pw", bootstrap=True)
        )
        from engine.kernel.commands import Actor

        me = Actor(made["customer_id"], "sandex")
        engine.execute(
            SandboxDeposit(actor=me, profile_id="default", asset="USD", amount="1000000000")
        )
        apps = {
            "without": _without_gate(create_app(engine, webhooks_on_lifespan=False)),
            "no rule": create_app(engine, webhooks_on_lifespan=False),
            "100 rules": create_app(engine, webhooks_on_lifespan=False),
        }
        asyncio.run(_arm(apps["100 rules"], 100))
        rates: dict[str, list[float]] = {name: [] for name in apps}
        names = list(apps)
        asyncio.run(_rate(apps["without"], 0.5, args.concurrency))  # warm-up
        for i in range(args.rounds):
            for name in names if i % 2 == 0 else reversed(names):
                rates[name].append(asyncio.run(_rate(apps[name], args.seconds, args.concurrency)))
    print(
        f"orders/s through the ASGI app, {args.rounds} rounds of {args.seconds:g} s, c={args.concurrency}:"
    )
    for name, values in rates.items():
        print(f"  {name:<10} {_spread(values, 0)}")
    for name in ("no rule", "100 rules"):
        ratios = [a / b for a, b in zip(rates[name], rates["without"], strict=True)]
        print(f"  ratio {name} / without, paired: {_spread(ratios)}")
    print("the fault layer's and gate's own checks per order request:")
    for rules in (0, 100):
        spread = _spread([_gate_ns(rules) for _ in range(args.rounds)], 0)
        print(f"  gate checks with {rules} rules, ns: {spread}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
