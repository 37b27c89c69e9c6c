"""A backtest's round trips: each closing fill matched first in, first out against the
open lots of its market, so the charts can join an entry to its exit.

A minimal version of the agreed interface (issue 17); the statistics' own version
replaces it."""

from __future__ import annotations

from collections import deque
from decimal import Decimal
from typing import TYPE_CHECKING, NamedTuple

from engine.backtest.price_files import parse_timestamp

if TYPE_CHECKING:
    from engine.backtest.result import BacktestResult

ZERO = Decimal(0)


class Trade(NamedTuple):
    """A closed round trip; amount is positive for a long, negative for a short."""

    market: str
    entry_time: int
    exit_time: int
    amount: Decimal
    entry_price: Decimal
    exit_price: Decimal
    pnl: Decimal
    return_pct: Decimal
    fees: Decimal


class _Lot(NamedTuple):
    time: int
    amount: Decimal  # signed: buys positive
    price: Decimal
    fee_per_unit: Decimal


def round_trips(result: BacktestResult) -> list[Trade]:
    """Closed trades only, in exit order; fees (quote currency) shared pro rata."""
    lots: dict[str, deque[_Lot]] = {}
    trades: list[Trade] = []
    for fill in result.fills:
        v = fill.view
        market = v["market"]
        at = parse_timestamp(v["executed_at"])
        price = Decimal(v["price"])
        left = Decimal(v["amount"]) * (1 if v["side"] == "BUY" else -1)
        fee_per_unit = Decimal(v["commission"]) / abs(left) if left else ZERO
        book = lots.setdefault(market, deque())
        while left and book and (book[0].amount > 0) != (left > 0):
            lot = book[0]
            size = min(abs(lot.amount), abs(left))
            signed = size if lot.amount > 0 else -size
            fees = (lot.fee_per_unit + fee_per_unit) * size
            pnl = (price - lot.price) * signed - fees
            notional = lot.price * size
            trades.append(
                Trade(
                    market,
                    lot.time,
                    at,
                    signed,
                    lot.price,
                    price,
                    pnl,
                    pnl / notional * 100 if notional else ZERO,
                    fees,
                )
            )
            if size == abs(lot.amount):
                book.popleft()
            else:
                book[0] = lot._replace(amount=lot.amount - signed)
            left += signed
        if left:
            book.append(_Lot(at, left, price, fee_per_unit))
    return trades


__all__ = ["Trade", "round_trips"]
