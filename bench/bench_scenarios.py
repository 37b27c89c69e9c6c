"""Scenario replay speed, and time travel on a large log.

    .venv/bin/python bench/bench_scenarios.py                     # bounded: 200,000 events
    .venv/bin/python bench/bench_scenarios.py --events 1000000    # the 1M figure
    .venv/bin/python bench/bench_scenarios.py --events 1000000 --log /tmp/1m.db   # keep it

1. Steps per second of `sandex replay` in-process: every scenario of `scenarios/`
   (each on a fresh sandbox, start-up included), and one long generated scenario
   (steady state: deposits, fee quotes, withdrawals, orders, clock moves, reads).
2. A log of N events written through the real engine (a mix of deposits, fee quotes,
   withdrawals that complete, market orders that trade, clock moves), then time
   travel into a new database at 90% and at 100% of it: copy the prefix, the state at
   the cut (the newest start-up state snapshot before it and the tail, or a full
   replay), the read models; then `sandex verify` on the result (a full replay).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from concurrent.futures import Future
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import Timer, fmt_rate, machine, measured_tree  # noqa: E402

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

from sandex.api_adapter.logging import configure  # noqa: E402
from sandex.api_adapter.scenarios.runner import run_in_process  # noqa: E402
from sandex.engine import Settings, open_engine  # noqa: E402
from sandex.engine.kernel.commands import (  # noqa: E402
    Actor,
    AdvanceClock,
    CreateCryptoWithdrawal,
    CreateCustomer,
    CreateOrder,
    CreateWithdrawalFee,
    SandboxDeposit,
)
from sandex.engine.tools.scenario_file import from_data, load_file  # noqa: E402
from sandex.engine.tools.time_travel import travel  # noqa: E402
from sandex.engine.tools.verify import verify  # noqa: E402

BTC = "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2"


def shipped_scenarios() -> tuple[int, float]:
    scenarios = [load_file(p) for p in sorted((ROOT / "scenarios").glob("*.yaml"))]
    steps = 0
    with Timer() as t:
        for s in scenarios:
            result = run_in_process(s)
            assert result.ok, s.source
            steps += len(result.steps)
    return steps, t.seconds


def long_scenario(rounds: int) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [
        {
            "request": {
                "method": "POST",
                "path": "/v2/sandbox/profiles/default/deposit",
                "body": {"asset": "USD", "amount": "10000000"},
            }
        },
        {
            "request": {
                "method": "POST",
                "path": "/v2/sandbox/profiles/default/deposit",
                "body": {"asset": "BTC", "amount": "1000"},
            }
        },
    ]
    for i in range(rounds):
        steps += [
            {
                "request": {
                    "method": "POST",
                    "path": "/v2/transfer/fees/crypto-withdrawal",
                    "body": {
                        "asset": "BTC",
                        "crypto_network": "BITCOIN",
                        "destination_address": BTC,
                        "amount": "0.001",
                    },
                },
                "save": {"fee": "id"},
            },
            {
                "request": {
                    "method": "POST",
                    "path": "/v2/transfer/crypto-withdrawals",
                    "body": {
                        "profile_id": "default",
                        "asset": "BTC",
                        "crypto_network": "BITCOIN",
                        "destination_address": BTC,
                        "amount": "0.001",
                        "fee_id": "{fee}",
                    },
                },
                "expect": {"body": {"status": "PENDING"}},
                "save": {"payout": "id"},
            },
            {
                "request": {
                    "method": "POST",
                    "path": "/v2/profiles/default/orders",
                    "body": {
                        "side": "BUY" if i % 2 else "SELL",
                        "market": "BTCUSD",
                        "type": "MARKET",
                        **({"quote_amount": "100"} if i % 2 else {"base_amount": "0.002"}),
                    },
                },
                "expect": {"body": {"status": "FILLED"}},
            },
            {"advance": "10s"},
            {
                "request": {"method": "GET", "path": "/v2/transfer/transfers/{payout}"},
                "expect": {"body": {"status": "COMPLETED"}},
            },
        ]
    steps.append({"expect_balances": {"balances": {"ETH": "0"}}})
    return {
        "version": 1,
        "purpose": "a long generated session",
        "settings": {"seed": 1, "market_volatility": "0"},
        "actors": {"trader": {}},
        "steps": steps,
    }


def build_log(path: Path, events: int) -> float:
    """Write about `events` events through the engine; answer events per second."""
    settings = Settings(clock="manual", seed=3, durability="NORMAL", market_volatility=0)
    engine = open_engine(path, settings).start()
    boot = engine.execute(CreateCustomer(client_id="b", client_secret="b", bootstrap=True))
    actors = []
    for _ in range(50):
        made = engine.execute(CreateCustomer())
        actor = Actor(made["customer_id"], made["client_id"])
        actors.append(actor)
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="100"))
        engine.execute(
            SandboxDeposit(actor=actor, profile_id="default", asset="USD", amount="10000000")
        )
    admin = Actor(boot["customer_id"], "b")
    now = settings.clock_start
    with Timer() as t:
        while engine.state.position < events:
            futures: list[Future[Any]] = []
            for i, actor in enumerate(actors):
                futures.append(
                    engine.submit(
                        SandboxDeposit(
                            actor=actor, profile_id="default", asset="BTC", amount="0.001"
                        )
                    )
                )
                futures.append(
                    engine.submit(
                        CreateWithdrawalFee(
                            actor=actor,
                            asset="BTC",
                            crypto_network="BITCOIN",
                            destination_address=BTC,
                            amount="0.001",
                        )
                    )
                )
                futures.append(
                    engine.submit(
                        CreateCryptoWithdrawal(
                            actor=actor,
                            profile_id="default",
                            asset="BTC",
                            crypto_network="BITCOIN",
                            destination_address=BTC,
                            amount="0.001",
                        )
                    )
                )
                futures.append(
                    engine.submit(
                        CreateOrder(
                            actor=actor,
                            profile_id="default",
                            side="BUY" if i % 2 else "SELL",
                            market="BTCUSD",
                            type="MARKET",
                            quote_amount="50" if i % 2 else None,
                            base_amount=None if i % 2 else "0.001",
                        )
                    )
                )
            for f in futures:
                f.result()
            now += timedelta(seconds=10)
            engine.execute(AdvanceClock(actor=admin, to=now))
        written = engine.state.position
    engine.stop()
    return written / t.seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--events", type=int, default=200_000, help="size of the time-travel log")
    p.add_argument("--rounds", type=int, default=300, help="rounds of the long scenario (5 steps)")
    p.add_argument("--log", default=None, help="keep the large log here; reused when it exists")
    args = p.parse_args()
    configure(json_lines=False, level="WARNING")
    print(f"machine: {machine()}")

    steps, seconds = shipped_scenarios()
    print(
        f"shipped scenarios: {steps} steps in {seconds:.2f} s = {fmt_rate(steps / seconds)}"
        " (a fresh sandbox per scenario included)"
    )
    scenario = from_data(long_scenario(args.rounds), "<generated>")
    with Timer() as t:
        result = run_in_process(scenario)
    assert result.ok, [(s.label, s.diffs) for s in result.failed[:3]]
    n = len(result.steps)
    print(f"long scenario: {n} steps in {t.seconds:.2f} s = {fmt_rate(n / t.seconds)}")

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(args.log) if args.log else Path(tmp) / "big.db"
        rate = 0.0 if src.exists() else build_log(src, args.events)
        size = src.stat().st_size / 1e6
        total = sqlite3.connect(src).execute("SELECT max(position) FROM events").fetchone()[0]
        written = f"written through the engine at {fmt_rate(rate)}" if rate else "reused"
        print(f"log: {total:,} events {written}, {size:.0f} MB")
        for share in (0.9, 1.0):
            out = Path(tmp) / f"then-{share}.db"
            with Timer() as t:
                done = travel(src, out, position=int(total * share))
            print(
                f"time travel to position {done.position:,} ({share:.0%}): {t.seconds:.2f} s"
                f" = {fmt_rate(done.events / t.seconds)} (copy, state, read models;"
                f" {f'from the state snapshot at {done.base:,}' if done.base else 'full replay'})"
            )
        started = time.perf_counter()
        problems = verify(str(out))
        print(
            f"verify of the 100% copy: {'OK' if not problems else problems[0]}"
            f" in {time.perf_counter() - started:.2f} s"
        )


if __name__ == "__main__":
    main()
