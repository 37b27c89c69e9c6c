"""A market: its settings (`MarketConfig`), its book, the state of its reference price
and synthetic ladder, and its statistics.

The path itself is sandex.engine.domain.trading.reference_price and the ladder's levels
sandex.engine.domain.trading.ladder; a market holds what they are computed from (the anchor,
what was taken from this step's ladder) and caches their answers.

Last price. The house trades with the outside world at the reference price once per
step; the market's last price is that, unless a sandbox trade or an explicit price came
later in the same step.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

from sandex.engine.config.settings import Settings
from sandex.engine.domain.trading.amount_texts import UNIT
from sandex.engine.domain.trading.book import SELL, Book
from sandex.engine.domain.trading.ladder import (
    NO_ASK,
    NO_BID,
    StillWindow,
    Window,
    best_price,
    fresh_levels,
    still_first,
    window_ahead,
)
from sandex.engine.domain.trading.reference_price import START_PRICES, Noise, exp
from sandex.engine.kernel.clock import EPOCH
from sandex.engine.kernel.money import MARKETS, MarketSpec

MINUTES_KEPT = 25 * 60
# How many steps back explicit prices are remembered for historical prices
# (sandex.engine.domain.trading.price_history): at the default one-second step, two of its
# longest increments and a day, so a long backtest keeps a bounded history.
ANCHOR_HISTORY_STEPS = 57 * 86400


@dataclass(frozen=True, slots=True)
class MarketConfig:
    """The settings that shape prices and liquidity, as the hot path wants them."""

    step_us: int
    sigma_step: float
    half_spread: float
    level_step: float
    levels: int
    level_notional: float
    watch_steps: int
    maker_fee: Decimal
    taker_fee: Decimal
    latency_us: int
    start_prices: dict[str, Decimal]
    # (half the spread, one level's step, their denominator) as exact integers: the still
    # ladder's offsets are spread / den and step / den (sandex.engine.domain.trading.ladder).
    offsets: tuple[int, int, int] = (0, 0, 1)
    # The last (time, step) step_of answered: a decision asks for its step several
    # times, and commands in a row mostly share their time. One tuple, swapped whole.
    last_step: list[tuple[datetime | None, int]] = field(
        default_factory=lambda: [(None, 0)], compare=False, repr=False
    )

    @classmethod
    def of(cls, s: Settings) -> MarketConfig:
        prices = dict(START_PRICES)
        prices.update(s.market_prices)
        return cls(
            offsets=exact_offsets(s.market_spread_bps, s.market_level_step_bps),
            step_us=s.market_step_seconds * 1_000_000,
            sigma_step=float(s.market_volatility) * math.sqrt(s.market_step_seconds / 86400.0),
            half_spread=float(s.market_spread_bps) / 20000.0,
            level_step=float(s.market_level_step_bps) / 10000.0,
            levels=s.market_levels,
            level_notional=float(s.market_level_notional),
            watch_steps=s.market_watch_steps,
            maker_fee=s.maker_fee_rate,
            taker_fee=s.taker_fee_rate,
            latency_us=s.order_submission_latency_ms * 1000,
            start_prices=prices,
        )

    def step_of(self, t: datetime) -> int:
        cached = self.last_step[0]
        if cached[0] == t:
            return cached[1]
        step = ((t - EPOCH) // timedelta(microseconds=1)) // self.step_us
        self.last_step[0] = (t, step)
        return step

    def time_of(self, step: int) -> datetime:
        return EPOCH + timedelta(microseconds=step * self.step_us)


def exact_offsets(spread_bps: Decimal, level_step_bps: Decimal) -> tuple[int, int, int]:
    """Half the spread and the level step as integers over one denominator."""
    half = Fraction(spread_bps) / 20000
    step = Fraction(level_step_bps) / 10000
    den = math.lcm(half.denominator, step.denominator)
    return (
        half.numerator * (den // half.denominator),
        step.numerator * (den // step.denominator),
        den,
    )


class Market:
    """Everything one market holds. Appliers change the book, anchor, consumption,
    prints and statistics; the caches (noise, ladder, window) are pure functions of them."""

    __slots__ = (
        "name",
        "spec",
        "tick",
        "tick_f",
        "unit",
        "book",
        "stops",
        "anchor_price",
        "anchor_ticks",
        "anchor_step",
        "anchor_pos",
        "anchors",
        "cons_key",
        "consumed",
        "cons_version",
        "avail",
        "print_step",
        "print_ticks",
        "last_trade",
        "minutes",
        "recent",
        "trades",
        "noise",
        "anchor_x",
        "ladder_key",
        "ladder",
        "window",
        "armed_step",
        "watched",
    )

    def __init__(self, spec: MarketSpec) -> None:
        self.name = spec.market
        self.spec = spec
        self.tick = spec.tick
        self.tick_f = float(spec.tick)
        self.unit = spec.tick * UNIT  # the quote value of one tick x one base unit
        self.book = Book()
        # Untriggered stops: order id -> order; few per market, scanned on each print.
        self.stops: dict[str, Any] = {}
        # None until a price is set: the configured starting price, anchored at step 0.
        self.anchor_price: Decimal | None = None
        self.anchor_ticks: int | None = None  # the anchor in whole ticks, None off a tick
        self.anchor_step = 0
        self.anchor_pos = 0
        # (step, price) of each explicit price, oldest first, within ANCHOR_HISTORY_STEPS
        self.anchors: deque[tuple[int, Decimal]] = deque()
        self.cons_key: tuple[int, int] = (-1, -1)
        self.consumed: dict[tuple[int, int], int] = {}
        self.cons_version = 0
        # per side: ((anchor position, step, consumption version), levels) last answered
        self.avail: list[Any] = [None, None]
        self.print_step = -1
        self.print_ticks = 0
        self.last_trade: tuple[int, int] | None = None  # (ticks, units)
        # minute ("2024-01-01T00:00") -> [open, high, low, units, notional units]
        self.minutes: dict[str, list[int]] = {}
        # (trade number, ticks, units, executed at): the match number's text is made
        # when the recent trades are read, not for every trade
        self.recent: deque[tuple[int, int, int, str]] = deque(maxlen=2000)
        self.trades = 0
        self.noise: Noise | None = None
        self.anchor_x = 0.0
        self.ladder_key: tuple[int, int] = (-1, -1)
        self.ladder: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])
        self.window: Window | StillWindow | None = None
        self.armed_step: int | None = None
        # Thresholds the armed watch was computed for: (best bid, best ask, top stop).
        self.watched: tuple[int, int, int] = (NO_BID, NO_ASK, NO_BID)

    # -- prices -----------------------------------------------------------------------

    def _noise(self, cfg: MarketConfig, seed: int) -> Noise:
        if self.noise is None:
            self.noise = Noise(seed, self.name, cfg.sigma_step)
            self.anchor_x = self.noise.at(self.anchor_step)
        return self.noise

    def base_price(self, cfg: MarketConfig) -> Decimal:
        price = self.anchor_price
        return cfg.start_prices[self.name] if price is None else price

    def reference(self, cfg: MarketConfig, seed: int, step: int) -> float:
        if cfg.sigma_step == 0.0:
            return float(self.base_price(cfg))
        noise = self._noise(cfg, seed)
        return float(self.base_price(cfg)) * exp(noise.at(step) - self.anchor_x)

    def set_anchor(self, price: Decimal, step: int, position: int) -> None:
        anchors = self.anchors
        anchors.append((step, price))
        while anchors[0][0] < step - ANCHOR_HISTORY_STEPS:
            anchors.popleft()
        self.anchor_price = price
        ticks, off = divmod(price, self.tick)
        self.anchor_ticks = None if off else int(ticks)
        self.anchor_step = step
        self.anchor_pos = position
        if self.noise is not None:
            self.anchor_x = self.noise.at(step)
        self.window = None
        self.ladder_key = (-1, -1)
        self.print_step = step
        self.print_ticks = int(price / self.tick)

    def last_price(self, cfg: MarketConfig, seed: int, step: int) -> int:
        """The last price in ticks at `step`."""
        if step <= self.print_step:
            return self.print_ticks
        return self._round(self.reference(cfg, seed, step))

    def still_ticks(self, cfg: MarketConfig) -> int | None:
        """The reference in whole ticks when the path is still and on a tick, else None:
        the ladder is then exact integer arithmetic."""
        if cfg.sigma_step != 0.0:
            return None
        if self.anchor_price is not None:
            return self.anchor_ticks
        ticks, off = divmod(self.base_price(cfg), self.tick)
        return None if off else int(ticks)

    def _round(self, price: float) -> int:
        return max(1, round(price / self.tick_f))

    # -- the house's ladder -------------------------------------------------------------

    def fresh_ladder(
        self, cfg: MarketConfig, seed: int, step: int
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        key = (self.anchor_pos, step)
        if self.ladder_key != key:
            still = self.still_ticks(cfg)
            self.ladder = fresh_levels(cfg, self.reference(cfg, seed, step), self.tick_f, still)
            self.ladder_key = key
        return self.ladder

    def ladder_side(self, cfg: MarketConfig, seed: int, step: int, side: int) -> list[list[int]]:
        """The house's levels on `side` at `step`, less what was taken this step, best
        first, as [ticks, units]. Shared until the next consumption: do not change it."""
        key = (self.anchor_pos, step, self.cons_version)
        cached = self.avail[side]
        if cached is not None and cached[0] == key:
            return cached[1]
        asks, bids = self.fresh_ladder(cfg, seed, step)
        levels = asks if side == SELL else bids
        if self.cons_key != key[:2] or not self.consumed:
            out = [[t, u] for t, u in levels]
        else:
            consumed = self.consumed
            out = []
            for t, u in levels:
                left = u - consumed.get((side, t), 0)
                out.append([t, left if left > 0 else 0])
        self.avail[side] = (key, out)
        return out

    def ladder_top(self, cfg: MarketConfig, seed: int, step: int, side: int) -> int | None:
        """`best_price(None, ladder_side(...), side)`: the house's best price on `side`
        with units left. Nothing taken from a still ladder: its first level, computed
        alone (a backtest sets a new price, so a new ladder, before most orders, and most
        orders only ask whether they cross it)."""
        cached = self.avail[side]
        fresh = self.cons_key != (self.anchor_pos, step) or not self.consumed
        if fresh and (cached is None or cached[0] != (self.anchor_pos, step, self.cons_version)):
            still = self.still_ticks(cfg)
            if still is not None:
                first = still_first(cfg, still, self.tick_f, side)
                if first is None:
                    return None
                if first[1] > 0:
                    return first[0]
        return best_price(None, self.ladder_side(cfg, seed, step, side), side)

    def consume(self, step: int, side: int, taken: list[list[int]]) -> None:
        key = (self.anchor_pos, step)
        if self.cons_key != key:
            self.cons_key = key
            self.consumed = {}
        consumed = self.consumed
        for ticks, units in taken:
            consumed[(side, ticks)] = consumed.get((side, ticks), 0) + units
        self.cons_version += 1

    # -- watching the path for crossings --------------------------------------------------

    def window_at(self, cfg: MarketConfig, seed: int, step: int) -> Window | StillWindow:
        window = self.window
        if window is not None and window.start <= step < window.end:
            return window
        base = float(self.base_price(cfg))
        refs = None
        if cfg.sigma_step != 0.0:
            noise = self._noise(cfg, seed)
            ax = self.anchor_x
            refs = [base * exp(x - ax) for x in noise.run(step, cfg.watch_steps)]
        self.window = window_ahead(cfg, step, self.tick_f, base, refs, self.still_ticks(cfg))
        return self.window

    def thresholds(self) -> tuple[int, int, int]:
        book = self.book
        bb = book.best_bid()
        ba = book.best_ask()
        stops = self.stops
        top_stop = max(o.stop_ticks for o in stops.values()) if stops else NO_BID
        return (NO_BID if bb is None else bb, NO_ASK if ba is None else ba, top_stop)

    def has_interest(self) -> bool:
        return bool(self.book.bids or self.book.asks or self.stops)

    # -- statistics ----------------------------------------------------------------------

    def record_trade(self, at: str, ticks: int, units: int, match: int) -> None:
        self.last_trade = (ticks, units)
        self.trades += 1
        minute = at[:16]
        bucket = self.minutes.get(minute)
        if bucket is None:
            self.minutes[minute] = [ticks, ticks, ticks, units, ticks * units]
            if len(self.minutes) > MINUTES_KEPT:
                for old in sorted(self.minutes)[: len(self.minutes) - MINUTES_KEPT]:
                    del self.minutes[old]
        else:
            if ticks > bucket[1]:
                bucket[1] = ticks
            if ticks < bucket[2]:
                bucket[2] = ticks
            bucket[3] += units
            bucket[4] += ticks * units
        self.recent.append((match, ticks, units, at))


def new_markets() -> dict[str, Market]:
    return {name: Market(spec) for name, spec in MARKETS.items()}


__all__ = ["Market", "MarketConfig", "new_markets"]
