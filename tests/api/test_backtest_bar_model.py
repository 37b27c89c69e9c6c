"""The bar model (docs/backtests.md, "The bar model"), with hand-computed answers: a
strategy sees a bar only once it is complete, stops fill at their stop (or the open on a
gap), limits at their price (or the open on a gap), never outside the bar's range plus
the spread; and a probe that tries to trade inside a bar makes nothing.

LTCUSD throughout: its tick is 0.01, so prices read as they are written."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

import pytest

from sandex.engine.backtest import Api, BacktestResult, Strategy, run
from sandex.engine.kernel.clock import EPOCH

T0 = 1_704_067_200  # 2024-01-01T00:00:00Z
HOUR = 3600
CHECKED = {"assert_invariants": True}
CENT = Decimal("0.01")


def bars_csv(tmp_path: Path, bars: list[tuple[Any, ...]], name: str = "bars.csv") -> Path:
    """Hourly bars (open, high, low, close) from T0."""
    path = tmp_path / name
    rows = "".join(f"{T0 + k * HOUR},{o},{h},{lo},{c}\n" for k, (o, h, lo, c) in enumerate(bars))
    path.write_text("timestamp,open,high,low,close\n" + rows)
    return path


class OnStart(Strategy):
    """Places one order at the start and keeps every fill."""

    def __init__(self, **order: Any) -> None:
        self.order = order
        self.fills: list[dict[str, Any]] = []

    def on_start(self, api: Api) -> None:
        api.create_order(market="LTCUSD", **self.order)

    def on_fill(self, execution: dict[str, Any]) -> None:
        self.fills.append(execution)


def one_fill(tmp_path: Path, bars: list[tuple[Any, ...]], spread: str, **order: Any) -> Any:
    strategy = OnStart(**order)
    result = run(
        bars_csv(tmp_path, bars),
        "LTCUSD",
        strategy=strategy,
        deposits={"USD": "100000", "LTC": "10"},
        spread_bps=spread,
        maker_fee="0",
        taker_fee="0",
        settings=CHECKED,
        bar_seconds=HOUR,
    )
    assert len(result.fills) == 1, result.fills
    fill = result.fills[0]
    return Decimal(fill.view["price"]), fill.reference, fill.view["executed_at"]


def at(seconds: int, micros: int = 0) -> str:
    t = EPOCH + timedelta(seconds=T0 + seconds, microseconds=micros)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


STOP = {"side": "SELL", "type": "STOP_MARKET", "stop_price": "95", "base_amount": "1"}


@pytest.mark.parametrize(("spread", "price"), [("0", "95"), ("10", "94.95")])
def test_a_stop_fills_at_its_stop_on_the_way_down(tmp_path: Path, spread: str, price: str) -> None:
    # 100 -> 80 with no gap: the walk from the open to the low meets the stop at 95. At
    # 10 bps the bid is half the spread under it: 95 x 0.9995 = 94.9525, floored 94.95.
    # (The old path jumped from the open to the low and filled at 80.)
    got = one_fill(tmp_path, [(100, 100, 80, 85)], spread, **STOP)
    assert got == (Decimal(price), Decimal("95.00"), at(HOUR, -1))


@pytest.mark.parametrize(("spread", "price"), [("0", "90"), ("10", "89.95")])
def test_a_stop_the_open_gaps_through_fills_at_the_open(
    tmp_path: Path, spread: str, price: str
) -> None:
    # The first bar closes at 100; the next opens at 90, under the stop: the stop fills
    # at the open's bid, at the open's time (90 x 0.9995 = 89.955, floored 89.95).
    got = one_fill(tmp_path, [(100, 101, 99, 100), (90, 92, 88, 91)], spread, **STOP)
    assert got == (Decimal(price), Decimal("90.00"), at(HOUR))


BUY_LIMIT = {"side": "BUY", "type": "LIMIT", "price": "100", "base_amount": "1"}


@pytest.mark.parametrize(("spread", "price"), [("0", "90"), ("10", "90.05")])
def test_a_buy_limit_the_open_gaps_through_fills_at_the_open(
    tmp_path: Path, spread: str, price: str
) -> None:
    # The first bar stays above 100 (low 105); the next opens at 90: the resting buy at
    # 100 fills at the open's ask, the better price (90 x 1.0005 = 90.045, ceiled 90.05),
    # never at 100, which that bar never traded.
    got = one_fill(tmp_path, [(110, 112, 105, 108), (90, 95, 88, 93)], spread, **BUY_LIMIT)
    assert got == (Decimal(price), Decimal("90.00"), at(HOUR))


@pytest.mark.parametrize(("spread", "reference"), [("0", "100"), ("10", "99.95")])
def test_a_buy_limit_the_path_reaches_fills_at_its_price(
    tmp_path: Path, spread: str, reference: str
) -> None:
    # A down bar walks 110 -> 112 -> 95 -> 100 and meets the buy at 100 on the way: it
    # trades at its own price. At 10 bps the ask reaches 100 first at the reference
    # 99.95 (9995 ticks x 1.0005 = 9999.9975, ceiled 10000; 9996 x 1.0005 > 10001).
    got = one_fill(tmp_path, [(110, 112, 95, 100)], spread, **BUY_LIMIT)
    assert got == (Decimal("100"), Decimal(reference), at(HOUR, -1))


def test_a_sell_limit_the_open_gaps_over_fills_at_the_open(tmp_path: Path) -> None:
    sell = {"side": "SELL", "type": "LIMIT", "price": "105", "base_amount": "1"}
    got = one_fill(tmp_path, [(100, 101, 99, 100), (110, 112, 108, 111)], "0", **sell)
    assert got == (Decimal("110"), Decimal("110.00"), at(HOUR))


class Peeker(Strategy):
    """Wakes at fixed offsets inside every bar and records the price it is shown; the
    `trade` variant is the probe of the issue: at the old second point it buys when the
    price is under the open it saw, and sells at the old third point."""

    def __init__(self, bars: int, trade: str = "") -> None:
        self.bars = bars
        self.trade = trade
        self.shown: list[tuple[datetime, str, Decimal]] = []
        self.open: Decimal | None = None
        self.holding = False

    def on_start(self, api: Api) -> None:
        for k in range(self.bars):
            start = EPOCH + timedelta(seconds=T0 + k * HOUR)
            for name, offset in (("open", 1), ("second", 900_000_001), ("third", 1_800_000_001)):
                api.set_timer(name, at=start + timedelta(microseconds=offset))

    def on_timer(self, name: str, time: datetime) -> None:
        price = self.api.price("LTCUSD")
        self.shown.append((time, name, price))
        if name == "open":
            self.open = price
        elif name == "second" and self.open is not None:
            if self.trade == "always" or (self.trade == "dip" and price < self.open):
                self.api.create_order(
                    market="LTCUSD", side="BUY", type="MARKET", quote_amount="1000"
                )
                self.holding = True
        elif name == "third" and self.holding:
            held = self.api.get_profile_balance("LTC")["available"]
            self.api.create_order(market="LTCUSD", side="SELL", type="MARKET", base_amount=held)
            self.holding = False

    def on_bar(self, market: str, bar: Any) -> None:
        self.shown.append((bar.time, "bar", self.api.price(market)))


def random_walk(seed: int, n: int) -> list[tuple[Decimal, Decimal, Decimal, Decimal]]:
    """Bars of a seeded random walk, each opening at the close before (no gaps)."""
    rng = random.Random(seed)
    price = Decimal(100)
    bars = []
    for _ in range(n):
        path = [price]
        for _ in range(6):
            path.append(max(Decimal(1), path[-1] + Decimal(rng.randint(-100, 100)) * CENT))
        bars.append((path[0], max(path), min(path), path[-1]))
        price = path[-1]
    return bars


def probe(tmp_path: Path, trade: str, fee: str) -> tuple[BacktestResult, Peeker]:
    bars = random_walk(17, 200)
    strategy = Peeker(len(bars), trade)
    result = run(
        bars_csv(tmp_path, bars),
        "LTCUSD",
        strategy=strategy,
        deposits={"USD": "100000"},
        spread_bps="0",
        maker_fee=fee,
        taker_fee=fee,
        settings=CHECKED,
    )
    return result, strategy


def test_a_strategy_is_shown_a_bar_only_once_it_is_complete(tmp_path: Path) -> None:
    bars = random_walk(3, 50)
    strategy = Peeker(len(bars))
    run(bars_csv(tmp_path, bars), "LTCUSD", strategy=strategy, settings=CHECKED)
    assert len(strategy.shown) == 4 * len(bars)
    for time, name, price in strategy.shown:
        k = (int((time - EPOCH).total_seconds()) - T0) // HOUR
        o, _, _, c = bars[k]
        # Inside the bar only its open has happened; its low, high and close are known
        # at its last instant, when on_bar tells them all at once.
        assert price == (c if name == "bar" else o), (time, name)


def test_the_lookahead_probe_makes_nothing_on_a_random_walk(tmp_path: Path) -> None:
    # The old path showed the low (or high) a quarter into the bar, and the probe made
    # money on every up bar; shown only the open inside a bar, it never sees a dip.
    result, strategy = probe(tmp_path, "dip", "0")
    assert not result.fills
    assert {asset: sum(kinds.values()) for asset, kinds in result.balances.items()} == {
        "USD": Decimal(100000)
    }


def test_trading_inside_a_bar_makes_exactly_minus_the_fees(tmp_path: Path) -> None:
    # Bought at the second wake and sold at the third, both at the open: each round
    # trip's profit is zero and the fees are all that is lost.
    result, _ = probe(tmp_path, "always", "0.001")
    assert len(result.fills) == 400
    fees = sum(Decimal(f.view["commission"]) for f in result.fills)
    assert fees > 0
    held = {asset: sum(kinds.values()) for asset, kinds in result.balances.items()}
    assert held["LTC"] == 0
    assert held["USD"] == Decimal(100000) - fees


class Grid(Strategy):
    """At every bar's close: resting buys and sells, and a stop, a few cents to a few
    dollars away; what stays unfilled is cancelled at the next close."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.open: list[str] = []

    def on_bar(self, market: str, bar: Any) -> None:
        api = self.api
        for order_id in self.open:
            order = api.get_order(order_id)
            if order["status"] in ("OPEN", "SUBMITTED"):
                api.cancel_order(order_id)
        self.open = []
        close = bar.close
        for _ in range(3):
            away = Decimal(self.rng.randint(1, 400)) * CENT
            buy = api.create_order(
                market=market, side="BUY", type="LIMIT", price=str(close - away), base_amount="1"
            )
            sell = api.create_order(
                market=market, side="SELL", type="LIMIT", price=str(close + away), base_amount="1"
            )
            self.open += [buy["id"], sell["id"]]
        stop = close - Decimal(self.rng.randint(1, 300)) * CENT
        made = api.create_order(
            market=market, side="SELL", type="STOP_MARKET", stop_price=str(stop), base_amount="1"
        )
        self.open.append(made["id"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_fill_is_outside_its_bars_range_plus_the_spread(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    bars = []
    price = Decimal(100)
    for bar in random_walk(seed, 120):
        gap = Decimal(rng.choice([0, 0, 0, rng.randint(-300, 300)])) * CENT  # some gaps
        o, h, lo, c = (v - bars[-1][3] + price + gap if bars else v for v in bar)
        bars.append((o, h, lo, c))
        price = c
    half = Decimal(10) / 20000
    result = run(
        bars_csv(tmp_path, bars),
        "LTCUSD",
        strategy=Grid(seed),
        deposits={"USD": "1000000", "LTC": "1000"},
        spread_bps="10",
        settings=CHECKED,
    )
    assert len(result.fills) > 50
    for fill in result.fills:
        t = datetime.fromisoformat(fill.view["executed_at"].replace("Z", "+00:00"))
        k = (int((t - EPOCH).total_seconds()) - T0) // HOUR
        _, h, lo, _ = bars[k]
        floor = (lo * (1 - half)).quantize(CENT, rounding=ROUND_FLOOR)
        ceiling = (h * (1 + half)).quantize(CENT, rounding=ROUND_CEILING)
        assert floor <= Decimal(fill.view["price"]) <= ceiling, (fill.view, bars[k])
        assert lo <= fill.reference <= h, (fill.view, bars[k])


def dust_run(tmp_path: Path, levels: int, notional: str, quote: str) -> str:
    path = tmp_path / f"p{levels}{notional}{quote}.csv"
    path.write_text(f"timestamp,price\n{T0},99.99\n{T0 + 60},99.99\n")

    class Buy(Strategy):
        status = ""

        def on_start(self, api: Api) -> None:
            made = api.create_order(market="LTCUSD", side="BUY", type="MARKET", quote_amount=quote)
            self.status = api.get_order(made["id"])["status"]

    strategy = Buy()
    run(
        path,
        "LTCUSD",
        strategy=strategy,
        deposits={"USD": "100000"},
        spread_bps="0",
        levels=levels,
        level_notional=notional,
        settings=CHECKED,
    )
    return strategy.status


@pytest.mark.parametrize("levels", [1, 2])
def test_a_market_buy_that_spends_all_but_dust_is_filled(tmp_path: Path, levels: int) -> None:
    # 1000 USD at 99.99 buys floor(1000 / 99.99, 8 places) = 10.00100010 LTC for
    # 999.99999999 USD: the 0.00000001 USD left is under the 0.01 minimum market buy, so
    # the order is FILLED, whether the ladder has one level or two (it was CANCELLED with
    # one, FILLED with two).
    assert dust_run(tmp_path, levels, "1000000", "1000") == "FILLED"


@pytest.mark.parametrize("levels", [1, 2])
def test_a_market_buy_the_ladder_cannot_serve_is_cancelled(tmp_path: Path, levels: int) -> None:
    # Levels of 300 USD each: 1000 USD cannot be spent; the remainder is an IOC's.
    assert dust_run(tmp_path, levels, "300", "1000") == "CANCELLED"
