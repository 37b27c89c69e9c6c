"""Round trips: a backtest's fills paired into trades, as a quant reads a run.

Spot and long only (a sell needs holdings). A trade is a position: it opens when the
holding the run bought leaves zero and closes when it returns to zero, whatever the
orders in between (an entry made of one order and an exit of two, as the market order's
cap splits a large one, is one trade; a buy while it is open adds to it). Its fees are
every commission of its fills (a commission in the base asset valued at its fill's
price). Base the run held before it bought (a starting balance, a deposit) is no part of
a trade: a sell beyond the position closes nothing."""

from __future__ import annotations

from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, NamedTuple

from sandex.engine.backtest.price_files import parse_timestamp
from sandex.engine.kernel.money import MARKETS

if TYPE_CHECKING:
    from sandex.engine.backtest.result import BacktestResult, Fill

ZERO = Decimal(0)
HUNDRED = Decimal(100)
# Significant digits of the report's arithmetic, the same whoever calls (the engine's
# thread runs with more than Python's default 28).
PRECISION = 40


class Trade(NamedTuple):
    """One closed round trip: amounts in the base asset, money in the quote asset."""

    market: str
    entry_time: int  # us since the epoch: the position's first fill
    exit_time: int  # us: the fill that brought it back to zero
    amount: Decimal  # bought in all (and sold)
    entry_price: Decimal  # the buys' average price (their notional / amount)
    exit_price: Decimal  # the sells' average price
    pnl: Decimal  # exit notional - entry notional - fees
    return_pct: Decimal  # pnl / entry notional x 100
    fees: Decimal


class _Position:
    """An open position: what is held of it, and its buys' and sells' sums so far."""

    __slots__ = ("bought", "cost", "entry_time", "fees", "held", "proceeds")

    def __init__(self, entry_time: int) -> None:
        self.entry_time = entry_time
        self.held = ZERO
        self.bought = ZERO
        self.cost = ZERO
        self.proceeds = ZERO
        self.fees = ZERO


def round_trips(result: BacktestResult) -> list[Trade]:
    """The run's closed trades, in exit order."""
    return pair(result.fills)[0]


def pair(fills: list[Fill]) -> tuple[list[Trade], int]:
    """The closed trades (in exit order) and how many positions are still open at the end."""
    with localcontext(prec=PRECISION):
        return _pair(fills)


def _pair(fills: list[Fill]) -> tuple[list[Trade], int]:
    positions: dict[str, _Position] = {}
    closed: list[Trade] = []
    for f in fills:
        v = f.view
        market = v["market"]
        amount = Decimal(v["amount"])
        notional = Decimal(v["gross_trade_amount"])
        fee = Decimal(v["commission"])
        if v["commission_asset"] == MARKETS[market].base:
            fee *= Decimal(v["price"])
        at = parse_timestamp(v["executed_at"])
        position = positions.get(market)
        if v["side"] == "BUY":
            if position is None:
                position = positions[market] = _Position(at)
            position.held += amount
            position.bought += amount
            position.cost += notional
            position.fees += fee
            continue
        if position is None:
            continue  # base held before any buy: no trade's
        part = min(amount, position.held)
        if part < amount:  # the rest of the sell is base held before: its share only
            notional = notional * part / amount
            fee = fee * part / amount
        position.held -= part
        position.proceeds += notional
        position.fees += fee
        if position.held == 0:
            del positions[market]
            closed.append(_closed(market, position, at))
    return closed, len(positions)


def _closed(market: str, p: _Position, exit_time: int) -> Trade:
    pnl = p.proceeds - p.cost - p.fees
    return Trade(
        market=market,
        entry_time=p.entry_time,
        exit_time=exit_time,
        amount=p.bought,
        entry_price=p.cost / p.bought,
        exit_price=p.proceeds / p.bought,
        pnl=pnl,
        return_pct=pnl / p.cost * HUNDRED,
        fees=p.fees,
    )


__all__ = ["Trade", "pair", "round_trips"]
