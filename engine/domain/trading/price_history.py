"""Prices now and in the past, from the engine's own history: the reference path as it
was anchored at each moment (the market's recent explicit prices) and, where trades
printed in a minute, that minute's volume-weighted price.

Answered by the writer (like market data, sandex.engine.domain.trading.market_views) so that
"now" is exact; nothing is emitted. An average over an increment is time-weighted:
the mean of the price sampled evenly across it (every step when there are few, else
`SAMPLES` points), and only increments that have ended are shown.
"""

from __future__ import annotations

from bisect import bisect_right
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sandex.engine.domain.trading.amount_texts import ticks_text
from sandex.engine.domain.trading.market import Market, MarketConfig
from sandex.engine.domain.trading.market_views import TICKER_MARKETS
from sandex.engine.domain.trading.reference_price import exp
from sandex.engine.domain.trading.trading_state import Trading, live_trading, market_config
from sandex.engine.kernel.clock import EPOCH, format_time, parse_time
from sandex.engine.kernel.commands import ListHistoricalPrices, ListPrices
from sandex.engine.kernel.errors import Invalid, NotFound
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx

# The reference's increments, in seconds, finest first.
INCREMENTS: dict[str, int] = {
    "ONE_MINUTE": 60,
    "FIVE_MINUTES": 300,
    "FIFTEEN_MINUTES": 900,
    "THIRTY_MINUTES": 1800,
    "ONE_HOUR": 3600,
    "TWO_HOURS": 7200,
    "TWELVE_HOURS": 43200,
    "ONE_DAY": 86400,
    "ONE_WEEK": 7 * 86400,
    "TWO_WEEKS": 14 * 86400,
    "FOUR_WEEKS": 28 * 86400,
}
SAMPLES = 60
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_US = timedelta(microseconds=1)


def _micros(t: datetime) -> int:
    return (t - EPOCH) // _US


def _time(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


class _Path:
    """The price of one market at any past or present moment."""

    def __init__(self, tr: Trading, mk: Market, now: datetime) -> None:
        self.cfg: MarketConfig = market_config(tr)
        self.seed = tr.seed
        self.mk = mk
        self.now_step = self.cfg.step_of(now)
        self.steps = [step for step, _ in mk.anchors]
        self.minutes = {m: b for m, b in mk.minutes.items() if b[3] > 0}

    def at(self, us: int) -> float:
        """The price at `us` (microseconds since the epoch), in the quote asset."""
        mk, cfg = self.mk, self.cfg
        minute = self.minutes.get(format_time(_time(us))[:16])
        if minute is not None:
            return minute[4] / minute[3] * mk.tick_f
        step = us // cfg.step_us
        i = bisect_right(self.steps, step)
        if i:
            anchor_step, price = mk.anchors[i - 1]
        else:
            anchor_step, price = 0, cfg.start_prices[mk.name]
        if cfg.sigma_step == 0.0:
            return float(price)
        noise = mk._noise(cfg, self.seed)
        return float(price) * exp(noise.at(step) - noise.at(anchor_step))

    def average(self, start_us: int, length_us: int) -> float:
        count = max(1, min(SAMPLES, length_us // self.cfg.step_us))
        gap = length_us // count
        return sum(self.at(start_us + gap * k) for k in range(count)) / count


def _text(mk: Market, value: float) -> str:
    """A price on the market's tick precision (an average need not be on a tick)."""
    return format(Decimal(value).quantize(mk.tick, rounding=ROUND_HALF_UP), "f")


def _market(tr: Trading, name: str) -> Market:
    mk = tr.markets.get(name)
    if mk is None:
        raise NotFound(f"market not found: {name[:32]}")
    return mk


def list_prices(ctx: Ctx, cmd: ListPrices) -> dict[str, Any]:
    """Each market's last price now, and its one-minute average of 24 hours before."""
    tr = live_trading(ctx)
    names = list(dict.fromkeys(cmd.markets)) or list(TICKER_MARKETS)
    for name in names:
        if name not in TICKER_MARKETS:
            raise Invalid(f"markets invalid: unknown market '{name[:32]}'", field="markets")
    now_us = _micros(ctx.now)
    minute_us = 60_000_000
    yesterday = (now_us - 86400 * 1_000_000) // minute_us * minute_us
    items = []
    for name in names:
        mk = _market(tr, name)
        path = _Path(tr, mk, ctx.now)
        items.append(
            {
                "market": name,
                "current_price": ticks_text(mk, mk.last_price(path.cfg, tr.seed, path.now_step)),
                "yesterday_price": _text(mk, path.average(yesterday, minute_us)),
                "snapshot_at": ctx.now_text,
            }
        )
    return {"items": items}


def _instant(field: str, text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return _micros(parse_time(text))
    except ValueError as exc:
        raise Invalid(f"{field} invalid: not an RFC 3339 time", field=field) from exc


def _window(begin: int, end: int, increment: int) -> tuple[int, int]:
    """The first increment starting at or after `begin`, and how many end by `end`."""
    first = -(-begin // increment) * increment
    return first, max(0, (end - first) // increment)


def list_historical_prices(ctx: Ctx, cmd: ListHistoricalPrices) -> dict[str, Any]:
    tr = live_trading(ctx)
    mk = _market(tr, cmd.market)
    if (cmd.increment is None) == (cmd.max_data_points is None):
        raise Invalid(
            "increment invalid: exactly one of increment and max_data_points is required",
            field="increment",
        )
    limit = DEFAULT_LIMIT if cmd.limit is None else cmd.limit
    if not 1 <= limit <= MAX_LIMIT:
        raise Invalid(
            f"pagination.limit invalid: must be from 1 to {MAX_LIMIT}", field="pagination.limit"
        )
    offset = cmd.offset or 0
    if offset < 0:
        raise Invalid("pagination.offset invalid: must be at least 0", field="pagination.offset")
    now_us = _micros(ctx.now)
    begin = _instant("range.begin", cmd.begin)
    end = _instant("range.end", cmd.end)
    if begin is None:
        begin = _micros(ctx.settings.clock_start)
    # only increments that have ended show, so an end past now is now
    last = now_us if end is None else min(end, now_us)
    if end is not None and begin > end:
        raise Invalid("range.begin invalid: after range.end", field="range.begin")
    if cmd.increment is not None:
        if cmd.increment not in INCREMENTS:
            raise Invalid(
                f"increment invalid: unknown increment '{cmd.increment[:32]}'", field="increment"
            )
        seconds = INCREMENTS[cmd.increment]
    else:
        assert cmd.max_data_points is not None
        if cmd.max_data_points < 1:
            raise Invalid("max_data_points invalid: must be at least 1", field="max_data_points")
        extra = 1 if end is None else 0
        seconds = next(
            (
                s
                for s in INCREMENTS.values()
                if _window(begin, last, s * 1_000_000)[1] + extra <= cmd.max_data_points
            ),
            INCREMENTS["FOUR_WEEKS"],
        )
    increment = seconds * 1_000_000
    first, count = _window(begin, last, increment)
    path = _Path(tr, mk, ctx.now)
    # with no end, the last point is the price at the request's time
    total = count + (1 if end is None else 0)
    items = []
    for k in range(offset, min(total, offset + limit)):
        if k < count:
            start = first + k * increment
            items.append(
                {
                    "average_price": _text(mk, path.average(start, increment)),
                    "timestamp": format_time(_time(start)),
                }
            )
        else:
            items.append({"average_price": _text(mk, path.at(now_us)), "timestamp": ctx.now_text})
    return {"total_count": total, "items": items}


REGISTRATION = Registration({ListPrices: list_prices, ListHistoricalPrices: list_historical_prices})
