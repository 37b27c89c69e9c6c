"""A market: its reference price path, the house's synthetic ladder around it, its book
and its statistics.

Reference price. Time is cut into steps (`market_step_seconds`); at step k the price is
`anchor_price * exp(x(k) - x(anchor_step))`, where x is seeded multi-scale value noise:
ten octaves of linearly interpolated hashed values with periods 1, 4, 16 ... 4^9 steps
and amplitudes growing as the square root of the period, so the path moves like a
random walk of the configured daily volatility over minutes to days, and stays within a
few volatilities of its anchor beyond. Unlike a sequential random walk it can be
evaluated at any step in O(octaves) with no stored state, so an idle market writes no
events and a clock moved a year ahead costs nothing. Only integer arithmetic and
IEEE-exact float operations are used (no libm), so the path is the same on every
machine. An explicit price (`MarketPriceSet`) moves the anchor.

Synthetic liquidity. Around the reference price the house shows `market_levels` levels
per side, the first at half the spread, then every `market_level_step_bps`, each worth
`market_level_notional` of the quote asset. What sandbox orders take from a level is
remembered for that step (and anchor) only: the next step shows a fresh ladder.

Last price. The house trades with the outside world at the reference price once per
step; the market's last price is that, unless a sandbox trade or an explicit price came
later in the same step.
"""

from __future__ import annotations

import hashlib
import math
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from engine.config.settings import Settings
from engine.domain.trading.book import BUY, SELL, Book
from engine.kernel.clock import EPOCH
from engine.kernel.money import MARKETS, MarketSpec

# Realistic starting prices (early 2024, the sandbox's default epoch).
START_PRICES: dict[str, Decimal] = {
    "BTCUSD": Decimal("42500"),
    "ETHUSD": Decimal("2300"),
    "BCHUSD": Decimal("250"),
    "LTCUSD": Decimal("72"),
    "LINKUSD": Decimal("15"),
    "AAVEUSD": Decimal("105"),
    "PAXGUSD": Decimal("2050"),
    "UNIUSD": Decimal("6.5"),
    "MATICUSD": Decimal("0.9"),
    "USDPUSD": Decimal("1"),
    "BTCEUR": Decimal("38750"),
    "BTCSGD": Decimal("56500"),
    "ETHEUR": Decimal("2100"),
    "ETHSGD": Decimal("3060"),
}

UNIT = Decimal("0.00000001")  # one base unit
UNITS_PER_BASE = 100_000_000
_MASK = (1 << 64) - 1
_OCTAVES = 10
_BLOCK = 32
NO_BID = -1
NO_ASK = 1 << 62
MINUTES_KEPT = 25 * 60


def _mix(z: int) -> int:
    """splitmix64: a well-mixed 64-bit hash of an integer, in pure integer arithmetic."""
    z = (z + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _value(base: int, cell: int) -> float:
    """A hashed value in [-1, 1) for a lattice cell."""
    return (_mix(base ^ (cell & _MASK)) >> 11) * (2.0 / 9007199254740992.0) - 1.0


def exp(y: float) -> float:
    """e**y with + - * / only (no libm), so every machine computes the same bits."""
    halvings = 0
    while y > 0.5 or y < -0.5:
        y /= 2.0
        halvings += 1
    term = 1.0
    total = 1.0
    for n in range(1, 18):
        term = term * y / n
        total += term
    for _ in range(halvings):
        total *= total
    return total


class Noise:
    """x(k): the seeded log-price offset of a market at step k."""

    __slots__ = ("bases", "amps", "periods")

    def __init__(self, seed: int, market: str, sigma_step: float) -> None:
        raw = hashlib.shake_256(f"{seed}:{market}:price-path".encode()).digest(8 * _OCTAVES)
        self.bases = [int.from_bytes(raw[8 * o : 8 * o + 8], "big") for o in range(_OCTAVES)]
        self.periods = [4**o for o in range(_OCTAVES)]
        # With amp_o^2 = c * period_o the variance of a change over d steps (d well under
        # the longest period) measures about 0.65 * c * d.
        c = sigma_step * sigma_step / 0.65
        self.amps = [math.sqrt(c * p) for p in self.periods]

    def at(self, k: int) -> float:
        x = 0.0
        for base, amp, period in zip(self.bases, self.amps, self.periods, strict=True):
            cell, offset = divmod(k, period)
            v0 = _value(base, cell)
            if offset:
                v1 = _value(base, cell + 1)
                v0 += (v1 - v0) * (offset / period)
            x += amp * v0
        return x

    def run(self, k0: int, n: int) -> list[float]:
        """x(k0) ... x(k0 + n - 1), reusing lattice values between steps."""
        bases, amps, periods = self.bases, self.amps, self.periods
        cells = [(k0 // p) for p in periods]
        v0s = [_value(b, c) for b, c in zip(bases, cells, strict=True)]
        v1s = [_value(b, c + 1) for b, c in zip(bases, cells, strict=True)]
        out = []
        octaves = range(_OCTAVES)
        for k in range(k0, k0 + n):
            x = 0.0
            for o in octaves:
                period = periods[o]
                cell, offset = divmod(k, period)
                if cell != cells[o]:
                    if cell == cells[o] + 1:
                        v0s[o] = v1s[o]
                    else:
                        v0s[o] = _value(bases[o], cell)
                    v1s[o] = _value(bases[o], cell + 1)
                    cells[o] = cell
                if offset:
                    v0 = v0s[o]
                    x += amps[o] * (v0 + (v1s[o] - v0) * (offset / period))
                else:
                    x += amps[o] * v0s[o]
            out.append(x)
        return out


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


def _suffix(values: list[int], pick: Any) -> list[int]:
    """pick(values[b:]) for every b."""
    out = list(values)
    for b in range(len(out) - 2, -1, -1):
        out[b] = pick(out[b], out[b + 1])
    return out


class Window:
    """The fresh ladder's best prices and the last price over a run of future steps,
    with per-block extremes, to find the first step that crosses resting interest."""

    __slots__ = (
        "start",
        "ask",
        "bid",
        "last",
        "b_ask",
        "b_bid",
        "b_last",
        "s_ask",
        "s_bid",
        "s_last",
    )

    def __init__(self, start: int, ask: list[int], bid: list[int], last: list[int]) -> None:
        self.start = start
        self.ask = ask
        self.bid = bid
        self.last = last
        self.b_ask = [min(ask[i : i + _BLOCK]) for i in range(0, len(ask), _BLOCK)]
        self.b_bid = [max(bid[i : i + _BLOCK]) for i in range(0, len(bid), _BLOCK)]
        self.b_last = [min(last[i : i + _BLOCK]) for i in range(0, len(last), _BLOCK)]
        # The same extremes from each block to the window's end: a step that crosses
        # nothing (most orders) is answered without walking the blocks.
        self.s_ask = _suffix(self.b_ask, min)
        self.s_bid = _suffix(self.b_bid, max)
        self.s_last = _suffix(self.b_last, min)

    @property
    def end(self) -> int:
        return self.start + len(self.ask)

    def first_cross(self, k: int, best_bid: int, best_ask: int, top_stop: int) -> int | None:
        """The first step >= k in the window where the ladder's ask reaches the best real
        bid, its bid reaches the best real ask, or the last price falls to a stop."""
        ask, bid, last = self.ask, self.bid, self.last
        i = k - self.start
        n = len(ask)
        if 0 <= i < n:
            b = i // _BLOCK
            if self.s_ask[b] > best_bid and self.s_bid[b] < best_ask and self.s_last[b] > top_stop:
                return None
        while i < n:
            if i % _BLOCK == 0:
                b = i // _BLOCK
                if (
                    self.b_ask[b] > best_bid
                    and self.b_bid[b] < best_ask
                    and self.b_last[b] > top_stop
                ):
                    i += _BLOCK
                    continue
            if ask[i] <= best_bid or bid[i] >= best_ask or last[i] <= top_stop:
                return self.start + i
            i += 1
        return None


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
        "anchor_step",
        "anchor_pos",
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
        self.anchor_step = 0
        self.anchor_pos = 0
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
        self.window: Window | None = None
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
        self.anchor_price = price
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

    def _round(self, price: float) -> int:
        return max(1, round(price / self.tick_f))

    # -- the house's ladder -------------------------------------------------------------

    def _fresh_ladder(
        self, cfg: MarketConfig, ref: float
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        tick = self.tick_f
        asks: list[tuple[int, int]] = []
        bids: list[tuple[int, int]] = []
        prev_ask = 0
        prev_bid = NO_ASK
        for i in range(cfg.levels):
            offset = cfg.half_spread + i * cfg.level_step
            a = max(math.ceil(ref * (1.0 + offset) / tick), prev_ask + 1)
            b = min(math.floor(ref * (1.0 - offset) / tick), prev_bid - 1)
            asks.append((a, int(cfg.level_notional / (a * tick) * UNITS_PER_BASE)))
            if b >= 1:
                bids.append((b, int(cfg.level_notional / (b * tick) * UNITS_PER_BASE)))
            prev_ask, prev_bid = a, b
        return asks, bids

    def fresh_ladder(
        self, cfg: MarketConfig, seed: int, step: int
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        key = (self.anchor_pos, step)
        if self.ladder_key != key:
            self.ladder = self._fresh_ladder(cfg, self.reference(cfg, seed, step))
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

    def window_at(self, cfg: MarketConfig, seed: int, step: int) -> Window:
        window = self.window
        if window is not None and window.start <= step < window.end:
            return window
        n = cfg.watch_steps
        tick = self.tick_f
        h = cfg.half_spread
        if cfg.sigma_step == 0.0:
            # A still path shows one ladder at every step: compute it once, not n times
            # (a backtest sets a price, and so rebuilds the window, at each crossing).
            r = float(self.base_price(cfg))
            ask = [math.ceil(r * (1.0 + h) / tick)] * n
            bid = [math.floor(r * (1.0 - h) / tick)] * n
            last = [max(1, round(r / tick))] * n
        else:
            noise = self._noise(cfg, seed)
            base = float(self.base_price(cfg))
            ax = self.anchor_x
            refs = [base * exp(x - ax) for x in noise.run(step, n)]
            ask = [math.ceil(r * (1.0 + h) / tick) for r in refs]
            bid = [math.floor(r * (1.0 - h) / tick) for r in refs]
            last = [max(1, round(r / tick)) for r in refs]
        self.window = Window(step, ask, bid, last)
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


__all__ = ["BUY", "SELL", "Market", "MarketConfig", "Noise", "Window", "exp", "new_markets"]
