"""Round trips paired from fills by hand: a buy order's fills open one trade, sells
close trades first in first out, a partial close splits a trade, fees pro rata."""

from __future__ import annotations

from decimal import Decimal

from engine.backtest.price_files import from_micros
from engine.backtest.result import Fill
from engine.backtest.trades import Trade, pair
from engine.kernel.clock import format_time

T0 = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z in us
HOUR = 3_600_000_000
D = Decimal


def fill(
    order: str, side: str, hour: int, amount: str, price: str, fee: str, asset: str = "USD"
) -> Fill:
    """One BTCUSD execution as the runner records it."""
    return Fill(
        view={
            "execution_id": f"{order}-{hour}-{amount}-{price}",
            "executed_at": format_time(from_micros(T0 + hour * HOUR)),
            "order_id": order,
            "market": "BTCUSD",
            "side": side,
            "amount": amount,
            "price": price,
            "gross_trade_amount": str(D(amount) * D(price)),
            "commission": fee,
            "commission_asset": asset,
        },
        order_type="MARKET",
        reference=D(price),
        liquidity="TAKER",
    )


def test_an_order_taking_two_levels_is_one_trade_at_its_average_price() -> None:
    trades, still_open = pair(
        [
            fill("b", "BUY", 0, "1", "100", "0.1"),
            fill("b", "BUY", 0, "1", "102", "0.102"),
            fill("s", "SELL", 5, "2", "110", "0.22"),
        ]
    )
    # entry notional 100 + 102 = 202 for 2 (101 each); exit 220 (110 each)
    # fees 0.1 + 0.102 + 0.22 = 0.422; pnl 220 - 202 - 0.422 = 17.578
    # return 17.578 / 202 x 100 = 8.70198019801980198019801980198... (40 digits kept)
    assert still_open == 0
    assert len(trades) == 1
    t = trades[0]
    assert (t.market, t.entry_time, t.exit_time) == ("BTCUSD", T0, T0 + 5 * HOUR)
    assert (t.amount, t.entry_price, t.exit_price) == (D(2), D(101), D(110))
    assert (t.pnl, t.fees) == (D("17.578"), D("0.422"))
    assert t.return_pct == D("8.701980198019801980198019801980198019802")


def test_sells_close_first_in_first_out_and_a_partial_close_splits_a_trade() -> None:
    trades, still_open = pair(
        [
            fill("a", "BUY", 1, "1", "100", "1"),
            fill("b", "BUY", 2, "3", "200", "3"),
            fill("s1", "SELL", 3, "2", "300", "2"),
            fill("s2", "SELL", 4, "2", "150", "0"),
        ]
    )
    assert still_open == 0
    assert trades == [
        # a, whole: proceeds 600 x 1/2 = 300, exit fee 2 x 1/2 = 1: 300 - 100 - 1 - 1 = 198
        Trade("BTCUSD", T0 + HOUR, T0 + 3 * HOUR, D(1), D(100), D(300), D(198), D(198), D(2)),
        # 1 of b's 3: cost 600 x 1/3 = 200, entry fee 3 x 1/3 = 1; the sell's rest: 300, 1
        # pnl 300 - 200 - 1 - 1 = 98, return 98 / 200 = 49%
        Trade("BTCUSD", T0 + 2 * HOUR, T0 + 3 * HOUR, D(1), D(200), D(300), D(98), D(49), D(2)),
        # b's other 2: cost 400, entry fee 2; proceeds 300, no fee: 300 - 400 - 2 = -102
        # return -102 / 400 = -25.5%
        Trade(
            "BTCUSD", T0 + 2 * HOUR, T0 + 4 * HOUR, D(2), D(200), D(150), D(-102), D("-25.5"), D(2)
        ),
    ]


def test_a_split_trades_later_fills_open_a_new_trade_and_open_trades_are_counted() -> None:
    trades, still_open = pair(
        [
            fill("b", "BUY", 1, "2", "100", "0"),
            fill("s", "SELL", 2, "1", "110", "0"),
            fill("b", "BUY", 3, "1", "90", "0"),  # the resting order fills again
            fill("c", "BUY", 4, "1", "95", "0"),
            fill("c", "BUY", 5, "1", "97", "0"),  # same order, later: the same trade
        ]
    )
    # open: b's remaining 1, b's new 1, c's 2 (one trade of two fills)
    assert [(t.amount, t.pnl) for t in trades] == [(D(1), D(10))]
    assert still_open == 3


def test_a_sell_of_base_never_bought_closes_nothing() -> None:
    trades, still_open = pair(
        [
            fill("s", "SELL", 1, "1", "100", "0"),  # base from a deposit
            fill("b", "BUY", 2, "1", "100", "0"),
            fill("t", "SELL", 3, "3", "120", "0.3"),  # 1 closes the trade, 2 were held before
        ]
    )
    # the closed part is 1 of the sell's 3: proceeds 360 x 1/3 = 120, fee 0.3 x 1/3 = 0.1
    assert [(t.amount, t.exit_price, t.pnl) for t in trades] == [(D(1), D(120), D("19.9"))]
    assert still_open == 0


def test_a_commission_in_the_base_asset_is_valued_at_the_fill_price() -> None:
    trades, _ = pair(
        [
            fill("b", "BUY", 0, "1", "100", "0.01", asset="BTC"),  # 0.01 BTC x 100 = 1 USD
            fill("s", "SELL", 1, "1", "110", "1.1"),
        ]
    )
    assert [(t.fees, t.pnl) for t in trades] == [(D("2.1"), D("7.9"))]  # 110 - 100 - 2.1
