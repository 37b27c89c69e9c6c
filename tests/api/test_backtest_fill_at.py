"""Where an order sent once a bar is complete fills (`fill_at`): at that bar's close
(the default), or at the next bar's open, across a weekend's gap in the data; and the
next bar's time, which a strategy reads to act at the next open itself.

LTCUSD hourly bars with a weekend between the first two, no spread and no fees: an order
fills at the price point's own price."""

from __future__ import annotations

import subprocess
import sys
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sandex.engine.backtest import BacktestError, BacktestResult, Strategy, run
from sandex.engine.backtest.price_files import Bar, load
from sandex.engine.kernel.clock import EPOCH, parse_time
from sandex.engine.tools.verify import verify

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_704_499_200  # 2024-01-06T00:00:00Z, a Saturday
HOUR = 3600
FRIDAY = T0 - HOUR  # 2024-01-05T23:00:00Z
MONDAY = T0 + 2 * 24 * HOUR  # 2024-01-08T00:00:00Z
# Friday's last bar closes at 100; Monday's first opens at 110 after the weekend
BARS = [
    (FRIDAY, 100, 100, 100, 100),
    (MONDAY, 110, 112, 108, 111),
    (MONDAY + HOUR, 111, 111, 111, 111),
]


def bars_csv(tmp_path: Path) -> Path:
    path = tmp_path / "bars.csv"
    rows = "".join(f"{t},{o},{h},{lo},{c}\n" for t, o, h, lo, c in BARS)
    path.write_text("timestamp,open,high,low,close\n" + rows)
    return path


def at(seconds: int) -> datetime:
    return EPOCH + timedelta(seconds=seconds)


class BuyAtFirstBar(Strategy):
    """A market buy of 1,100 USD once the first bar is complete; records the answer, the
    fills and, at each bar, the next bar's time."""

    def __init__(self) -> None:
        self.answer: dict[str, Any] = {}
        self.fills: list[dict[str, Any]] = []
        self.next_bars: list[datetime | None] = []

    def on_bar(self, market: str, bar: Bar) -> None:
        self.next_bars.append(self.api.next_bar_time(market))
        if len(self.next_bars) == 1:
            self.answer = self.api.create_order(
                side="BUY", market=market, type="MARKET", quote_amount="1100"
            )

    def on_fill(self, execution: dict[str, Any]) -> None:
        self.fills.append(execution)


def backtest(tmp_path: Path, strategy: Any, **options: Any) -> BacktestResult:
    return run(
        bars_csv(tmp_path),
        "LTCUSD",
        strategy=strategy,
        deposits={"USD": "10000"},
        spread_bps="0",
        maker_fee="0",
        taker_fee="0",
        bar_seconds=HOUR,
        **options,
    )


def test_by_default_an_order_sent_at_a_close_fills_at_that_close(tmp_path: Path) -> None:
    strategy = BuyAtFirstBar()
    result = backtest(tmp_path, strategy)
    # 1,100 USD at Friday's close, 100: 11 LTC, at the bar's last microsecond
    [fill] = strategy.fills
    assert (Decimal(fill["price"]), Decimal(fill["amount"])) == (100, 11)
    assert fill["executed_at"] == "2024-01-05T23:59:59.999999Z"
    assert result.summary["fill_at"] == "close"


def test_next_open_fills_an_order_sent_at_a_close_at_the_next_bars_open(
    tmp_path: Path,
) -> None:
    strategy = BuyAtFirstBar()
    result = backtest(tmp_path, strategy, fill_at="next-open")
    # the same order, decided at Friday's close, fills at Monday's open, 110: 10 LTC,
    # at Monday 00:00 (a timer at the close + 1 us would have filled at Friday's 100)
    [fill] = strategy.fills
    assert (Decimal(fill["price"]), Decimal(fill["amount"])) == (110, 10)
    assert fill["executed_at"] == "2024-01-08T00:00:00.000000Z"
    assert strategy.answer["status"] == "FILLED"
    assert result.summary["fill_at"] == "next-open"
    assert result.summary["final_balances"]["LTC"]["available"] == "10"


def test_a_strategy_reads_the_next_bars_time(tmp_path: Path) -> None:
    strategy = BuyAtFirstBar()
    backtest(tmp_path, strategy)
    # across the weekend, then the next hour, then none after the last bar
    assert strategy.next_bars == [at(MONDAY), at(MONDAY + HOUR), None]


class TimerAtNextOpen(Strategy):
    """Decides at Friday's close, and buys from a timer at the next bar's time."""

    fills: list[dict[str, Any]]

    def on_start(self, api: Any) -> None:
        self.fills = []

    def on_bar(self, market: str, bar: Bar) -> None:
        if not self.fills and bar.time == at(FRIDAY):
            when = self.api.next_bar_time(market)
            assert when is not None
            self.api.set_timer("enter", at=when)

    def on_timer(self, name: str, time: datetime) -> None:
        self.api.create_order(side="BUY", market="LTCUSD", type="MARKET", quote_amount="1100")

    def on_fill(self, execution: dict[str, Any]) -> None:
        self.fills.append(execution)


def test_a_timer_at_the_next_bars_time_fills_at_its_open(tmp_path: Path) -> None:
    strategy = TimerAtNextOpen()
    backtest(tmp_path, strategy)
    [fill] = strategy.fills
    assert (Decimal(fill["price"]), fill["executed_at"]) == (110, "2024-01-08T00:00:00.000000Z")


def test_next_open_needs_bars_of_one_market(tmp_path: Path) -> None:
    trades = tmp_path / "trades.csv"
    trades.write_text(f"timestamp,price\n{T0},100\n{T0 + 60},101\n")
    with pytest.raises(BacktestError, match="next-open needs bars of one market"):
        run(trades, "LTCUSD", strategy=Strategy(), fill_at="next-open")
    with pytest.raises(BacktestError, match="one of close, next-open"):
        run(bars_csv(tmp_path), "LTCUSD", strategy=Strategy(), fill_at="open")


def test_the_command_line_takes_fill_at(tmp_path: Path) -> None:
    strategy = tmp_path / "buy.py"
    strategy.write_text(
        "from sandex.engine.backtest import Strategy\n\n\n"
        "class Buy(Strategy):\n"
        "    def on_bar(self, market, bar):\n"
        "        if not hasattr(self, 'done'):\n"
        "            self.done = self.api.create_order(\n"
        "                side='BUY', market=market, type='MARKET', quote_amount='1100'\n"
        "            )\n"
    )
    base = [
        sys.executable,
        "-m",
        "sandex.api_adapter.cli",
        "backtest",
        "--data",
        str(bars_csv(tmp_path)),
    ]
    base += ["--market", "LTCUSD", "--no-progress", "--strategy", f"{strategy}:Buy"]
    base += ["--spread-bps", "0", "--taker-fee", "0", "--bar-seconds", "3600"]
    out = tmp_path / "report"
    done = subprocess.run(
        [*base, "--fill-at", "next-open", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert '"fill_at": "next-open"' in (out / "summary.json").read_text()
    refused = subprocess.run([*base, "--fill-at", "open"], capture_output=True, text=True, cwd=ROOT)
    assert refused.returncode == 2
    assert refused.stderr.strip() == "sandex: fill_at 'open': one of close, next-open"


def test_a_moving_average_cross_at_the_next_open_trades_at_bar_opens_only(
    tmp_path: Path,
) -> None:
    data = ROOT / "scenarios" / "backtests" / "btcusd_hourly.csv"
    strategy = f"{ROOT / 'scenarios' / 'backtests' / 'ma_cross.py'}:MaCross"
    options: dict[str, Any] = {"strategy": strategy, "taker_fee": "0.001"}
    at_close = run(data, "BTCUSD", **options)
    at_open = run(data, "BTCUSD", fill_at="next-open", db=tmp_path / "open.db", **options)
    # the same decisions (the strategy reads closes only), each filled at the next open
    total = at_close.summary["orders"]["total"]
    assert total > 3 and at_open.summary["orders"]["total"] == total
    opens = {b.time for b in load(data, "BTCUSD")["BTCUSD"].bars}
    filled = {parse_time(f.view["executed_at"]) for f in at_open.fills}
    assert filled <= opens
    assert verify(str(tmp_path / "open.db")) == []
