"""The fault gate (issue 31): what it costs HTTP orders/s, through HTTP against `sandex
serve` on loopback (wall clock, FULL durability, rate limits off, prices held still),
each side a server of its own started here, funded alike.

    python bench/bench_faults.py [--rounds 5] [--seconds 3] [--warmup 1] [--connections 32]

Each figure pairs two fresh servers, which take the same orders:

- **without**: a server started without the fault gate (`SANDEX_NO_FAULT_GATE=1`, the
  internal switch for this figure: docs/faults.md), against one of:
- **gate**: the gate installed and no rule armed;
- **100 other**: 100 rules armed on operations other than `CreateOrder`, which the gate
  looks up by operation;
- **100 same**: 100 rules armed on `CreateOrder` whose body field (`market`) no order has,
  so the gate compares each order with every one of them.

HTTP orders/s: bench_http_orders's ten bodies, wrk when installed (closed loop); beside
it orders per second of the server's CPU (user + system, from /proc), which other work
on the machine disturbs less. Each ratio is paired: per round both sides back to back,
the side that goes first alternating; the median over the rounds with min–max. `sandex
verify` checks each server's database after its pair.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, server_cpu  # noqa: E402
from bench.bench_http_orders import BODIES, _load  # noqa: E402
from bench.bench_withdrawals import _cli_verify  # noqa: E402
from bench.bench_worlds import Sandbox, Server, default_world, ratio_line  # noqa: E402

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
        # Prices held still: an IOC body's price stays within the taker band on every side.
        started = Server(folder, name, {"rate_limits_enabled": False, "market_volatility": "0"})
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


def measure(target: Sandbox, seconds: int, warmup: int, conns: int) -> tuple[float, float]:
    """(orders/s, orders per second of the server's CPU) of one closed-loop run: the
    second is what a machine busy with other work disturbs least."""
    url = target.server.root + target.url(f"/profiles/{target.profile}/orders")
    _load(url, BODIES, target.auth, warmup, conns)
    before = server_cpu(target.server.proc.pid)
    got = _load(url, BODIES, target.auth, seconds, conns)
    after = server_cpu(target.server.proc.pid)
    assert not got["non_2xx"], got
    return float(got["rps"]), float(got["requests"]) / max(after[0] - before[0], 1e-6)


def paired(
    name: str,
    a: tuple[str, Callable[[], tuple[float, float]]],
    b: tuple[str, Callable[[], tuple[float, float]]],
    rounds: int,
) -> None:
    """Rounds of a and b back to back, the one that goes first alternating: b/a per round,
    of orders/s and of orders per CPU second."""
    got: dict[str, list[tuple[float, float]]] = {a[0]: [], b[0]: []}
    for i in range(rounds):
        for label, run in (a, b) if i % 2 == 0 else (b, a):
            got[label].append(run())
    for k, unit in enumerate(("HTTP orders/s", "orders per server CPU second")):
        ratios = [y[k] / x[k] for x, y in zip(got[a[0]], got[b[0]], strict=True)]
        sides = (b[0], [y[k] for y in got[b[0]]]), (a[0], [x[k] for x in got[a[0]]])
        line = ratio_line(f"{unit}, {name}", ratios, *sides)
        print(line if k == 0 else line.replace(" req/s", " orders/CPU-s"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--connections", type=int, default=32)
    args = p.parse_args()
    print(f"machine: {machine()}; load average at the start: {os.getloadavg()[0]:.2f}")
    tool = "wrk -t2" if shutil.which("wrk") else "python asyncio"
    print(f"orders: {tool} -c{args.connections}, {args.seconds} s after {args.warmup} s warm-up")  # fmt: skip

    def rate(target: Server) -> Callable[[], tuple[float, float]]:
        world = default_world(target)
        return lambda: measure(world, args.seconds, args.warmup, args.connections)

    with tempfile.TemporaryDirectory(prefix="sandex-bench-faults-") as tmp:
        folder = Path(tmp)
        os.environ["SANDEX_STATE_DIR"] = str(folder / "state")
        for n, (name, label, rules) in enumerate(
            (
                ("the fault gate with no rule armed", "gate, no rule", []),
                ("100 rules of other operations armed", "100 rules, other operations", other_rules()),
                ("100 CreateOrder rules whose body does not match", "100 rules, CreateOrder", same_rules()),
            )
        ):  # fmt: skip
            # Each pair on two fresh servers: both sides take the same orders, so their
            # books and logs grow alike.
            with ExitStack() as stack:
                without = stack.enter_context(server(folder, f"without{n}", gate=False))
                side = stack.enter_context(server(folder, f"side{n}"))
                arm(side, rules)
                paired(
                    f"{name} over without the gate",
                    ("without the gate", rate(without)),
                    (label, rate(side)),
                    args.rounds,
                )
                for named in (without, side):
                    said, _ = _cli_verify(named.db)
                    print(f"  sandex verify ({named.db.name}): {said}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
