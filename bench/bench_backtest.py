"""Backtest speed: idle reference points per second, orders per second during a run,
and a moving-average cross on hourly bars against backtesting.py on the same data.

    python bench/bench_backtest.py [--points 1000000] [--bars 5000] [--orders 3000] [--runs 3]

- idle points: a trades file of `--points` prices, nothing resting and a strategy with
  no callbacks: the runner's walk over the points (loading and rounding the file to the
  tick are timed apart); then the same with an order resting far below the path, and
  with an `on_price` callback that does nothing;
- orders: a strategy placing a limit order at every point and cancelling the previous
  one, with a market order every tenth point: orders (and all commands) per second of
  the walk;
- MA cross: `scenarios/backtests/ma_cross.py` (SMA 10/30 on closes, all in, all out,
  0.1% taker fee) on `--bars` hourly bars, whole run from the CSV file to the summary,
  against the same rule in backtesting.py (`pip install -e .[bench]`) from the same
  CSV file to its stats, in the same process, the two alternated. sandex fills at the
  next bar's open (`fill_at="next-open"`), as backtesting.py does by default, and the
  line after the timings sets the two sides' trades and win rates side by side. The goal's figure
  keeps nothing, as backtesting.py does (no `--db`: a scratch log, dropped); a second
  figure keeps the log in a database, verified, and every run's log hash must agree.
  A third line splits sandex's time: its orders go through the engine (book, matching,
  ledger, events), the rest is reading the bars, the walk and the statistics.

- against backtesting.py on the same `--bars` hourly bars, each side's whole run (file
  to statistics, in this process, CPU time): idle bars (an `on_bar` / `next` that does
  nothing) per 1,000 bars; orders with a cancel (at every bar the order placed at the
  bar before is cancelled and a limit buy placed 5% under the close, resting) per 1,000
  orders, the idle run's time taken away; and a grid (limit buys at 1% steps under the
  price, each fill answered by a limit sell a step above, every fill re-armed), whole run.
  Each figure is the median of `--runs` with min and max.

Every database a run writes is checked with `sandex verify` (`sandex.engine.tools.verify.verify`)
after its timing ends; the last line says so (a problem fails the benchmark).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import random
import statistics
import sys
import tempfile
import time
import warnings
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import machine, measured_tree  # noqa: E402

ROOT = measured_tree()  # this checkout, or $SANDEX_BENCH_TREE's

from sandex.engine import Engine, open_engine  # noqa: E402
from sandex.engine.backtest import Api, Strategy, run  # noqa: E402
from sandex.engine.backtest.price_files import from_micros, load  # noqa: E402
from sandex.engine.backtest.runner import Runner, engine_settings  # noqa: E402
from sandex.engine.tools.verify import verify  # noqa: E402

T0 = 1_704_067_200
VERIFIED: dict[str, Any] = {"databases": 0, "problems": []}


def verified(db: Path) -> None:
    """`sandex verify` on a database a run wrote, outside any timing. Its replayed state
    is collected here, or the next run's engine would collect it inside its timing."""
    problems = verify(str(db))
    VERIFIED["problems"] += [f"{db}: {p}" for p in problems]
    VERIFIED["databases"] += 1
    gc.collect()


def trades_file(folder: Path, n: int) -> Path:
    rng = random.Random(5)
    path = folder / f"trades_{n}.csv"
    p = 42000.0
    with path.open("w") as f:
        f.write("timestamp,price\n")
        for k in range(n):
            p = min(max(p * math.exp(rng.gauss(0, 0.0004)), 38000.0), 46000.0)
            f.write(f"{(T0 * 1000) + k * 250},{p:.2f}\n")
    return path


def bars_file(folder: Path, n: int) -> Path:
    rng = random.Random(9)
    path = folder / f"bars_{n}.csv"
    p = 42000.0
    with path.open("w") as f:
        f.write("timestamp,open,high,low,close,volume\n")
        for k in range(n):
            o = p
            pull = 0.02 * math.log(42000.0 / o)  # mean-reverting: order sizes stay in bounds
            c = o * math.exp(pull + 0.002 * math.sin(k / 60.0) + rng.gauss(0, 0.006))
            h = max(o, c) * (1 + abs(rng.gauss(0, 0.002)))
            low = min(o, c) * (1 - abs(rng.gauss(0, 0.002)))
            ts = datetime.fromtimestamp(T0 + 3600 * k).strftime("%Y-%m-%dT%H:%M:%SZ")
            f.write(f"{ts},{o:.2f},{h:.2f},{low:.2f},{c:.2f},{rng.uniform(1, 50):.4f}\n")
            p = c
    return path


class Idle(Strategy):
    pass


class Watching(Strategy):
    def on_price(self, market: str, time: datetime, price: Decimal) -> None:
        pass


class Resting(Strategy):
    def on_start(self, api: Api) -> None:
        api.create_order(
            side="BUY", market="BTCUSD", type="LIMIT", price="20000", base_amount="0.1"
        )


class Churn(Strategy):
    """A limit order at every point, the previous one cancelled, a market order every
    tenth point."""

    def __init__(self) -> None:
        self.k = 0
        self.last: str | None = None
        self.orders = 0
        self.commands = 0

    def on_price(self, market: str, time: datetime, price: Decimal) -> None:
        api = self.api
        self.k += 1
        bid = (price * Decimal("0.995")).quantize(Decimal("1"))
        if self.last is not None:
            api.cancel_order(self.last)
            self.commands += 1
        self.last = api.create_order(
            side="BUY", market=market, type="LIMIT", price=bid, base_amount="0.001"
        )["id"]
        self.orders += 1
        self.commands += 1
        if self.k % 10 == 0:
            api.create_order(side="BUY", market=market, type="MARKET", quote_amount="50")
            self.orders += 1
            self.commands += 1


TICK = Decimal("0.25")  # BTCUSD's


def on_tick(price: Decimal) -> Decimal:
    return (price / TICK).quantize(Decimal(1)) * TICK


class BarIdle(Strategy):
    def on_bar(self, market: str, bar: Any) -> None:
        pass


class BarCancel(Strategy):
    """At every bar: the order placed at the bar before cancelled, a limit buy placed
    5% under the close (it rests: the walk never reaches it)."""

    def __init__(self) -> None:
        self.last: str | None = None
        self.orders = 0

    def on_bar(self, market: str, bar: Any) -> None:
        api = self.api
        if self.last is not None:
            api.cancel_order(self.last)
        price = on_tick(bar.close * Decimal("0.95"))
        self.last = api.create_order(
            side="BUY", market=market, type="LIMIT", price=price, base_amount="0.01"
        )["id"]
        self.orders += 1


class BarGrid(Strategy):
    """Limit buys at 1% steps under the first close; a filled buy is answered by a limit
    sell a step above it, a filled sell by the buy again."""

    levels = 5

    def __init__(self) -> None:
        self.step = Decimal(0)
        self.orders = 0

    def on_bar(self, market: str, bar: Any) -> None:
        if not self.step:
            self.step = on_tick(bar.close / 100)
            for k in range(1, self.levels + 1):
                self.place("BUY", on_tick(bar.close) - k * self.step)

    def place(self, side: str, price: Decimal) -> None:
        self.api.create_order(
            side=side, market="BTCUSD", type="LIMIT", price=price, base_amount="0.01"
        )
        self.orders += 1

    def on_order(self, order: dict[str, Any]) -> None:
        if order["status"] == "FILLED":
            price = Decimal(order["price"])
            if order["side"] == "BUY":
                self.place("SELL", price + self.step)
            else:
                self.place("BUY", price - self.step)


def sandex_cpu(data: Path, strategy: Any) -> float:
    """CPU time of a whole run, file to statistics (a temporary log, dropped)."""
    started = time.process_time()
    run(data, "BTCUSD", strategy=strategy, deposits={"USD": "10000000"}, progress=False)
    return time.process_time() - started


def backtesting_cpu(data: Path, kind: str) -> tuple[float, int]:
    """CPU time of backtesting.py's whole run (read_csv to stats) of the same strategy,
    and the orders it placed."""
    import pandas as pd
    from backtesting import Backtest
    from backtesting import Strategy as BtStrategy

    placed = [0]

    class Idle(BtStrategy):
        def init(self) -> None:
            pass

        def next(self) -> None:
            pass

    class Cancel(BtStrategy):
        def init(self) -> None:
            self.last: Any = None

        def next(self) -> None:
            if self.last is not None:
                self.last.cancel()
            self.last = self.buy(size=0.01, limit=round(self.data.Close[-1] * 0.95, 2))
            placed[0] += 1

    class Grid(BtStrategy):
        """The same grid: each level's order is a buy at it or, once that fills, a
        sell a step above (a fill is an order no longer pending)."""

        levels = 5

        def init(self) -> None:
            self.step = 0.0
            self.pending: list[tuple[float, bool, Any]] = []  # (level, is a buy, order)

        def next(self) -> None:
            if not self.step:
                close = round(float(self.data.Close[-1]) * 4) / 4
                self.step = round(close / 100 * 4) / 4
                for k in range(1, self.levels + 1):
                    level = close - k * self.step
                    self.pending.append((level, True, self.buy(size=0.01, limit=level)))
                    placed[0] += 1
                return
            waiting = set(map(id, self.orders))
            for k, (level, buying, order) in enumerate(self.pending):
                if id(order) in waiting:
                    continue
                if buying:
                    again = (level, False, self.sell(size=0.01, limit=level + self.step))
                else:
                    again = (level, True, self.buy(size=0.01, limit=level))
                self.pending[k] = again
                placed[0] += 1

    warnings.simplefilter("ignore")
    cls = {"idle": Idle, "cancel": Cancel, "grid": Grid}[kind]
    started = time.process_time()
    frame = pd.read_csv(data, parse_dates=["timestamp"], index_col="timestamp")
    frame.columns = [c.capitalize() for c in frame.columns]
    Backtest(frame, cls, cash=10_000_000, commission=0.0006).run()
    return time.process_time() - started, placed[0]


def spread(values: list[float], unit: float, fmt: str) -> str:
    """median [min-max] of `values` times `unit`."""
    scaled = [v * unit for v in values]
    return (
        f"{format(statistics.median(scaled), fmt)}"
        f" [{format(min(scaled), fmt)}-{format(max(scaled), fmt)}]"
    )


def against_backtesting(bars: Path, n_bars: int, runs: int) -> None:
    """Idle bars, orders with a cancel and a grid, each side's whole run, CPU time."""
    try:
        import backtesting  # noqa: F401
    except ImportError:
        print("idle bars, orders with a cancel, grid: backtesting.py is not installed")
        return
    ours: dict[str, list[float]] = {"idle": [], "cancel": [], "grid": []}
    theirs: dict[str, list[float]] = {"idle": [], "cancel": [], "grid": []}
    counts: dict[str, int] = {}
    for _ in range(runs):  # paired: each run measures both sides back to back
        for kind, make in (("idle", BarIdle), ("cancel", BarCancel), ("grid", BarGrid)):
            strategy = make()
            ours[kind].append(sandex_cpu(bars, strategy))
            counts[f"ours_{kind}"] = getattr(strategy, "orders", 0)
            spent, placed = backtesting_cpu(bars, kind)
            theirs[kind].append(spent)
            counts[f"theirs_{kind}"] = placed
    per_k = 1000 / n_bars
    ratios = [a / b for a, b in zip(ours["idle"], theirs["idle"], strict=True)]
    print(
        f"idle bars ({n_bars} bars, on_bar/next doing nothing, whole run, CPU):"
        f" sandex {spread(ours['idle'], per_k * 1000, '.2f')} ms per 1,000 bars,"
        f" backtesting.py {spread(theirs['idle'], per_k * 1000, '.2f')} ms;"
        f" idle ratio {spread(ratios, 1, '.2f')}"
    )
    orders_ours, orders_theirs = counts["ours_cancel"], counts["theirs_cancel"]
    mine = [(a - b) * 1000 / orders_ours for a, b in zip(ours["cancel"], ours["idle"], strict=True)]
    bts = [
        (a - b) * 1000 / orders_theirs
        for a, b in zip(theirs["cancel"], theirs["idle"], strict=True)
    ]
    print(
        f"orders with a cancel ({orders_ours} limit orders each cancelled at the next bar,"
        f" CPU beyond the idle run): sandex {spread(mine, 1000, '.0f')} ms per 1,000 orders,"
        f" backtesting.py {spread(bts, 1000, '.1f')} ms ({orders_theirs} orders)"
    )
    grid = [a / b for a, b in zip(ours["grid"], theirs["grid"], strict=True)]
    print(
        f"grid ({counts['ours_grid']} sandex orders, {counts['theirs_grid']} backtesting.py"
        f" orders, whole run, CPU): sandex {spread(ours['grid'], 1, '.3f')} s,"
        f" backtesting.py {spread(theirs['grid'], 1, '.3f')} s; grid ratio {spread(grid, 1, '.2f')}"
    )


def walk(data: Path, strategy: Any, folder: Path) -> dict[str, float]:
    """Time the phases of one run: load, prepare (rounding to the tick), set-up, walk."""
    started = time.perf_counter()
    series = load(data, "BTCUSD")
    loaded = time.perf_counter()
    db = Path(tempfile.mkdtemp(dir=folder)) / "bt.db"
    first = series["BTCUSD"].times[0]
    engine = open_engine(db, engine_settings(None, from_micros(first), 0, {}))
    runner = Runner(engine, series, strategy, None, ["USD", "BTC"])
    prepared = time.perf_counter()
    with engine.one_transaction():  # as `run` holds it: its commit ends the walk
        runner.setup({"USD": "10000000"})
        set_up = time.perf_counter()
        runner.run()
    walked = time.perf_counter()
    runner.close()
    engine.stop()
    verified(db)
    return {
        "load": loaded - started,
        "prepare": prepared - loaded,
        "setup": set_up - prepared,
        "walk": walked - set_up,
        "points": len(runner.times),
        "commands": runner.commands,
    }


def median_of(runs: int, fn: Any) -> dict[str, float]:
    results = [fn() for _ in range(runs)]
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def backtesting_py(data: Path) -> tuple[float, dict[str, Any]]:
    import pandas as pd
    from backtesting import Backtest
    from backtesting import Strategy as BtStrategy
    from backtesting.lib import crossover

    def sma(values: Any, n: int) -> Any:
        return pd.Series(values).rolling(n).mean()

    class SmaCross(BtStrategy):
        def init(self) -> None:
            self.fast = self.I(sma, self.data.Close, 10)
            self.slow = self.I(sma, self.data.Close, 30)

        def next(self) -> None:
            if crossover(self.fast, self.slow):
                self.buy(size=0.99)
            elif crossover(self.slow, self.fast):
                self.position.close()

    warnings.simplefilter("ignore")  # its notes on fractional sizes are not ours to read
    started = time.perf_counter()
    frame = pd.read_csv(data, parse_dates=["timestamp"], index_col="timestamp")
    frame.columns = [c.capitalize() for c in frame.columns]
    bt = Backtest(frame, SmaCross, cash=10_000_000, commission=0.001)
    stats = bt.run()
    spent = time.perf_counter() - started
    return spent, {"count": int(stats["# Trades"]), "win_rate_pct": float(stats["Win Rate [%]"])}


def sandex_ma(data: Path, keep: bool) -> dict[str, Any]:
    """The whole run, and the part of it spent in engine commands (two clock reads per
    command: well under a microsecond each). Without `keep`, as backtesting.py, nothing
    is kept (`run` writes a scratch log it drops); with it, the log is written to a
    database (`db=`) that `sandex verify` checks after the timing."""
    db = Path(tempfile.mkdtemp(dir=data.parent)) / "ma.db" if keep else None
    inner, chained = Engine.run_inline, Engine.run_inline_chain
    spent = {"engine": 0.0, "commands": 0}

    def timed(self: Engine, command: Any) -> Any:
        began = time.perf_counter()
        try:
            return inner(self, command)
        finally:
            spent["engine"] += time.perf_counter() - began
            spent["commands"] += 1

    def timed_chain(self: Engine, commands: Any) -> Any:
        began = time.perf_counter()
        try:
            return chained(self, commands)
        finally:
            spent["engine"] += time.perf_counter() - began
            spent["commands"] += len(commands)

    Engine.run_inline = timed  # type: ignore[method-assign]
    Engine.run_inline_chain = timed_chain  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        result = run(
            data,
            "BTCUSD",
            strategy=f"{ROOT / 'scenarios' / 'backtests' / 'ma_cross.py'}:MaCross",
            taker_fee="0.001",
            progress=False,
            db=db,
            fill_at="next-open",
        )
        total = time.perf_counter() - started
    finally:
        Engine.run_inline, Engine.run_inline_chain = inner, chained  # type: ignore[method-assign]
    if db is not None:
        verified(db)
        db.unlink()
    return {
        "total": total,
        **spent,
        "orders": result.summary["orders"]["total"],
        "executions": result.summary["executions"],
        "log_hash": result.summary["log_hash"],
        "trades": result.summary["trades"],
    }


def ma_cross(bars: Path, n_bars: int, runs: int) -> None:
    """sandex without a database, backtesting.py, sandex with one: alternated, `runs`
    rounds, each ratio paired within its round."""
    scratch: list[dict[str, Any]] = []
    kept: list[dict[str, Any]] = []
    theirs: list[float] = []
    their_trades: dict[str, Any] = {}
    for _ in range(runs):
        scratch.append(sandex_ma(bars, keep=False))
        with contextlib.suppress(ImportError):  # reported below
            spent, their_trades = backtesting_py(bars)
            theirs.append(spent)
        kept.append(sandex_ma(bars, keep=True))
    hashes = {m["log_hash"] for m in scratch + kept}
    if len(hashes) != 1:
        VERIFIED["problems"].append(f"MA cross: runs with and without a database differ: {hashes}")
    r = {k: statistics.median(m[k] for m in scratch) for k in ("total", "engine", "commands")}
    line = (
        f"MA cross 10/30 on {n_bars} hourly bars, file to statistics, nothing kept: sandex"
        f" {spread([m['total'] for m in scratch], 1, '.3f')} s"
    )
    if theirs:
        ratios = [m["total"] / t for m, t in zip(scratch, theirs, strict=True)]
        kept_ratios = [m["total"] / t for m, t in zip(kept, theirs, strict=True)]
        print(
            f"{line}, backtesting.py {spread(theirs, 1, '.3f')} s: sandex/backtesting.py ="
            f" {spread(ratios, 1, '.2f')} (wall time, median [min-max] of {runs} alternated rounds)"
        )
        print(
            f"  the same with the log kept in a database (db=, verified):"
            f" {spread([m['total'] for m in kept], 1, '.3f')} s, ratio {spread(kept_ratios, 1, '.2f')};"
            f" log hash the same in every run: {'yes' if len(hashes) == 1 else 'NO'}"
        )
        ours = scratch[0]["trades"]
        print(
            f"  trades (positions), both filled at the next open: sandex {ours['count']},"
            f" win rate {ours['win_rate_pct']} %; backtesting.py {their_trades['count']},"
            f" win rate {their_trades['win_rate_pct']:.2f} %"
        )
    else:
        print(f"{line}; backtesting.py is not installed (pip install -e .[bench])")
    print(
        f"  sandex: {scratch[0]['orders']} market orders, {scratch[0]['executions']} executions;"
        f" {r['commands']:.0f} engine commands (decide, apply, write to the log)"
        f" {r['engine']:.3f} s; the rest {r['total'] - r['engine']:.3f} s (reading the bars,"
        " opening the database, the walk and the strategy, the statistics; medians);"
        " backtesting.py: pandas read_csv, rolling means, its broker and stats"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--bars", type=int, default=5000)
    ap.add_argument("--orders", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--idle-bars", type=int, default=20000, help="bars of the comparisons")
    args = ap.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data = trades_file(folder, args.points)
        for label, cls in (
            ("idle, nothing resting, no callbacks", Idle),
            ("idle, an order resting off the path", Resting),
            ("idle, an on_price that does nothing", Watching),
        ):
            r = median_of(args.runs, lambda cls=cls: walk(data, cls(), folder))
            n = r["points"]
            print(
                f"{label}: {n / r['walk']:,.0f} points/s in the walk"
                f" ({r['walk']:.2f} s for {n:,.0f});"
                f" loading {n / r['load']:,.0f}/s, rounding to the tick {n / r['prepare']:,.0f}/s,"
                f" end to end {n / (r['load'] + r['prepare'] + r['walk']):,.0f}/s"
            )
        small = trades_file(folder, args.orders)
        churns = []
        for _ in range(args.runs):
            churn = Churn()
            r = walk(small, churn, folder)
            churns.append((churn.orders / r["walk"], r["commands"] / r["walk"]))
        print(
            f"orders during a backtest: {statistics.median(c[0] for c in churns):,.0f} orders/s"
            f" ({statistics.median(c[1] for c in churns):,.0f} engine commands/s, in one"
            " transaction as `run` holds; cancels and clock moves included)"
        )
        ma_cross(bars_file(folder, args.bars), args.bars, args.runs)
        against_backtesting(bars_file(folder, args.idle_bars), args.idle_bars, args.runs)
    problems = VERIFIED["problems"]
    print(
        f"sandex verify of {VERIFIED['databases']} databases: {problems[0] if problems else 'OK'}"
    )
    if problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
