"""The maximum drawdown at the instants a strategy trades, computed by hand: each point
is valued with what was held at it, before the trades it made happen. A bar's low, high
and close share their instant with `on_bar`, so valuing them with what was held after it
hid a drawdown when the strategy sold at the close, made one up when it bought there,
and never valued a position bought and sold inside one bar.

LTCUSD hourly bars, no spread and no fees, 10,000 USD, 10 LTC a trade: every market
order fills at the price point's own price."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from sandex.engine.backtest import BacktestResult, Strategy, run
from sandex.engine.backtest.price_files import Bar

T0 = 1_704_067_200  # 2024-01-01T00:00:00Z
HOUR = 3600


class Script(Strategy):
    """Market orders of 10 LTC at given bars' closes (`on_bar`), and a buy at a time
    inside a bar when `inside` names the bar whose close sets that timer."""

    def __init__(self, at_close: dict[int, str], inside: int | None = None) -> None:
        self.at_close = at_close
        self.inside = inside
        self.bars = 0

    def order(self, side: str) -> None:
        # every purchase here is at 100: 1,000 USD buys 10 LTC
        amount = {"quote_amount": "1000"} if side == "BUY" else {"base_amount": "10"}
        self.api.create_order(side=side, market="LTCUSD", type="MARKET", **amount)

    def on_bar(self, market: str, bar: Bar) -> None:
        side = self.at_close.get(self.bars)
        if side is not None:
            self.order(side)
        if self.bars == self.inside:  # half an hour into the next bar
            self.api.set_timer("buy", at=bar.time + timedelta(minutes=90))
        self.bars += 1

    def on_timer(self, name: str, time: Any) -> None:
        self.order("BUY")


def backtest(
    tmp_path: Path, bars: list[tuple[int, int, int, int]], strategy: Any
) -> BacktestResult:
    path = tmp_path / "bars.csv"
    rows = "".join(f"{T0 + k * HOUR},{o},{h},{lo},{c}\n" for k, (o, h, lo, c) in enumerate(bars))
    path.write_text("timestamp,open,high,low,close\n" + rows)
    return run(
        path,
        "LTCUSD",
        strategy=strategy,
        deposits={"USD": "10000"},
        spread_bps="0",
        maker_fee="0",
        taker_fee="0",
        bar_seconds=HOUR,
    )


def prices(result: BacktestResult) -> list[Decimal]:
    return [Decimal(f.view["price"]) for f in result.fills]


def test_selling_at_a_bars_close_keeps_that_bars_drawdown(tmp_path: Path) -> None:
    # bar 0 flat at 100, bought at its close: 9,000 USD and 10 LTC
    # bar 1 closes down (open, high, low, close: 100, 104, 60, 98), sold at its close
    # the points of bar 1, held with the 10 LTC: 10,000, 10,040 (the peak), 9,600, 9,980
    # deepest: 10,040 -> 9,600, 440 / 10,040 = 4.38247...%  (held with the sale's cash,
    # the high, low and close were all 9,980: 20 / 10,000 = 0.20%)
    result = backtest(
        tmp_path,
        [(100, 100, 100, 100), (100, 104, 60, 98), (98, 98, 98, 98)],
        Script({0: "BUY", 1: "SELL"}),
    )
    assert prices(result) == [100, 98]
    s = result.summary
    assert (s["max_drawdown_pct"], s["max_drawdown_amount"]) == ("4.38", "440")
    # under water from the high (bar 1's last microsecond) to the end (bar 2's): an hour
    assert s["max_drawdown_duration"] == "PT1H"
    # the returns are the closes' equity once their trades are made: 10,000 to 9,980
    assert (s["final_equity"], s["return_pct"]) == ("9980", "-0.20")
    drawdowns = [(r["equity"], r["drawdown_pct"]) for r in result.equity]
    assert ("9600", "4.38") in drawdowns


def test_buying_at_a_bars_close_makes_no_drawdown_of_that_bar(tmp_path: Path) -> None:
    # bar 0 closes up (open, low, high, close: 100, 50, 101, 100), bought at its close:
    # nothing was held at its low, so the equity is 10,000 at every point (held with the
    # purchase, the low was 9,000 + 10 x 50 = 9,500: 5.00%)
    result = backtest(tmp_path, [(100, 101, 50, 100), (100, 100, 100, 100)], Script({0: "BUY"}))
    assert prices(result) == [100]
    s = result.summary
    assert (s["max_drawdown_pct"], s["max_drawdown_amount"]) == ("0.00", "0")
    assert s["max_drawdown_duration"] is None
    assert {r["equity"] for r in result.equity} == {"10000"}


def test_a_position_bought_and_sold_inside_one_bar_is_valued(tmp_path: Path) -> None:
    # bar 1 (open, high, low, close: 100, 100, 70, 90) is bought half an hour in, at its
    # open (9,000 USD and 10 LTC), and sold at its close (9,900 USD)
    # its points: the open 10,000 (before the purchase), then held with the 10 LTC: the
    # high 10,000, the low 9,700, the close 9,900
    # deepest: 10,000 -> 9,700, 300 / 10,000 = 3.00%  (held with the sale's cash, the
    # high, low and close were all 9,900: 1.00%)
    result = backtest(
        tmp_path,
        [(100, 100, 100, 100), (100, 100, 70, 90), (90, 90, 90, 90)],
        Script({1: "SELL"}, inside=0),
    )
    assert prices(result) == [100, 90]
    s = result.summary
    assert (s["max_drawdown_pct"], s["max_drawdown_amount"]) == ("3.00", "300")
    assert (s["final_equity"], s["return_pct"]) == ("9900", "-1.00")


class WithStop(Script):
    """Buys at bar 0's close and protects the 10 LTC with a stop at 80."""

    def on_fill(self, execution: dict[str, Any]) -> None:
        if execution["side"] == "BUY":
            self.api.create_order(
                side="SELL", market="LTCUSD", type="STOP_MARKET", stop_price="80", base_amount="10"
            )


def test_a_stop_met_on_the_way_to_the_low_is_sold_at_the_low(tmp_path: Path) -> None:
    # bar 1 (100, 100, 60, 90) walks from its high to its low through the stop, which
    # sells the 10 LTC at 80 on the way: 9,000 + 800 = 9,800 USD is what is held at the
    # low (the low valued with the 10 LTC would be 9,600: a drawdown the stop prevented)
    result = backtest(
        tmp_path,
        [(100, 100, 100, 100), (100, 100, 60, 90), (90, 90, 90, 90)],
        WithStop({0: "BUY"}),
    )
    assert prices(result) == [100, 80]
    s = result.summary
    assert (s["max_drawdown_pct"], s["max_drawdown_amount"]) == ("2.00", "200")
