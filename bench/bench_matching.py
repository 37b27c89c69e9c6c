"""Orders per second: the matching core alone, the engine deciding without a store, and
the engine with persistence (group commit, FULL and NORMAL), each beside a baseline
measured in the same run; optionally HTTP order creation against a trivial endpoint.

The workload is seeded: 70% limit orders (prices within 60 bps of the reference, a
quarter of them crossing), 20% cancels of resting orders, 10% market orders, across
BTCUSD and ETHUSD, from several customers, against the house's synthetic ladder.

    python bench/bench_matching.py [--orders 200000] [--engine-orders 60000] [--runs 3]
                                   [--http] [--seconds 10] [--connections 32]

Baselines: matching is compared with the plainest price-time book (a SortedDict of
deques, integer ticks, no ladder, no self-match check); the engine with a store is
compared with a no-op command through the same writer and group commit.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from sortedcontainers import SortedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import fmt_rate, machine, measured_tree  # noqa: E402

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

from sandex.engine import Engine, Settings, open_engine  # noqa: E402
from sandex.engine.domain.registrations import REGISTRATIONS  # noqa: E402
from sandex.engine.domain.trading.book import BUY, SELL  # noqa: E402
from sandex.engine.domain.trading.market import MarketConfig, new_markets  # noqa: E402
from sandex.engine.domain.trading.matching import plan  # noqa: E402
from sandex.engine.kernel.commands import (  # noqa: E402
    Actor,
    CancelOrder,
    Command,
    CreateCustomer,
    CreateOrder,
    SandboxDeposit,
)
from sandex.engine.kernel.registry import Registration, build_registry  # noqa: E402
from sandex.engine.tools.verify import verify  # noqa: E402

MARKETS = ("BTCUSD", "ETHUSD")
CUSTOMERS = 8


# -- the seeded workload -------------------------------------------------------------------


@dataclass(slots=True)
class Op:
    kind: str  # limit | cancel | market
    market: int
    side: int
    ticks: int
    units: int
    who: int


def workload(n: int, refs: list[int], seed: int = 1) -> list[Op]:
    rng = random.Random(seed)
    ops = []
    for _ in range(n):
        r = rng.random()
        m = rng.randrange(2)
        side = rng.randrange(2)
        who = rng.randrange(CUSTOMERS)
        units = rng.randrange(100_000, 20_000_000)  # 0.001 to 0.2 of the base
        if r < 0.70:
            # most rest inside the house's spread or behind it; a quarter cross it
            bps = rng.uniform(-60, 20)
            if side == SELL:
                bps = -bps
            ticks = int(refs[m] * (1 + bps / 10000))
            ops.append(Op("limit", m, side, ticks, units, who))
        elif r < 0.90:
            ops.append(Op("cancel", m, side, 0, 0, rng.randrange(1 << 30)))
        else:
            ops.append(Op("market", m, side, 0, units, who))
    return ops


# -- matching alone ------------------------------------------------------------------------


class _Resting:
    __slots__ = ("id", "side", "ticks", "remaining", "live", "customer_id", "smp_id")

    def __init__(self, i: int, side: int, ticks: int, units: int, who: int) -> None:
        self.id = str(i)
        self.side = side
        self.ticks = ticks
        self.remaining = units
        self.live = False
        self.customer_id = str(who)
        self.smp_id = None


def run_matching(ops: list[Op]) -> tuple[float, int]:
    """The book and plan of sandex.engine.domain.trading.matching, with the house's ladder and self-match
    prevention, applying each plan as the appliers do."""
    cfg = MarketConfig.of(Settings(market_volatility=Decimal(0)))
    markets = [new_markets()[name] for name in MARKETS]
    ladders = [(mk.ladder_side(cfg, 0, 0, BUY), mk.ladder_side(cfg, 0, 0, SELL)) for mk in markets]
    resting: list[list[_Resting]] = [[], []]
    trades = 0
    start = time.perf_counter()
    for i, op in enumerate(ops):
        mk = markets[op.market]
        book = mk.book
        if op.kind == "cancel":
            pool = resting[op.market]
            while pool:
                victim = pool.pop(op.who % len(pool)) if len(pool) > 1 else pool.pop()
                if victim.live:
                    book.remove(victim)
                    break
            continue
        ladder = ladders[op.market][1 - op.side]
        limit = op.ticks if op.kind == "limit" else None
        p = plan(book, op.side, limit, op.units, None, ladder, str(op.who), None)
        for maker, _, units in p.steps:
            if maker is None:
                continue
            if units == 0:
                book.remove(maker)
            else:
                book.fill(maker, units)
                trades += 1
        trades += len(p.house)
        left = op.units - p.filled
        if op.kind == "limit" and left > 0:
            order = _Resting(i, op.side, op.ticks, left, op.who)
            book.add(order)
            resting[op.market].append(order)
    return time.perf_counter() - start, trades


def run_plain_book(ops: list[Op]) -> float:
    """The baseline: the plainest price-time book there is."""
    books = [(SortedDict(), SortedDict()) for _ in MARKETS]  # bids by -ticks, asks by ticks
    pools: list[list[list[int]]] = [[], []]
    start = time.perf_counter()
    for op in ops:
        bids, asks = books[op.market]
        if op.kind == "cancel":
            pool = pools[op.market]
            if pool:
                order = pool.pop(op.who % len(pool))
                order[1] = 0
            continue
        left = op.units
        opposite = asks if op.side == BUY else bids
        while left and opposite:
            key, queue = opposite.peekitem(0)
            price = key if op.side == BUY else -key
            if op.kind == "limit" and (price > op.ticks if op.side == BUY else price < op.ticks):
                break
            while queue and left:
                head = queue[0]
                take = min(head[1], left)
                head[1] -= take
                left -= take
                if head[1] == 0:
                    queue.popleft()
            if not queue:
                del opposite[key]
        if op.kind == "limit" and left:
            own = bids if op.side == BUY else asks
            key = -op.ticks if op.side == BUY else op.ticks
            order = [op.ticks, left]
            own.setdefault(key, deque()).append(order)
            pools[op.market].append(order)
    return time.perf_counter() - start


# -- the engine ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Noop(Command):
    """One tiny event per command: the writer pipeline's own cost."""

    n: int = 0


# The domain's registry and the no-op: every engine of this benchmark is built with it.
_REGISTRY = build_registry(
    [
        *REGISTRATIONS,
        Registration(
            {_Noop: lambda ctx, cmd: ctx.emit("BenchNoop", "bench", {"n": cmd.n})},
            {"BenchNoop": lambda state, event: None},
        ),
    ]
)


def _engine(path: Path, durability: str) -> tuple[Engine, list[Actor]]:
    settings = Settings(clock="manual", seed=1, durability=durability, market_volatility=Decimal(0))
    engine = open_engine(path, settings, registry=_REGISTRY).start()
    actors = []
    for _ in range(CUSTOMERS):
        made = engine.execute(CreateCustomer())
        actor = Actor(customer_id=made["customer_id"], client_id=made["client_id"])
        for asset, amount in (("USD", "1000000000"), ("BTC", "100000"), ("ETH", "1000000")):
            engine.execute(
                SandboxDeposit(actor=actor, profile_id="default", asset=asset, amount=amount)
            )
        actors.append(actor)
    return engine, actors


def _commands(ops: list[Op], actors: list[Actor]) -> list[Any]:
    """Commands of the workload; a cancel is resolved against open orders when sent."""
    out: list[Any] = []
    for op in ops:
        market = MARKETS[op.market]
        tick = Decimal("0.25") if market == "BTCUSD" else Decimal("0.05")
        side = "BUY" if op.side == BUY else "SELL"
        amount = format(Decimal(op.units).scaleb(-8), "f")
        actor = actors[op.who % CUSTOMERS]
        if op.kind == "limit":
            price = format(tick * op.ticks, "f")
            out.append(
                CreateOrder(
                    actor=actor,
                    profile_id="default",
                    side=side,
                    market=market,
                    type="LIMIT",
                    price=price,
                    base_amount=amount,
                )
            )
        elif op.kind == "market":
            if side == "BUY":
                body = {"quote_amount": "250.00"}
            else:
                body = {"base_amount": format(Decimal(op.units // 10).scaleb(-8), "f")}
            out.append(
                CreateOrder(
                    actor=actor,
                    profile_id="default",
                    side=side,
                    market=market,
                    type="MARKET",
                    **body,
                )
            )
        else:
            out.append(op.who)
    return out


def _drive(engine: Engine, commands: list[Any], actors: list[Actor], window: int = 4096) -> float:
    """Submit everything through the writer's queue, as HTTP handlers do, at most
    `window` in flight; answer the seconds until the last answer."""
    open_orders: deque[tuple[Actor, str]] = deque()
    by_customer = {a.customer_id: a for a in actors}

    def done(future: Any) -> None:
        try:
            order = future.result()
        except Exception:  # noqa: BLE001 - a refused order is part of the workload
            return
        if isinstance(order, dict) and order.get("status") == "OPEN":
            open_orders.append((order["id"], order["profile_id"]))

    profile_actor: dict[str, Actor] = {}
    for actor in actors:
        pid = engine.state.customers[actor.customer_id]["default_profile_id"]
        profile_actor[pid] = actor
    del by_customer
    inflight = threading.Semaphore(window)
    last: Any = None
    start = time.perf_counter()
    for command in commands:
        if isinstance(command, int):
            if not open_orders:
                continue
            order_id, pid = open_orders.popleft()
            command = CancelOrder(actor=profile_actor[pid], profile_id=pid, order_id=order_id)
        inflight.acquire()
        last = engine.submit(command)
        last.add_done_callback(done)
        last.add_done_callback(lambda _: inflight.release())
    if last is not None:
        last.exception()  # waits; the writer answers in order, so this is the end
    return time.perf_counter() - start


def run_engine(ops: list[Op], durability: str, tmp: Path) -> tuple[float, float, int]:
    engine, actors = _engine(tmp / f"orders-{durability}.db", durability)
    try:
        commands = _commands(ops, actors)
        before = engine.state.position
        seconds = _drive(engine, commands, actors)
        events = engine.state.position - before
    finally:
        engine.stop()
    noop, _ = _engine(tmp / f"noop-{durability}.db", durability)
    try:
        noops = [_Noop(n=i) for i in range(len(ops))]
        noop_seconds = _drive(noop, noops, [])
    finally:
        noop.stop()
    return len(ops) / seconds, len(ops) / noop_seconds, events


def run_engine_in_memory(ops: list[Op], tmp: Path) -> float:
    """Deciding and applying only: the writer's work without SQLite (no thread, no commit)."""
    engine, actors = _engine(tmp / "memory.db", "NORMAL")
    engine.stop()
    engine._thread = None
    commands = _commands(ops, actors)
    profile_actor = {engine.state.customers[a.customer_id]["default_profile_id"]: a for a in actors}
    open_orders: deque[tuple[str, str]] = deque()
    handle = engine._handle
    start = time.perf_counter()
    for command in commands:
        if isinstance(command, int):
            if not open_orders:
                continue
            order_id, pid = open_orders.popleft()
            command = CancelOrder(actor=profile_actor[pid], profile_id=pid, order_id=order_id)
        try:
            order = handle(command)
        except Exception:  # noqa: BLE001
            continue
        if isinstance(order, dict) and order.get("status") == "OPEN":
            open_orders.append((order["id"], order["profile_id"]))
        engine._pending.clear()
        engine.state.dirty.clear()
        engine.state.appended = []  # what a commit hands to SQLite
    return len(ops) / (time.perf_counter() - start)


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--orders", type=int, default=200_000, help="orders for matching alone")
    p.add_argument("--engine-orders", type=int, default=60_000, help="orders through the engine")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--http", action="store_true", help="also measure HTTP order creation")
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--connections", type=int, default=32)
    args = p.parse_args()
    print(f"machine: {machine()}")
    refs = [170000, 46000]  # BTCUSD 42500 and ETHUSD 2300, in ticks
    ops = workload(args.orders, refs)
    mix = {k: sum(1 for o in ops if o.kind == k) / len(ops) for k in ("limit", "cancel", "market")}
    print(
        f"workload: {len(ops):,} orders, seeded, "
        + ", ".join(f"{v:.0%} {k}" for k, v in mix.items())
        + f", across {' and '.join(MARKETS)}"
    )
    gc.collect()
    gc.freeze()
    old = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)  # as a long-running writer would (see the design)
    try:
        ours, plain, trades = [], [], 0
        for _ in range(args.runs):
            seconds, trades = run_matching(ops)
            ours.append(len(ops) / seconds)
            plain.append(len(ops) / run_plain_book(ops))
    finally:
        gc.set_threshold(*old)
    best_ours, best_plain = sorted(ours)[len(ours) // 2], sorted(plain)[len(plain) // 2]
    print(f"\nmatching alone (median of {args.runs}):")
    print(f"  plain price-time book (baseline)     {fmt_rate(best_plain):>14}")
    print(f"  engine.book + engine.matching        {fmt_rate(best_ours):>14}   ({trades:,} trades)")
    print(f"  ratio to the baseline                {best_ours / best_plain:>14.2f}")

    eng_ops = workload(args.engine_orders, refs, seed=2)

    with tempfile.TemporaryDirectory(prefix="sandex-bench-") as tmp_name:
        tmp = Path(tmp_name)
        memory = run_engine_in_memory(eng_ops, tmp)
        print(f"\nengine, {len(eng_ops):,} orders:")
        print(f"  decide + apply, no store             {fmt_rate(memory):>14}")
        for durability in ("FULL", "NORMAL"):
            rate, noop_rate, events = run_engine(eng_ops, durability, tmp)
            print(
                f"  with persistence, {durability:<6}             {fmt_rate(rate):>14}"
                f"   ({events / len(eng_ops):.1f} events per order;"
                f" no-op command baseline {fmt_rate(noop_rate)}, ratio {rate / noop_rate:.2f})"
            )
        problems = [p for d in ("FULL", "NORMAL") for p in verify(str(tmp / f"orders-{d}.db"))]
        print(f"  sandex verify of both databases: {'OK' if not problems else problems[0]}")
    if args.http:
        from bench.bench_http_orders import run_http

        run_http(args.seconds, args.connections)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
