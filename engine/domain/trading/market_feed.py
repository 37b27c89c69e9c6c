"""What the WebSocket market data feeds show, read from the writer's state: a market's
book as `GET /v2/markets/{market}/order-book` shows it, its last trade, and the trades
of a group of events, in the service's message shapes (docs/market-data.md).

Pure reads of the state (the runtime's feed calls them on the writer thread, between
groups): the same `merged_levels` as the order-book view, so the two cannot differ."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sandex.engine.config.settings import Settings
from sandex.engine.domain.trading.amount_texts import ticks_text, units_text
from sandex.engine.domain.trading.book import BUY, SELL
from sandex.engine.domain.trading.market_views import match_number, merged_levels
from sandex.engine.domain.trading.trading_state import Trading, trading_for
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.money import MARKETS
from sandex.engine.kernel.state import State

# One side of a book: price text -> amount text, best price first.
Levels = dict[str, str]

FEED_MARKETS: tuple[str, ...] = tuple(MARKETS)


def _side(tr: Trading, market: str, step: int, side: int) -> Levels:
    mk = tr.markets[market]
    return {ticks_text(mk, t): units_text(u) for t, u in merged_levels(tr, mk, step, side)}


def books_now(
    state: State, settings: Settings, seed: int, now: datetime, markets: Iterable[str]
) -> dict[str, tuple[Levels, Levels]]:
    """(bids, asks) of each of `markets` at `now`: the order-book view's levels."""
    tr = trading_for(state, settings, seed)
    assert tr.cfg is not None
    step = tr.cfg.step_of(now)
    return {m: (_side(tr, m, step, BUY), _side(tr, m, step, SELL)) for m in markets}


def step_at(state: State, settings: Settings, seed: int, now: datetime) -> int:
    """The market step of `now`: the house's ladders move only when it changes."""
    tr = trading_for(state, settings, seed)
    assert tr.cfg is not None
    return tr.cfg.step_of(now)


def last_trade(state: State, settings: Settings, seed: int, market: str) -> dict[str, Any] | None:
    """The market's last trade as an execution-feed message, None before its first."""
    tr = trading_for(state, settings, seed)
    mk = tr.markets[market]
    if not mk.recent:
        return None
    trade, ticks, units, at = mk.recent[-1]
    return execution_message(market, ticks_text(mk, ticks), units_text(units), at, trade)


def trades_in(events: Iterable[Event], markets: frozenset[str]) -> list[dict[str, Any]]:
    """Each trade of `events` in one of `markets`, in log order, as a feed message."""
    out = []
    for e in events:
        if e.type == "TradeExecuted" and e.data["market"] in markets:
            d = e.data
            out.append(
                execution_message(d["market"], d["price"], d["amount"], e.occurred_at, d["trade"])
            )
    return out


def execution_message(
    market: str, price: str, amount: str, executed_at: str, trade: int
) -> dict[str, Any]:
    """One execution as the service's execution data feed sends it."""
    return {
        "market": market,
        "price": price,
        "amount": amount,
        "executed_at": executed_at,
        "match_number": match_number(trade),
    }


__all__ = [
    "FEED_MARKETS",
    "Levels",
    "books_now",
    "execution_message",
    "last_trade",
    "step_at",
    "trades_in",
]
