"""Memory per resting order: the writer's state grown by N limit orders that rest.

    python bench/bench_memory.py [--orders 200000]

Orders are decided and applied as the writer does (engine._handle: the order, its book
level, its stream version), without the store, on a still market; the rows a commit
would hand to SQLite (read-model rows, public feed items) are dropped as a commit drops
them; buys from 30,000 to 40,000 USD, far under the reference, so that all rest.
The figure is the growth of the process's resident memory after a full collection,
divided by the orders: what a million resting orders cost is that times a million.

    python bench/bench_memory.py --bars 1000000 [--hold]

A backtest's size instead, in this process (one run: a million bars take a while):
`--bars` hourly bars (bench_backtest.py's file), a strategy whose `on_bar` does nothing
(with `--hold`, one that buys at the start and holds, so that the equity changes at
every point), file to statistics with `sandex.engine.backtest.run`, then the whole report:
summary.json, the CSV files and report.html with its charts (`--no-html` leaves the
page out). Printed: the memory held after the run per bar, the peak resident memory
(the process's high-water mark, `ru_maxrss`) and its growth per bar, and the times of
the run and the report.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import Timer, machine, measured_tree  # noqa: E402

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

from sandex.engine import Settings, open_engine  # noqa: E402
from sandex.engine.kernel.commands import Actor, CreateCustomer, CreateOrder, SandboxDeposit  # noqa: E402


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def backtest_size(bars: int, hold: bool, html: bool = True) -> None:
    """Memory and time of one backtest over `bars` hourly bars, and of its report."""
    import resource
    import time

    import sandex.engine.backtest.report as report
    from bench.bench_backtest import bars_file
    from sandex.engine.backtest import Api, Strategy, run

    class Idle(Strategy):
        def on_bar(self, market: str, bar: object) -> None:
            pass

    class Hold(Idle):
        def on_start(self, api: Api) -> None:
            api.create_order(side="BUY", market="BTCUSD", type="MARKET", quote_amount="50000")

    if not html:
        report.render_html = lambda result: ""  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        data = bars_file(Path(tmp), bars)
        gc.collect()
        before = rss()
        started = time.process_time()
        result = run(data, "BTCUSD", strategy=Hold() if hold else Idle(), progress=False)
        ran = time.process_time() - started
        held = rss() - before
        started = time.process_time()
        result.write(Path(tmp) / "report")
        wrote = time.process_time() - started
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        f"backtest of {bars:,} bars ({'bought and held' if hold else 'no orders'}):"
        f" run {ran:.2f} s CPU (file to statistics), report {wrote:.2f} s CPU"
        f" (summary.json, the CSVs{' and report.html' if html else ''}); memory held after the run {held / bars:,.0f}"
        f" bytes per bar; peak resident {peak / 2**20:,.0f} MiB, {before / 2**20:,.0f} MiB"
        f" before the run: {(peak - before) / bars:,.0f} bytes per bar at the peak"
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--orders", type=int, default=200_000)
    p.add_argument("--bars", type=int, default=0, help="measure a backtest instead")
    p.add_argument("--hold", action="store_true")
    p.add_argument("--no-html", action="store_true", help="a report without report.html")
    args = p.parse_args()
    print(f"machine: {machine()}")
    if args.bars:
        backtest_size(args.bars, args.hold, not args.no_html)
        return
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(clock="manual", market_volatility=Decimal(0), snapshot_every_events=0)
        engine = open_engine(Path(tmp) / "memory.db", settings).start()
        made = engine.execute(CreateCustomer(client_id="m", client_secret="m", bootstrap=True))
        actor = Actor(customer_id=made["customer_id"], client_id="m")
        engine.execute(
            SandboxDeposit(actor=actor, profile_id="default", asset="USD", amount="1000000000")
        )
        engine.stop()
        engine._thread = None
        commands = [
            CreateOrder(
                actor=actor,
                profile_id="default",
                market="BTCUSD",
                side="BUY",
                type="LIMIT",
                price=format(Decimal(30000) + Decimal(i % 40000) / 4, "f"),
                base_amount="0.001",
            )
            for i in range(args.orders)
        ]
        gc.collect()
        before = rss()
        with Timer() as t:
            for command in commands:
                engine._handle(command)
                engine._pending.clear()
                engine.state.dirty.clear()
                engine.state.appended = []  # what a commit hands to SQLite
        del commands
        gc.collect()
        grown = rss() - before
        book = engine.state.ext["trading"].markets["BTCUSD"].book
        resting = len(book)
        assert resting == args.orders, f"{resting} of {args.orders} rest"
        print(
            f"resting orders: {resting:,} in {t.seconds:.1f} s;"
            f" memory per resting order {grown / resting:,.0f} bytes"
            f" ({grown / 2**20:,.0f} MiB in all)"
        )


if __name__ == "__main__":
    main()
