"""Market data as the API shows it: the order book (real orders and the house's ladder
merged), tickers with their statistics, recent trades and the price. Read by the
writer (`ReadMarket`), so that it is exactly "now"."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sandex.engine.domain.trading.amount_texts import EIGHT, ticks_text, units_text, vwap_text
from sandex.engine.domain.trading.book import BUY, SELL
from sandex.engine.domain.trading.market import Market
from sandex.engine.domain.trading.trading_state import Trading, live_trading, market_config
from sandex.engine.kernel.clock import format_time
from sandex.engine.kernel.commands import ReadMarket
from sandex.engine.kernel.errors import Invalid, NotFound
from sandex.engine.kernel.money import MARKETS
from sandex.engine.kernel.state import Ctx

# The markets the reference's pricing operations know (its PricePriceMarket enum).
TICKER_MARKETS = tuple(m for m in MARKETS if m.endswith("USD"))
_BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def read_market(ctx: Ctx, cmd: ReadMarket) -> dict[str, Any]:
    """Decider of ReadMarket: emits nothing, answers the view asked for."""
    tr = live_trading(ctx)
    step = market_config(tr).step_of(ctx.now)
    if cmd.view == "tickers":
        return {"tickers": [_ticker(ctx, tr, tr.markets[name], step) for name in TICKER_MARKETS]}
    mk = tr.markets.get(cmd.market)
    if mk is None:
        raise NotFound(f"market not found: {cmd.market}")
    if cmd.view == "book":
        return _book_view(tr, mk, step)
    if cmd.view == "ticker":
        return _ticker(ctx, tr, mk, step)
    if cmd.view == "recent":
        return {
            "items": [
                {
                    "match_number": match_number(match),
                    "price": ticks_text(mk, ticks),
                    "amount": units_text(units),
                    "executed_at": at,
                }
                for match, ticks, units, at in reversed(mk.recent)
            ]
        }
    if cmd.view == "price":
        return price_view(ctx, tr, mk, step)
    if cmd.view == "depth":
        return depth_view(tr, mk, step)
    raise Invalid(f"unknown market view {cmd.view}")


def merged_levels(tr: Trading, mk: Market, step: int, side: int) -> list[tuple[int, int]]:
    """Real resting orders and the house's ladder merged by price level, best first."""
    amounts: dict[int, int] = {}
    for level in mk.book.levels(side):
        amounts[level.ticks] = level.total
    for ticks, units in mk.ladder_side(market_config(tr), tr.seed, step, side):
        if units > 0:
            amounts[ticks] = amounts.get(ticks, 0) + units
    return sorted(amounts.items(), reverse=side == BUY)


def _book_view(tr: Trading, mk: Market, step: int) -> dict[str, Any]:
    return {
        "market": mk.name,
        "asks": [
            {"price": ticks_text(mk, t), "amount": units_text(u)}
            for t, u in merged_levels(tr, mk, step, SELL)
        ],
        "bids": [
            {"price": ticks_text(mk, t), "amount": units_text(u)}
            for t, u in merged_levels(tr, mk, step, BUY)
        ],
    }


def depth_view(tr: Trading, mk: Market, step: int) -> dict[str, Any]:
    """The book as `_book_view` merges it, each level with its resting orders and the
    house's synthetic ladder apart (the console tells them apart), best first; a part a
    level lacks is left out."""
    cfg = market_config(tr)
    sides: dict[str, list[dict[str, str]]] = {}
    for name, side in (("asks", SELL), ("bids", BUY)):
        resting = {level.ticks: level.total for level in mk.book.levels(side)}
        ladder = {t: u for t, u in mk.ladder_side(cfg, tr.seed, step, side) if u > 0}
        prices = sorted(resting.keys() | ladder.keys(), reverse=side == BUY)
        levels: list[dict[str, str]] = []
        for t in prices:
            level = {"price": ticks_text(mk, t)}
            if resting.get(t):
                level["resting"] = units_text(resting[t])
            if ladder.get(t):
                level["ladder"] = units_text(ladder[t])
            levels.append(level)
        sides[name] = levels
    return {"market": mk.name, **sides}


def depth_at(tr: Trading, market: str, now: datetime) -> dict[str, Any]:
    """`depth_view` of a state that no decision reads (a past state: time travel), at
    engine time `now`; NotFound for an unknown market."""
    mk = tr.markets.get(market)
    if mk is None:
        raise NotFound(f"market not found: {market}")
    return depth_view(tr, mk, market_config(tr).step_of(now))


def _stats(mk: Market, begin: str, end: str, last: int) -> dict[str, Any]:
    first_minute = begin[:16]
    rows = [mk.minutes[m] for m in sorted(mk.minutes) if first_minute <= m <= end[:16]]
    if rows:
        high = max(r[1] for r in rows)
        low = min(r[2] for r in rows)
        open_ = rows[0][0]
        units = sum(r[3] for r in rows)
        spent = sum(r[4] for r in rows)
    else:
        high = low = open_ = last
        units = spent = 0
    return {
        "high": ticks_text(mk, high),
        "low": ticks_text(mk, low),
        "open": ticks_text(mk, open_),
        "volume": units_text(units),
        "volume_weighted_average_price": vwap_text(mk, spent, units),
        "range": {"begin": begin, "end": end},
    }


def _ticker(ctx: Ctx, tr: Trading, mk: Market, step: int) -> dict[str, Any]:
    cfg = market_config(tr)
    now = ctx.now
    last = mk.last_price(cfg, tr.seed, step)
    view: dict[str, Any] = {"market": mk.name}
    bids = merged_levels(tr, mk, step, BUY)
    asks = merged_levels(tr, mk, step, SELL)
    if bids:
        view["best_bid"] = {"price": ticks_text(mk, bids[0][0]), "amount": units_text(bids[0][1])}
    if asks:
        view["best_ask"] = {"price": ticks_text(mk, asks[0][0]), "amount": units_text(asks[0][1])}
    if mk.last_trade is not None:
        ticks, units = mk.last_trade
        view["last_execution"] = {"price": ticks_text(mk, ticks), "amount": units_text(units)}
    end = ctx.now_text
    view["last_day"] = _stats(mk, format_time(now - timedelta(days=1)), end, last)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    view["today"] = _stats(mk, format_time(midnight), end, last)
    view["snapshot_at"] = end
    return view


def price_view(ctx: Ctx, tr: Trading, mk: Market, step: int) -> dict[str, Any]:
    """The reference and last prices of `mk` at `step`."""
    cfg = market_config(tr)
    ref = Decimal(mk.reference(cfg, tr.seed, step)).quantize(EIGHT, rounding=ROUND_HALF_UP)
    return {
        "market": mk.name,
        "reference_price": format(ref, "f"),
        "last_price": ticks_text(mk, mk.last_price(cfg, tr.seed, step)),
        "as_of": ctx.now_text,
    }


def match_number(trade: int) -> str:
    n = trade + 36**11  # twelve characters
    out = []
    while n:
        n, r = divmod(n, 36)
        out.append(_BASE36[r])
    return "".join(reversed(out))
