"""Listing the event feed of one customer whose log holds about `--events` events.

    python bench/bench_feed.py [--events 1000000] [--rounds 5] [--calls 200] [--keep DB]

The log is built through the engine (the orders of bench_http_orders.py, 32 in flight,
one customer, so that every feed item is that customer's); then, each round on fresh
read connections, the microseconds per call (median of `--calls`) of what a client of
GET /v2/events asks: the first page of 100, a page of 100 at the end (by cursor), the
first and the last page of `type=order.filled`, and GET /v2/events/{id} of a late item.
Its figures say whether a change of the feed's storage (engine/domain/feed.py) keeps the
listing fast; run it against two trees with SANDEX_BENCH_TREE (a copy of bench/ alone,
as bench/ab.py does) to compare. `sandex verify`
checks the database at the end.
"""

from __future__ import annotations

import argparse
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

ROOT = measured_tree()

from bench.bench_http_orders import BODIES  # noqa: E402
from sandex.engine import Settings, open_engine  # noqa: E402
from sandex.engine.kernel.commands import Actor, CreateCustomer, CreateOrder, SandboxDeposit  # noqa: E402
from sandex.engine.read import feed  # noqa: E402
from sandex.engine.read.queries import Queries  # noqa: E402
from sandex.engine.tools.verify import verify  # noqa: E402


def build(path: Path, events: int, in_flight: int = 32) -> str:
    """A log of at least `events` events, nearly all one customer's orders; its id."""
    engine = open_engine(path, Settings(clock="wall", durability="NORMAL")).start()
    try:
        made = engine.execute(CreateCustomer())
        actor = Actor(customer_id=made["customer_id"], client_id=made["client_id"])
        for asset, amount in (("USD", "1000000000000"), ("BTC", "1000000"), ("ETH", "10000000")):
            engine.execute(
                SandboxDeposit(actor=actor, profile_id="default", asset=asset, amount=amount)
            )
        done = threading.Event()

        def sender(k: int) -> None:
            i = k
            while not done.is_set():
                command = CreateOrder(actor=actor, profile_id="default", **BODIES[i % len(BODIES)])
                engine.submit(command).result(60)
                i += in_flight

        threads = [threading.Thread(target=sender, args=(k,)) for k in range(in_flight)]
        for t in threads:
            t.start()
        while engine.store.last_position() < events:
            time.sleep(0.5)
        done.set()
        for t in threads:
            t.join()
        return str(made["customer_id"])
    finally:
        engine.stop()


def _per_call(fn: Callable[[], Any], calls: int) -> float:
    """Microseconds per call, the median of `calls` timed calls."""
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def one_round(db: str, customer: str, calls: int) -> dict[str, float]:
    queries = Queries(db)
    try:
        conn = queries.conn
        late = conn.execute(
            "SELECT seq FROM event_feed WHERE customer_id = ? ORDER BY seq DESC LIMIT 1 OFFSET 150",
            (customer,),
        ).fetchone()[0]
        late_filled = conn.execute(
            "SELECT seq FROM event_feed WHERE customer_id = ? AND type = 'order.filled'"
            " ORDER BY seq DESC LIMIT 1 OFFSET 150",
            (customer,),
        ).fetchone()[0]
        item = conn.execute(
            "SELECT id FROM event_feed WHERE customer_id = ? AND type = 'order.filled'"
            " ORDER BY seq DESC LIMIT 1",
            (customer,),
        ).fetchone()
        cursor = queries.cursors.encode(late, "event_feed", customer)
        filled_cursor = queries.cursors.encode(late_filled, "event_feed", customer)

        def page(**kw: Any) -> None:
            events, _ = feed.list_events(queries, customer, limit=100, **kw)
            assert len(events) == 100

        return {
            "first page": _per_call(page, calls),
            "last page (cursor)": _per_call(lambda: page(page_cursor=cursor), calls),
            "order.filled, first page": _per_call(lambda: page(type="order.filled"), calls),
            "order.filled, last page": _per_call(
                lambda: page(type="order.filled", page_cursor=filled_cursor), calls
            ),
            "one event by id": _per_call(lambda: feed.get_event(queries, customer, item[0]), calls),
        }
    finally:
        queries.close()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--keep", type=Path, help="build the log here, or reuse it if it exists")
    args = p.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        db = args.keep or Path(tmp) / "feed.db"
        started = time.perf_counter()
        if db.exists():
            customer = (
                Queries(str(db))
                .conn.execute(
                    "SELECT customer_id FROM event_feed GROUP BY customer_id"
                    " ORDER BY count(*) DESC LIMIT 1"
                )
                .fetchone()[0]
            )
        else:
            customer = build(db, args.events)
        rows = Queries(str(db)).conn.execute("SELECT count(*) FROM event_feed").fetchone()[0]
        print(
            f"tree {ROOT}; log of {args.events:,}+ events, {rows:,} feed items of one customer"
            f" (ready in {time.perf_counter() - started:.0f} s); microseconds per call,"
            f" median [min–max] of {args.rounds} rounds of {args.calls} calls"
        )
        rounds = [one_round(str(db), customer, args.calls) for _ in range(args.rounds)]
        for name in rounds[0]:
            values = [r[name] for r in rounds]
            print(
                f"  {name:28} {statistics.median(values):8.0f} us"
                f"  [{min(values):.0f}–{max(values):.0f}]"
            )
        problems = verify(str(db))
        print("sandex verify:", "OK" if not problems else problems[:3])
        return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
