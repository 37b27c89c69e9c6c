"""The fault gate (issue 31): what it costs HTTP orders/s, through HTTP against `sandex
serve` on loopback (wall clock, FULL durability, rate limits off), each side a server of
its own started here, funded alike.

    python bench/bench_faults.py [--rounds 5] [--seconds 3] [--warmup 1] [--connections 32]

- **without**: a server started without the fault gate (`SANDEX_NO_FAULT_GATE=1`, the
  internal switch for this figure: docs/faults.md);
- **gate**: the gate installed and no rule armed;
- **100 other**: 100 rules armed on operations other than `CreateOrder`, which the gate
  looks up by operation;
- **100 same**: 100 rules armed on `CreateOrder` whose body field (`market`) no order has,
  so the gate compares each order with every one of them.

HTTP orders/s: bench_http_orders's ten bodies, wrk when installed (closed loop). Each
ratio is paired: per round both sides back to back, the side that goes first
alternating; the median over the rounds with min–max. `sandex verify` checks each
server's database at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine  # noqa: E402
from bench.bench_withdrawals import _cli_verify  # noqa: E402
from bench.bench_worlds import (  # noqa: E402
    Sandbox,
    Server,
    default_world,
    orders_per_second,
    paired,
)

# The internal switch that starts a server without the fault gate (docs/faults.md).
NO_GATE = "SANDEX_NO_FAULT_GATE"
RULES = 100
# Operations a rule of "100 other" matches: none is an order's.
OTHERS = (
    "CreateCryptoWithdrawal",
    "GetTransfer",
    "ListTransfers",
    "CreateCryptoWithdrawalFee",
    "ListProfileBalances",
)


@contextmanager
def server(folder: Path, name: str, *, gate: bool = True) -> Iterator[Server]:
    """A funded server of this run; without the fault gate when `gate` is False."""
    if not gate:
        os.environ[NO_GATE] = "1"
    try:
        started = Server(folder, name, {"rate_limits_enabled": False})
    finally:
        os.environ.pop(NO_GATE, None)
    try:
        default_world(started).fund()
        yield started
    finally:
        started.stop()


def arm(target: Server, rules: list[dict[str, Any]]) -> None:
    for rule in rules:
        status, answer = target.call("POST", "/v2/sandbox/faults", target.admin, rule)
        assert status == 200, (status, answer)


def other_rules() -> list[dict[str, Any]]:
    return [
        {"match": {"operation": OTHERS[i % len(OTHERS)]}, "action": {"problem": {"status": 503}}}
        for i in range(RULES)
    ]


def same_rules() -> list[dict[str, Any]]:
    return [
        {
            "match": {"operation": "CreateOrder", "body": {"market": f"NONE{i}USD"}},
            "action": {"problem": {"status": 503}},
        }
        for i in range(RULES)
    ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--connections", type=int, default=32)
    args = p.parse_args()
    print(f"machine: {machine()}; load average at the start: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="sandex-bench-faults-") as tmp, ExitStack() as stack:
        folder = Path(tmp)
        os.environ["SANDEX_STATE_DIR"] = str(folder / "state")
        without = stack.enter_context(server(folder, "without", gate=False))
        gate = stack.enter_context(server(folder, "gate"))
        other = stack.enter_context(server(folder, "other"))
        same = stack.enter_context(server(folder, "same"))
        arm(other, other_rules())
        arm(same, same_rules())
        tool = "wrk -t2" if shutil.which("wrk") else "python asyncio"
        print(f"orders: {tool} -c{args.connections}, {args.seconds} s after {args.warmup} s warm-up")  # fmt: skip

        def rate(target: Sandbox) -> float:
            return orders_per_second([target], args.seconds, args.warmup, args.connections)

        base = ("without the gate", lambda: rate(default_world(without)))
        for name, side in (
            ("HTTP orders/s, the fault gate with no rule armed over without the gate",
             ("gate, no rule", lambda: rate(default_world(gate)))),
            ("HTTP orders/s, 100 rules of other operations armed over without the gate",
             ("100 rules, other operations", lambda: rate(default_world(other)))),
            ("HTTP orders/s, 100 CreateOrder rules whose body does not match over without the gate",
             ("100 rules, CreateOrder", lambda: rate(default_world(same)))),
        ):  # fmt: skip
            paired(name, base, side, args.rounds)
        for named in (without, gate, other, same):
            said, _ = _cli_verify(named.db)
            print(f"  sandex verify ({named.db.name}): {said}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
