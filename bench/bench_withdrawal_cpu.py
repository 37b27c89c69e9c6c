"""The engine threads' CPU per crypto withdrawal, its confirmation included, with 32 in
flight; and the same withdrawals decided inline on the memory store (deciders, appliers,
the feed's items and the read-model rows, no SQLite).

    python bench/bench_withdrawal_cpu.py [--withdrawals 6000] [--in-flight 32] [--runs 5]

The engine runs as `sandex serve` runs it (wall clock, FULL, group commit, the background
checkpointer); each of `--in-flight` threads hands over one withdrawal (USDC on SOLANA,
bench_withdrawals.py's body) and waits for its answer before the next. A phase is
`--withdrawals` withdrawals after as many of warm-up, then the 1.5 s their confirmations
take (the scheduler's timer confirms each one second later): the CPU of the engine's own
threads over it (/proc/self/task: writer, committer, checkpointer), per withdrawal, so
the HTTP adapter and its load generator are not in it. The inline phase runs the same
commands on one thread (`Engine.run_inline`), then fires their confirmations; its thread
CPU per withdrawal. `sandex verify` checks every database.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, measured_tree  # noqa: E402

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

from bench.bench_wal import _engine_cpu, closed_loop  # noqa: E402
from bench.bench_withdrawals import WITHDRAWAL  # noqa: E402
from sandex.engine import Engine, Settings, open_engine  # noqa: E402
from sandex.engine.kernel.commands import (  # noqa: E402
    Actor,
    CreateCryptoWithdrawal,
    CreateCustomer,
    SandboxDeposit,
    Tick,
)
from sandex.engine.runtime.composition import TABLES, build_engine  # noqa: E402
from sandex.engine.store import MemoryEventStore  # noqa: E402
from sandex.engine.tools.verify import verify  # noqa: E402

CONFIRMED_AFTER = 1.5  # seconds: SOLANA confirms one second after the request


def _funded(run: Callable[[Any], Any]) -> Actor:
    """A new customer with USDC to withdraw, made through `run` (execute or run_inline)."""
    made = run(CreateCustomer())
    actor = Actor(customer_id=made["customer_id"], client_id=made["client_id"])
    run(SandboxDeposit(actor=actor, profile_id="default", asset="USDC", amount="1000000000"))
    return actor


def _send(engine: Engine, actor: Actor, n: int, in_flight: int) -> None:
    withdrawal = CreateCryptoWithdrawal(actor=actor, **WITHDRAWAL)
    closed_loop(engine, lambda _: withdrawal, n, in_flight)


def through_writer(folder: Path, n: int, in_flight: int) -> float:
    """µs of the engine threads' CPU per withdrawal and its confirmation."""
    path = folder / "w.db"
    engine = open_engine(path, Settings(clock="wall", durability="FULL")).start()
    try:
        actor = _funded(engine.execute)
        _send(engine, actor, n, in_flight)  # warm-up
        time.sleep(CONFIRMED_AFTER)
        cpu = _engine_cpu()
        _send(engine, actor, n, in_flight)
        time.sleep(CONFIRMED_AFTER)
        cpu = _engine_cpu() - cpu
    finally:
        engine.stop()
    problems = verify(str(path))
    if problems:
        raise SystemExit(f"sandex verify: {problems[0]}")
    return cpu / n * 1e6


def inline(n: int) -> float:
    """µs of one thread's CPU per withdrawal and its confirmation, on the memory store."""
    engine = build_engine(MemoryEventStore(tables=TABLES), Settings(clock="wall", seed=1))
    actor = _funded(engine.run_inline)
    commands = [CreateCryptoWithdrawal(actor=actor, **WITHDRAWAL) for _ in range(n)]
    run = engine.run_inline
    for command in commands[: n // 4]:  # warm-up
        run(command)
    time.sleep(CONFIRMED_AFTER)
    run(Tick())
    started = time.thread_time()
    for command in commands:
        run(command)
    spent = time.thread_time() - started
    time.sleep(CONFIRMED_AFTER)
    started = time.thread_time()
    run(Tick())  # every confirmation is due
    spent += time.thread_time() - started
    return spent / n * 1e6


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} [{min(values):.1f}–{max(values):.1f}]"


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--withdrawals", type=int, default=6000, help="withdrawals in a phase")
    p.add_argument("--in-flight", type=int, default=32)
    p.add_argument("--runs", type=int, default=5, help="runs, each on a new database")
    args = p.parse_args()
    print(machine())
    print(f"{args.withdrawals:,} withdrawals a phase, {args.in_flight} in flight; tree {ROOT}")
    writer, alone = [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            writer.append(through_writer(Path(tmp), args.withdrawals, args.in_flight))
        alone.append(inline(args.withdrawals))
    print(f"engine threads' CPU per withdrawal (FULL, confirmation included): {_spread(writer)} us")
    print(f"decided inline on the memory store, CPU per withdrawal: {_spread(alone)} us")
    print("sandex verify of every database: OK")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
