"""Bytes written to the write-ahead log per order, and the writer's CPU per order, with
32 orders in flight.

    python bench/bench_wal.py [--orders 6000] [--in-flight 32] [--customers 1] [--runs 5]

The engine runs as `sandex serve` runs it (wall clock, FULL durability, group commit,
the background checkpointer); `--in-flight` threads each hand over one order and wait
for its answer before the next, so a group commit holds about that many orders. The
orders cycle through the ten bodies of bench_http_orders.py (seven limits that rest, two
small IOC limits and a market buy that trade against the house's ladder).

Each run has two phases on the same database, after a warm-up of `--orders` orders:

- **CPU**: the CPU time of the engine's own threads (writer, committer, checkpointer;
  /proc/self/task) over the phase, per order: what the orders cost the writer side,
  without the senders that stand in for HTTP handlers; and the bytes the process wrote
  (/proc/self/io `wchar`: the WAL's frames and the checkpoints' copies into the
  database file).
- **WAL**: the background checkpointer stopped and the writer's own automatic
  checkpoint off, the log emptied (TRUNCATE), `--orders` orders, then the log's size
  over the orders. A commit writes each page it changed once as a frame (page + 24
  bytes) whatever the checkpoints do, so stopping them changes nothing of what is
  written, and the log then holds every frame of the phase.

A random id puts every insert of its index on a page of its own, which the next commit
rewrites whole: the bytes per order are mostly index pages. `sandex verify` checks the
database at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, measured_tree  # noqa: E402

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

from bench.bench_http_orders import BODIES  # noqa: E402
from sandex.engine import Engine, Settings, open_engine  # noqa: E402
from sandex.engine.kernel.commands import (  # noqa: E402
    Actor,
    Command,
    CreateCustomer,
    CreateOrder,
    SandboxDeposit,
)
from sandex.engine.kernel.registry import Registry  # noqa: E402
from sandex.engine.tools.verify import verify  # noqa: E402

_TICKS = os.sysconf("SC_CLK_TCK")


def _thread_cpu(native_id: int) -> float:
    """Seconds of CPU (user + system) of one thread of this process."""
    with open(f"/proc/self/task/{native_id}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _engine_cpu() -> float:
    """CPU of the engine's threads so far (writer, committer, checkpointer, snapshots)."""
    total = 0.0
    for t in threading.enumerate():
        if t.name.startswith("sandex-") and t.native_id is not None:
            with contextlib.suppress(FileNotFoundError):  # ended since the listing
                total += _thread_cpu(t.native_id)
    return total


def _written() -> int:
    """Bytes this process has handed to write system calls so far (/proc/self/io)."""
    with open("/proc/self/io") as f:
        return int(next(line for line in f if line.startswith("wchar:")).split()[1])


def _setup(
    path: Path, customers: int, registry: Registry | None = None
) -> tuple[Engine, list[Actor]]:
    engine = open_engine(path, Settings(clock="wall", durability="FULL"), registry=registry).start()
    actors = []
    for _ in range(customers):
        made = engine.execute(CreateCustomer())
        actor = Actor(customer_id=made["customer_id"], client_id=made["client_id"])
        for asset, amount in (("USD", "1000000000"), ("BTC", "100000"), ("ETH", "1000000")):
            engine.execute(
                SandboxDeposit(actor=actor, profile_id="default", asset=asset, amount=amount)
            )
        actors.append(actor)
    return engine, actors


def closed_loop(engine: Engine, command: Callable[[int], Command], n: int, in_flight: int) -> float:
    """`n` commands (the i-th `command(i)`) from `in_flight` closed-loop senders, each
    handing over one and waiting for its answer before the next; the seconds they took."""
    failed: list[BaseException] = []

    def sender(k: int) -> None:
        try:
            for i in range(k, n, in_flight):
                engine.submit(command(i)).result(60)
        except BaseException as exc:  # noqa: BLE001 - reported below, the run fails
            failed.append(exc)

    threads = [threading.Thread(target=sender, args=(k,)) for k in range(in_flight)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return time.perf_counter() - started


def _send(engine: Engine, actors: list[Actor], orders: int, in_flight: int) -> float:
    """`orders` orders from `in_flight` closed-loop senders, sender k as customer k; the
    seconds they took."""

    def order(i: int) -> CreateOrder:
        actor = actors[i % in_flight % len(actors)]
        return CreateOrder(actor=actor, profile_id="default", **BODIES[i % len(BODIES)])

    return closed_loop(engine, order, orders, in_flight)


def _quiet_log(engine: Engine) -> None:
    """Stop every checkpoint and empty the log, the engine idle: from now on the log
    holds every frame written."""
    store: Any = engine.store
    if store._checkpointer is not None:
        store._checkpointer.stop()
    store.conn.execute("PRAGMA wal_autocheckpoint=0")
    # the writer's own connection: another one's checkpoint reads as a change of the log
    busy = store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    if busy:
        raise RuntimeError("the log could not be emptied: a reader held it")


def _frames(wal: Path) -> tuple[int, int]:
    """Frames and commits in the log file (a commit's last frame names the database's
    size in pages; the others hold 0 there)."""
    data = wal.read_bytes()
    page = int.from_bytes(data[8:12], "big")
    frames = commits = 0
    for at in range(32, len(data) - 24 - page + 1, 24 + page):
        frames += 1
        commits += int.from_bytes(data[at + 4 : at + 8], "big") != 0
    return frames, commits


def one_run(folder: Path, orders: int, in_flight: int, customers: int) -> dict[str, float]:
    path = folder / "wal.db"
    engine, actors = _setup(path, customers)
    try:
        _send(engine, actors, orders, in_flight)  # warm-up: books, caches, indexes
        cpu, files = _engine_cpu(), _written()
        seconds = _send(engine, actors, orders, in_flight)
        cpu, files = _engine_cpu() - cpu, _written() - files
        _quiet_log(engine)
        wal = Path(f"{path}-wal")
        before = wal.stat().st_size if wal.exists() else 0
        _send(engine, actors, orders, in_flight)
        written = wal.stat().st_size - before
        frames, commits = _frames(wal)
    finally:
        engine.stop()
    return {
        "bytes": written / orders,
        "cpu_us": cpu / orders * 1e6,
        "files": files / orders,
        "rate": orders / seconds,
        "pages": frames / orders,
        "group": orders / max(commits, 1),
    }


def _spread(values: list[float], fmt: str) -> str:
    return (
        f"{statistics.median(values):{fmt}} [{min(values):{fmt}}–{max(values):{fmt}}]"
        f" (median [min–max] of {len(values)})"
    )


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--orders", type=int, default=6000, help="orders in each phase")
    p.add_argument("--in-flight", type=int, default=32)
    p.add_argument("--customers", type=int, default=1)
    p.add_argument("--runs", type=int, default=5, help="runs, each on a new database")
    args = p.parse_args()
    print(machine())
    print(
        f"{args.orders:,} orders a phase, {args.in_flight} in flight, {args.customers}"
        f" customer(s), wall clock, FULL; tree {ROOT}"
    )
    runs = []
    problems: list[str] = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(one_run(Path(tmp), args.orders, args.in_flight, args.customers))
            problems += verify(str(Path(tmp) / "wal.db"))
    kib = [r["bytes"] / 1024 for r in runs]
    print(f"WAL bytes per order: {_spread(kib, '.1f')} KiB")
    files = [r["files"] / 1024 for r in runs]
    print(
        f"bytes written to files per order, checkpoints on (WAL + database): {_spread(files, '.1f')} KiB"
    )
    print(f"engine threads' CPU per order: {_spread([r['cpu_us'] for r in runs], '.0f')} us")
    print(f"pages written per order: {_spread([r['pages'] for r in runs], '.1f')}")
    print(f"orders per commit: {_spread([r['group'] for r in runs], '.1f')}")
    print(f"orders/s in the CPU phase: {_spread([r['rate'] for r in runs], ',.0f')}")
    print(f"sandex verify of every database: {'OK' if not problems else problems[0]}")
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
