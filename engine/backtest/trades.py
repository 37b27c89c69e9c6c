"""Round trips: a backtest's fills paired into trades, as a quant reads a run.

Spot and long only (a sell needs holdings). Each buy order's fills open one trade;
sells close open trades first in, first out; a sell that closes part of a trade splits
it (the closed part is a trade, the rest stays open), as backtesting.py does. A trade's
fees are its entry's commission pro rata to the part closed plus its exit's commission
pro rata. Base the run held before it bought (a starting balance, a deposit) closes no
trade: it was never entered."""

from __future__ import annotations

from collections import deque
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, NamedTuple

from engine.backtest.price_files import parse_timestamp
from engine.kernel.money import MARKETS

if TYPE_CHECKING:
    from engine.backtest.result import BacktestResult, Fill

ZERO = Decimal(0)
HUNDRED = Decimal(100)
# Significant digits of the report's arithmetic, the same whoever calls (the engine's
# thread runs with more than Python's default 28).
PRECISION = 40


class Trade(NamedTuple):
    """One closed round trip: amounts in the base asset, money in the quote asset."""

    market: str
    entry_time: int  # us since the epoch: the entry order's first fill
    exit_time: int  # us: the fill that closed it
    amount: Decimal
    entry_price: Decimal  # the entry's average price (its notional / amount)
    exit_price: Decimal  # the exit's average price
    pnl: Decimal  # exit notional - entry notional - fees
    return_pct: Decimal  # pnl / entry notional x 100
    fees: Decimal


class _Open:
    """An open trade: what is left of it, with its cost and fees for that part."""

    __slots__ = ("amount", "cost", "entry_time", "fees", "order_id", "split")

    def __init__(self, order_id: str, entry_time: int) -> None:
        self.order_id = order_id
        self.entry_time = entry_time
        self.amount = ZERO
        self.cost = ZERO
        self.fees = ZERO
        self.split = False  # part of it was closed: later fills of its order open anew


class _Execution(NamedTuple):
    """One order's fills at one instant, summed (a market order takes several levels)."""

    market: str
    order_id: str
    side: str
    time: int
    amount: Decimal
    notional: Decimal
    fees: Decimal  # in the quote asset


def round_trips(result: BacktestResult) -> list[Trade]:
    """The run's closed trades, in exit order."""
    return pair(result.fills)[0]


def pair(fills: list[Fill]) -> tuple[list[Trade], int]:
    """The closed trades (in exit order) and how many trades are still open at the end."""
    with localcontext(prec=PRECISION):
        return _pair(fills)


def _pair(fills: list[Fill]) -> tuple[list[Trade], int]:
    books: dict[str, deque[_Open]] = {}
    by_order: dict[str, _Open] = {}
    closed: list[Trade] = []
    for e in _executions(fills):
        book = books.setdefault(e.market, deque())
        if e.side == "BUY":
            trade = by_order.get(e.order_id)
            if trade is None or trade.split or trade.amount == 0:
                trade = by_order[e.order_id] = _Open(e.order_id, e.time)
                book.append(trade)
            trade.amount += e.amount
            trade.cost += e.notional
            trade.fees += e.fees
            continue
        _close(book, e, closed)
    return closed, sum(len(book) for book in books.values())


def _close(book: deque[_Open], e: _Execution, closed: list[Trade]) -> None:
    """Closes `e.amount` of the open trades, oldest first; each piece takes its share
    of the exit's notional and fees (the last piece the rest, so the parts add up)."""
    left, notional, fees = e.amount, e.notional, e.fees
    while left > 0 and book:
        trade = book[0]
        part = min(left, trade.amount)
        if part == trade.amount:
            cost, entry_fees = trade.cost, trade.fees
            book.popleft()
        else:
            cost = trade.cost * part / trade.amount
            entry_fees = trade.fees * part / trade.amount
            trade.split = True
        trade.amount -= part
        trade.cost -= cost
        trade.fees -= entry_fees
        if part == left:
            proceeds, exit_fees = notional, fees
        else:
            proceeds = e.notional * part / e.amount
            exit_fees = e.fees * part / e.amount
        left -= part
        notional -= proceeds
        fees -= exit_fees
        pnl = proceeds - cost - entry_fees - exit_fees
        closed.append(
            Trade(
                market=e.market,
                entry_time=trade.entry_time,
                exit_time=e.time,
                amount=part,
                entry_price=cost / part,
                exit_price=proceeds / part,
                pnl=pnl,
                return_pct=pnl / cost * HUNDRED,
                fees=entry_fees + exit_fees,
            )
        )


def _executions(fills: list[Fill]) -> list[_Execution]:
    """Fills summed per order and instant, in the order they happened."""
    out: list[_Execution] = []
    for f in fills:
        v = f.view
        spec = MARKETS[v["market"]]
        amount = Decimal(v["amount"])
        notional = Decimal(v["gross_trade_amount"])
        fee = Decimal(v["commission"])
        if v["commission_asset"] == spec.base:
            fee *= Decimal(v["price"])
        at = parse_timestamp(v["executed_at"])
        last = out[-1] if out else None
        if last is not None and last.order_id == v["order_id"] and last.time == at:
            out[-1] = last._replace(
                amount=last.amount + amount,
                notional=last.notional + notional,
                fees=last.fees + fee,
            )
        else:
            out.append(_Execution(v["market"], v["order_id"], v["side"], at, amount, notional, fee))
    return out


__all__ = ["Trade", "pair", "round_trips"]
