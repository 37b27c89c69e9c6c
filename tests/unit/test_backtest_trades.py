"""Round trips paired from fills by hand: a trade is a position, from the holding
leaving zero to its return to zero, however many orders enter and leave it."""

from __future__ import annotations

from decimal import Decimal

from sandex.engine.backtest.price_files import from_micros
from sandex.engine.backtest.result import Fill
from sandex.engine.backtest.trades import Trade, pair
from sandex.engine.kernel.clock import format_time

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


def test_buys_and_sells_while_a_position_is_open_are_one_trade() -> None:
    trades, still_open = pair(
        [
            fill("a", "BUY", 1, "1", "100", "1"),
            fill("b", "BUY", 2, "3", "200", "3"),
            fill("s1", "SELL", 3, "2", "300", "2"),
            fill("s2", "SELL", 4, "2", "150", "0"),
        ]
    )
    # the holding leaves zero at hour 1 and returns to it at hour 4: one position
    # bought 4 for 100 + 600 = 700 (175 each); sold 4 for 600 + 300 = 900 (225 each)
    # fees 1 + 3 + 2 + 0 = 6; pnl 900 - 700 - 6 = 194; return 194 / 700 = 27.714285...%
    assert still_open == 0
    assert trades == [
        Trade(
            "BTCUSD",
            T0 + HOUR,
            T0 + 4 * HOUR,
            D(4),
            D(175),
            D(225),
            D(194),
            D("27.71428571428571428571428571428571428571"),
            D(6),
        )
    ]


def test_a_position_is_open_until_the_holding_returns_to_zero() -> None:
    fills = [
        fill("b", "BUY", 1, "2", "100", "0"),
        fill("s", "SELL", 2, "1", "110", "0"),  # a partial exit: part of the trade
        fill("b", "BUY", 3, "1", "90", "0"),  # the resting order fills again
        fill("c", "BUY", 4, "1", "95", "0"),
        fill("c", "BUY", 5, "1", "97", "0"),
    ]
    # held 2, 1, 2, 3, 4: never back at zero, so one open trade and none closed
    assert pair(fills) == ([], 1)
    trades, still_open = pair([*fills, fill("t", "SELL", 6, "4", "100", "0")])
    # bought 5 for 200 + 90 + 95 + 97 = 482; sold 5 for 110 + 400 = 510: pnl 28
    assert [(t.amount, t.pnl, t.entry_time) for t in trades] == [(D(5), D(28), T0 + HOUR)]
    assert still_open == 0


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


def test_one_entry_order_and_two_exit_orders_are_one_trade() -> None:
    # The market order's cap splits a large exit into two orders: still one position.
    trades, still_open = pair(
        [
            fill("a", "BUY", 0, "2", "100", "0.2"),
            fill("s1", "SELL", 1, "1", "90", "0.09"),
            fill("s2", "SELL", 2, "1", "120", "0.12"),
        ]
    )
    # bought 2 for 200; sold 1 for 90 and 1 for 120: 210, 105 each
    # fees 0.2 + 0.09 + 0.12 = 0.41; pnl 210 - 200 - 0.41 = 9.59; return 9.59 / 200 = 4.795%
    assert still_open == 0
    assert trades == [
        Trade("BTCUSD", T0, T0 + 2 * HOUR, D(2), D(100), D(105), D("9.59"), D("4.795"), D("0.41"))
    ]
