"""Deciding orders: Python calls and CPU per order on the memory store (the unit tier:
deciders, appliers, read-model rows, no SQLite), and the engine with persistence beside
the same commands decided alone on the memory store, measured in the same run.

    python bench/bench_decide.py [--orders 20000] [--count-orders 3000] [--rounds 5]

The commands are bench_matching's seeded workload (70% limit, 20% cancel, 10% market,
BTCUSD and ETHUSD, 8 customers), resolved once: a first pass on a memory store turns
each cancel into a CancelOrder of an order open at that point, so that every measured
run decides exactly the same commands and ends at the same log position (checked).

- calls per order: Python function calls (sys.setprofile "call" events), and calls of
  C functions beside them, over `Engine.run_inline` of every command on a memory store;
  "in the decision" counts those under the writer's `_handle` (deciders, appliers and
  the observers they chain), the rest is the group's read-model rows and the store.
- CPU per order: process CPU of the same inline loop, without the profiler, median of
  the rounds.
- with persistence / decided alone: the commands submitted through the writer thread
  (group commit, at most 4,096 in flight) of an engine on SQLite (FULL), beside the same
  commands decided alone (the writer's `_handle`: deciders, appliers, observers; no
  read-model rows, no store write, as bench_matching's "decide + apply") on an engine on
  the memory store, alternately in each round; the ratio is paired by round. Beside it
  the same in CPU: deciding alone (its thread's CPU) over the engine threads' CPU with
  persistence (/proc/self/task, as bench_wal), which a machine busy with other work
  disturbs far less than the wall clock. (The writer thread on a memory store is no
  baseline: its commits hold the GIL, and the hand-over between the writer and the
  committer thread leaves both idle.)
"""

from __future__ import annotations

import argparse
import decimal
import gc
import statistics
import sys
import tempfile
import threading
import time
from collections import deque
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import fmt_rate, machine, measured_tree  # noqa: E402

ROOT = measured_tree()

from bench.bench_matching import CUSTOMERS, _commands, workload  # noqa: E402
from bench.bench_wal import _engine_cpu  # noqa: E402
from sandex.engine import Engine, Settings, open_engine  # noqa: E402
from sandex.engine.kernel.commands import Actor, CancelOrder, CreateCustomer, SandboxDeposit  # noqa: E402
from sandex.engine.kernel.errors import DomainError  # noqa: E402
from sandex.engine.kernel.money import CONTEXT  # noqa: E402
from sandex.engine.runtime.composition import TABLES, build_engine  # noqa: E402
from sandex.engine.store import MemoryEventStore  # noqa: E402
from sandex.engine.tools.verify import verify  # noqa: E402

REFS = [170000, 46000]  # BTCUSD 42500 and ETHUSD 2300, in ticks


def _settings(durability: str = "FULL") -> Settings:
    return Settings(clock="manual", seed=1, durability=durability, market_volatility=Decimal(0))


def _funded(engine: Engine, inline: bool) -> list[Actor]:
    run = engine.run_inline if inline else engine.execute
    actors = []
    for _ in range(CUSTOMERS):
        made = run(CreateCustomer())
        actor = Actor(customer_id=made["customer_id"], client_id=made["client_id"])
        for asset, amount in (("USD", "1000000000"), ("BTC", "100000"), ("ETH", "1000000")):
            run(SandboxDeposit(actor=actor, profile_id="default", asset=asset, amount=amount))
        actors.append(actor)
    return actors


def _memory_engine() -> Engine:
    return build_engine(MemoryEventStore(tables=TABLES), _settings())


def resolved_commands(n: int) -> tuple[list[Any], int]:
    """The workload's commands with each cancel bound to an order open at its turn (or
    dropped when none is), and the log position after them all."""
    engine = _memory_engine()
    actors = _funded(engine, inline=True)
    by_profile = {engine.state.customers[a.customer_id]["default_profile_id"]: a for a in actors}
    open_orders: deque[tuple[str, str]] = deque()
    out: list[Any] = []
    for command in _commands(workload(n, REFS, seed=2), actors):
        if isinstance(command, int):
            if not open_orders:
                continue
            order_id, pid = open_orders.popleft()
            command = CancelOrder(actor=by_profile[pid], profile_id=pid, order_id=order_id)
        out.append(command)
        try:
            reply = engine.run_inline(command)
        except Exception:  # noqa: BLE001 - a refused order is part of the workload
            continue
        if isinstance(reply, dict) and reply.get("status") == "OPEN":
            open_orders.append((reply["id"], reply["profile_id"]))
    return out, engine.state.position


def _inline(engine: Engine, commands: list[Any]) -> None:
    run = engine.run_inline
    for command in commands:
        try:  # noqa: SIM105 - a `with suppress` per command would be measured too
            run(command)
        except Exception:  # noqa: BLE001 - a refused order is part of the workload
            pass


def count_calls(commands: list[Any]) -> tuple[float, float, float]:
    """Python calls per order in all, of them those inside the decision, and C calls."""
    engine = _memory_engine()
    _funded(engine, inline=True)
    counts = [0, 0, 0]  # outside the decision, inside it, C functions
    inside = [0]
    handle = engine._handle

    def handled(command: Any) -> Any:
        inside[0] = 1
        try:
            return handle(command)
        finally:
            inside[0] = 0

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            counts[inside[0]] += 1
        elif event == "c_call":
            counts[2] += 1

    engine._handle = handled  # type: ignore[method-assign]
    sys.setprofile(hook)
    try:
        _inline(engine, commands)
    finally:
        sys.setprofile(None)
    n = len(commands)
    return (counts[0] + counts[1]) / n, counts[1] / n, counts[2] / n


def cpu_per_order(commands: list[Any]) -> float:
    """CPU seconds per command of the inline loop on a memory store."""
    engine = _memory_engine()
    _funded(engine, inline=True)
    gc.collect()
    started = time.thread_time()
    _inline(engine, commands)
    return (time.thread_time() - started) / len(commands)


def decided_only(commands: list[Any], end: int) -> tuple[float, float]:
    """CPU and wall seconds per command of deciding alone (deciders, appliers and their
    observers, through the writer's `_handle`) on an engine on a memory store: no
    read-model rows, no store write, no group (bench_matching's "decide + apply")."""
    engine = _memory_engine()
    _funded(engine, inline=True)
    handle = engine._handle
    state = engine.state
    pending = engine._pending
    gc.collect()
    cpu, wall = time.thread_time(), time.perf_counter()
    with decimal.localcontext(CONTEXT):
        for command in commands:
            try:  # noqa: SIM105 - a `with suppress` per command would be measured too
                handle(command)
            except DomainError:
                pass  # a refused order is part of the workload
            pending.clear()
            state.dirty.clear()
            state.appended = []  # what a commit hands to the store
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    if state.position != end:
        raise SystemExit(f"deciding alone ended at {state.position}, not {end}")
    return cpu / len(commands), wall / len(commands)


def _drive(engine: Engine, commands: list[Any], window: int = 4096) -> float:
    """Every command through the writer's queue, at most `window` in flight; the seconds
    until the last answer."""
    inflight = threading.Semaphore(window)
    last: Any = None
    release = inflight.release
    started = time.perf_counter()
    for command in commands:
        inflight.acquire()
        last = engine.submit(command)
        last.add_done_callback(lambda _: release())
    if last is not None:
        last.exception()  # the writer answers in order: this is the end
    return time.perf_counter() - started


def through_writer(engine: Engine, commands: list[Any], end: int) -> tuple[float, float]:
    """Commands per second through `engine`'s writer thread, and the CPU seconds of the
    engine's threads (writer, committer, checkpointer) per command."""
    engine.start()
    try:
        _funded(engine, inline=False)
        gc.collect()
        cpu = _engine_cpu()
        seconds = _drive(engine, commands)
        cpu = _engine_cpu() - cpu
        if engine.state.position != end:
            raise SystemExit(f"the run ended at {engine.state.position}, not {end}")
    finally:
        engine.stop()
    return len(commands) / seconds, cpu / len(commands)


def _spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} (min {format(min(values), fmt)}, max {format(max(values), fmt)})"


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--orders", type=int, default=20_000, help="orders through the writer")
    p.add_argument("--count-orders", type=int, default=3_000, help="orders profiled")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    print(f"machine: {machine()}")
    print(f"tree: {ROOT}")
    commands, end = resolved_commands(args.orders)
    counted = commands[: args.count_orders]
    calls, decided, c_calls = count_calls(counted)
    print(f"\nunit tier (memory store, run inline), first {len(counted):,} commands:")
    print(f"  Python calls per order: {calls:.1f} ({decided:.1f} in the decision)")
    print(f"  C calls per order: {c_calls:.1f}")
    cpu = [cpu_per_order(commands) * 1e6 for _ in range(args.rounds)]
    print(f"  CPU per order: {_spread(cpu, '.1f')} µs, median of {args.rounds}")
    memory, persisted, ratios, cpu_m, cpu_p, cpu_ratios = [], [], [], [], [], []
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="sandex-bench-") as tmp:
        for i in range(args.rounds):
            cpu_mem, wall_mem = decided_only(commands, end)
            db = Path(tmp) / f"orders-{i}.db"
            rate_p, cpu_per = through_writer(open_engine(db, _settings()), commands, end)
            problems += verify(str(db))
            memory.append(1 / wall_mem)
            persisted.append(rate_p)
            ratios.append(rate_p * wall_mem)
            cpu_m.append(cpu_mem * 1e6)
            cpu_p.append(cpu_per * 1e6)
            cpu_ratios.append(cpu_mem / cpu_per)
    print(f"\n{len(commands):,} commands, {args.rounds} rounds, the two alternated:")
    print(
        f"  decided alone on the memory store      {fmt_rate(statistics.median(memory)):>12}"
        f" (min {fmt_rate(min(memory))}, max {fmt_rate(max(memory))})"
    )
    print(
        f"  with persistence (SQLite FULL, writer thread) {fmt_rate(statistics.median(persisted)):>12}"
        f" (min {fmt_rate(min(persisted))}, max {fmt_rate(max(persisted))})"
    )
    print(f"  ratio persistence / decided alone: {_spread(ratios, '.2f')}")
    print(f"  CPU per order, decided alone: {_spread(cpu_m, '.1f')} µs")
    print(f"  CPU per order, with persistence (engine threads): {_spread(cpu_p, '.1f')} µs")
    print(f"  CPU ratio decided alone / persistence: {_spread(cpu_ratios, '.2f')}")
    print(f"  sandex verify: {'OK' if not problems else problems[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
