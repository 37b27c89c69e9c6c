"""Event-store figures: appends through the writer (group commit) against raw
`executemany` into the same table, replay speed at start-up, and start-up time from a
state snapshot.

    python bench/bench_store.py [--events 200000] [--replay-events 1000000] [--runs 5]
                                [--tail 50000] [--together 64]

Through the writer, each of 8 senders hands its commands over `--together` at a time
with `Engine.submit_many`, the call the HTTP adapter makes with the requests of one
event-loop turn (api_adapter/writer_bridge.py); the same commands handed over one by one
(`Engine.submit`) are measured too.

Start-up is measured in fresh processes (as a restarted server starts), twice on the
same log of `--replay-events` events: a full replay (snapshots off, events/s against a
bare scan that decodes with orjson), and from the newest state snapshot, which the writer had built in the background `--tail` events
before the end (the average tail with snapshots every 100,000 events is 50,000).
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import Timer, fmt_rate, machine, measured_tree, repeat  # noqa: E402

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

from sandex.engine import Settings, open_engine  # noqa: E402
from sandex.engine.domain.registrations import REGISTRATIONS, domain_registry  # noqa: E402
from sandex.engine.kernel.commands import Actor, Command, CreateCustomer, SandboxDeposit  # noqa: E402
from sandex.engine.kernel.events import Event  # noqa: E402
from sandex.engine.kernel.registry import Registration, build_registry  # noqa: E402
from sandex.engine.runtime.composition import TABLES  # noqa: E402
from sandex.engine.runtime.startup_cache import FORMAT, Snapshotter  # noqa: E402
from sandex.engine.store import EventStore, SqliteEventStore  # noqa: E402
from sandex.engine.tools.verify import rebuild, verify  # noqa: E402


@dataclass(frozen=True, slots=True)
class _Note(Command):
    """A command that appends one small event: isolates the writer pipeline's cost."""

    n: int = 0


def _noted(state: Any, event: Event) -> None:
    state.ext["notes"] = event.data["n"]


# The domain's registry and the note: the writer benchmarks' engines are built with it.
_REGISTRY = build_registry(
    [
        *REGISTRATIONS,
        Registration(
            {_Note: lambda ctx, cmd: ctx.emit("BenchNoted", "bench", {"n": cmd.n})},
            {"BenchNoted": _noted},
        ),
    ]
)


def raw_executemany(path: Path, n: int, batch: int = 500) -> float:
    """The baseline: pre-encoded rows, executemany, one transaction per `batch`."""
    store = SqliteEventStore(path, durability="FULL")
    store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=FULL")
    data = orjson.dumps({"n": 0}).decode()
    meta = orjson.dumps({"command": "Bench", "client_id": "bench"}).decode()
    rows = [
        (i, "bench", i, "BenchNoted", 1, data, meta, "2024-01-01T00:00:00.000000Z")
        for i in range(1, n + 1)
    ]
    with Timer() as t:
        for start in range(0, n, batch):
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT INTO events (position, stream, version, type, schema, data, meta, occurred_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows[start : start + batch],
            )
            conn.execute("COMMIT")
    conn.close()
    return n / t.seconds


def through_writer(
    path: Path, commands: list[Command], senders: int = 8, together: int = 1
) -> float:
    """Events per second through submit → decide → group commit → answer. Each sender
    hands its commands over `together` at a time: one by one (`Engine.submit`), or in
    slices through `Engine.submit_many`, as the HTTP adapter hands over the requests of
    one event-loop turn."""
    settings = Settings(clock="manual", durability="FULL")
    engine = open_engine(path, settings, registry=_REGISTRY).start()
    boot = engine.execute(CreateCustomer(client_id="b", client_secret="b", bootstrap=True))
    actor = Actor(boot["customer_id"], "b")
    commands = [
        c
        if not isinstance(c, SandboxDeposit)
        else SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="0.001")
        for c in commands
    ]
    before = engine.state.position
    chunks = [commands[i::senders] for i in range(senders)]

    def send(chunk: list[Command]) -> None:
        futures = [engine.submit(c) for c in chunk]
        for f in futures:
            f.result(60)

    def send_together(chunk: list[Command]) -> None:
        batches = [
            engine.submit_many(chunk[i : i + together]) for i in range(0, len(chunk), together)
        ]
        for batch in batches:
            batch.result(60)
            if batch.errors:
                raise next(iter(batch.errors.values()))

    target = send if together == 1 else send_together
    threads = [threading.Thread(target=target, args=(c,)) for c in chunks]
    with Timer() as t:
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    events = engine.state.position - before
    engine.stop()
    return events / t.seconds


def build_log(path: Path, n: int) -> None:
    """A log of `n` realistic events (sandbox deposits), written in bulk."""
    engine = open_engine(path, Settings(clock="manual", snapshot_every_events=0))
    engine.start()
    engine.execute(CreateCustomer(client_id="b", client_secret="b", bootstrap=True))
    engine.stop()
    extend_log(path, n)


def extend_log(path: Path, n: int) -> None:
    """Deposits appended in bulk until the log holds `n` events; read models rebuilt."""
    store = SqliteEventStore(path, durability="NORMAL", tables=TABLES)
    customer, profile_id = store.conn.execute(
        "SELECT customer_id, id FROM profiles ORDER BY seq LIMIT 1"
    ).fetchone()
    boot = {"customer_id": customer, "profile_id": profile_id}
    pos = store.last_position()
    profile = boot["profile_id"]
    batch: list[Event] = []
    for _ in range(n - pos):
        pos += 1
        tid = f"00000000-0000-4000-8000-{pos:012d}"
        record = {
            "customer_id": boot["customer_id"],
            "profile_id": profile,
            "amount": "0.001",
            "total": "0.001",
            "fee": "0",
            "asset": "BTC",
            "balance_asset": "BTC",
            "direction": "CREDIT",
            "type": "WIRE_DEPOSIT",
            "status": "COMPLETED",
            "id": tid,
            "created_at": "2024-01-01T00:00:00.000000Z",
            "updated_at": "2024-01-01T00:00:00.000000Z",
        }
        batch.append(
            Event(
                "TransferCreated",
                f"transfer-{tid}",
                {
                    "transfer": record,
                    "postings": [["world", f"{profile}:available", "BTC", "0.001"]],
                },
                position=pos,
                version=1,
                occurred_at="2024-01-01T00:00:00.000000Z",
                meta={"command": "SandboxDeposit", "client_id": "b"},
            )
        )
        if len(batch) == 10_000:
            store.commit(batch, {}, 0)
            batch = []
    store.commit(batch, {}, pos)
    store.close()
    rebuild(str(path))


def bare_scan(path: Path) -> float:
    conn = sqlite3.connect(path)
    with Timer() as t:
        count = 0
        for data, meta in conn.execute("SELECT data, meta FROM events ORDER BY position"):
            orjson.loads(data)
            orjson.loads(meta)
            count += 1
    conn.close()
    return count / t.seconds


_STARTUP = """
import sys, time
started = time.perf_counter()
sys.path.insert(0, {root!r})
from sandex.engine import Settings, open_engine
imported = time.perf_counter()
engine = open_engine({path!r}, Settings(clock="manual", snapshot_every_events={every}))
opened = time.perf_counter()
print(opened - imported, engine.state.position - engine.loaded_from, engine.loaded_from,
      imported - started)
"""


def startup(path: Path, snapshots: bool = False) -> tuple[float, float, int]:
    """Seconds to open an engine on the log (replay included) in a fresh process, as a
    restarted server does (a process that already holds millions of objects would
    measure its own heap too), events/s replayed, and the position of the snapshot it
    started from (0: none)."""
    every = 100_000 if snapshots else 0
    code = _STARTUP.format(root=str(ROOT), path=str(path), every=every)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *said, figures = done.stdout.splitlines()  # the engine logs to stdout, before the figures
    for line in said:
        if "warning" in line.lower() or "error" in line.lower():
            print(f"  start-up said: {line[:300]}")
    out = figures.split()
    seconds, events, base = float(out[0]), int(out[1]), int(out[2])
    _IMPORTS.append(float(out[3]))
    return seconds, events / seconds, base


_IMPORTS: list[float] = []  # seconds to start Python and import the engine, per start-up


def take_snapshot(path: Path, position: int) -> tuple[float, int]:
    """Have the writer's snapshot thread build the state at `position` from the log (a
    replay and a pickle, as it does every `snapshot_every_events`), and store it as the
    writer does; seconds it took, bytes."""
    store = SqliteEventStore(path, tables=TABLES)
    try:
        seconds, size, _ = snapshot_store(store, position)
    finally:
        store.close()
    return seconds, size


def snapshot_store(store: EventStore, position: int) -> tuple[float, int, int]:
    """`take_snapshot` on an open store of any backend (bench_postgres's too): seconds,
    bytes, and the position the snapshot holds. The snapshotter is built as the
    composition root builds it, with a registry, and what it builds reaches `deliver`."""
    built: list[tuple[int, str, bytes]] = []
    snapshotter = Snapshotter(store, domain_registry())
    snapshotter.deliver = lambda at, check, data: built.append((at, check, data))
    with Timer() as t:
        snapshotter.request(position)
        snapshotter.wait()
        if not built:  # the thread logs why and gives up; a figure without it is none
            raise RuntimeError(f"no state snapshot was built at position {position}")
        at, check, data = built[0]
        store.save_state_snapshot(at, FORMAT, check, data)
    return t.seconds, len(data), at


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=100_000)
    p.add_argument("--replay-events", type=int, default=1_000_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument(
        "--replay-runs", type=int, default=None, help="full replays and scans (default --runs)"
    )
    p.add_argument("--tail", type=int, default=50_000)
    p.add_argument(
        "--together", type=int, default=64, help="commands per submit_many of each sender"
    )
    p.add_argument("--skip-writer", action="store_true", help="start-up figures only")
    args = p.parse_args()
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        counter = iter(range(10**9))

        def raw() -> float:
            return raw_executemany(d / f"raw{next(counter)}.db", args.events)

        def writer_noop() -> float:
            return through_writer(
                d / f"w{next(counter)}.db",
                [_Note(n=i) for i in range(args.events)],
                together=args.together,
            )

        def writer_one_by_one() -> float:
            return through_writer(
                d / f"s{next(counter)}.db", [_Note(n=i) for i in range(args.events)]
            )

        def writer_deposit() -> float:
            return through_writer(
                d / f"d{next(counter)}.db",
                [SandboxDeposit()] * (args.events // 4),
                together=args.together,
            )

        if not args.skip_writer:
            # Each run measures the baseline and then each writer path, so that a ratio
            # compares figures taken moments apart, not five runs of one against five of
            # the other; the ratio printed is the median of the runs' ratios.
            runs = [
                tuple(_clean(fn) for fn in (raw, writer_noop, writer_one_by_one, writer_deposit))
                for _ in range(args.runs)
            ]
            base = _summary([r[0] for r in runs])
            print(f"raw executemany (FULL, 500/tx)          {_spread(base)}")
            for k, label, note in (
                (1, "writer, one-event commands (FULL)    ", f" ({args.together} per submit_many)"),
                (2, "writer, the same submitted one by one", ""),
                (3, "writer, sandbox deposits (FULL)      ", ""),
            ):
                ratio = statistics.median(r[k] / r[0] for r in runs)
                print(
                    f"{label}   {_spread(_summary([r[k] for r in runs]))}  ratio {ratio:.2f}{note}"
                )

        log = d / "replay.db"
        with Timer() as t:
            build_log(log, args.replay_events)
        print(f"built a log of {args.replay_events:,} events in {t.seconds:.1f} s")
        took, size = take_snapshot(log, args.replay_events - args.tail)
        print(f"state snapshot built in the background in {took:.1f} s, {size / 1e6:.1f} MB")
        slow_runs = args.replay_runs or args.runs
        scan = repeat(lambda: bare_scan(log), slow_runs)
        full = [startup(log) for _ in range(slow_runs)]
        rates = {"median": statistics.median(r[1] for r in full)}
        rates.update(min=min(r[1] for r in full), max=max(r[1] for r in full))
        print(f"bare scan + orjson decode               {_spread(scan)}")
        print(
            f"start-up replay, no snapshot            {_spread(rates)}"
            f"  ratio {rates['median'] / scan['median']:.2f}"
            f" ({statistics.median(r[0] for r in full):.2f} s, median of {slow_runs})"
        )
        snap = [startup(log, snapshots=True) for _ in range(args.runs)]
        secs = [r[0] for r in snap]
        print(
            f"start-up from a snapshot                {statistics.median(secs):.2f} s"
            f" (min {min(secs):.2f}, max {max(secs):.2f}; snapshot at {snap[0][2]:,},"
            f" {args.replay_events - snap[0][2]:,} events replayed)"
        )
        print(
            "start-ups ran in fresh processes; starting Python and importing the engine"
            f" took {statistics.median(_IMPORTS):.2f} s more (median)"
        )
        problems = verify(str(log))
        print(f"sandex verify: {'OK' if not problems else problems[0]}")


def _clean(fn: Any) -> float:
    """`fn()` after collecting what the runs before it left: each starts from the same heap."""
    gc.collect()
    return float(fn())


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _spread(r: dict[str, float]) -> str:
    return f"{fmt_rate(r['median'])} (min {fmt_rate(r['min'])}, max {fmt_rate(r['max'])})"


if __name__ == "__main__":
    main()
