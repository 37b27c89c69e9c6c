"""The house's synthetic ladder: the liquidity it shows around the reference price.

Around the reference price the house shows `market_levels` levels per side, the first
at half the spread, then every `market_level_step_bps`, each worth
`market_level_notional` of the quote asset. What sandbox orders take from a level is
remembered for that step (and anchor) only: the next step shows a fresh ladder (the
market keeps the ladder of its step and what was taken from it).

On a still path (a backtest's, or the sandbox's at volatility 0 after a price is set) the
reference is a whole number of ticks, and every ladder price is computed from it in
integers: the spread and level step are exact fractions (`MarketConfig.offsets`), so
`ceil(ticks x (1 + offset))` has no rounding error at all. A moving path's reference is
a float (the noise's `exp`), and its prices are floats' ceil and floor (see `_CEIL`).

A `Window` holds the fresh ladder's best prices and the last price over a run of future
steps, so that the market's watch finds the first step that crosses resting interest
without building a ladder per step. On a still path every step of the window shows the
same ladder: a `StillWindow` holds it once and answers in O(1) (a backtest sets a price,
and so needs a new window, at every command).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from sandex.engine.domain.trading.amount_texts import UNITS_PER_BASE
from sandex.engine.domain.trading.book import BUY

if TYPE_CHECKING:
    from sandex.engine.domain.trading.market import MarketConfig

# The thresholds of a side with no resting interest: no price crosses them.
NO_BID = -1
NO_ASK = 1 << 62
_BLOCK = 32
# A ladder price in ticks is a float quotient `ref * (1 +/- offset) / tick`: each of its
# few operations (the reference and tick as floats, 1 +/- offset, the product, the
# quotient) is within half an ulp, so the whole is within about 3e-16 of its exact value,
# relative. A price on a tick (481.78 / 0.01 = 48177.99999999999) must not then round a
# whole tick away: ceil and floor are taken of the quotient moved 1e-12 (relative) towards
# the reference, thousands of times that error and far below half a tick for any price
# under 5e11 ticks. It moves a price by a tick only when its exact value lies within that
# 1e-12 of a whole tick, and then onto that tick.
_CEIL = 1.0 - 1e-12
_FLOOR = 1.0 + 1e-12


def fresh_levels(
    cfg: MarketConfig, ref: float, tick: float, ref_ticks: int | None = None
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The ladder around the reference price `ref`: (asks, bids), best first, as (ticks,
    units); a level never shares a price with the one before it. With `ref_ticks` (the
    reference as a whole number of ticks) every price is exact integer arithmetic;
    without, a price a whole number of ticks away still comes out exactly (`_CEIL`)."""
    asks: list[tuple[int, int]] = []
    bids: list[tuple[int, int]] = []
    prev_ask = 0
    prev_bid = NO_ASK
    spread, step, den = cfg.offsets
    for i in range(cfg.levels):
        if ref_ticks is not None:
            num = spread + i * step
            a = max(-(-ref_ticks * (den + num) // den), prev_ask + 1)
            b = min(ref_ticks * (den - num) // den, prev_bid - 1)
        else:
            offset = cfg.half_spread + i * cfg.level_step
            a = max(math.ceil(ref * (1.0 + offset) / tick * _CEIL), prev_ask + 1)
            b = min(math.floor(ref * (1.0 - offset) / tick * _FLOOR), prev_bid - 1)
        asks.append((a, int(cfg.level_notional / (a * tick) * UNITS_PER_BASE)))
        if b >= 1:
            bids.append((b, int(cfg.level_notional / (b * tick) * UNITS_PER_BASE)))
        prev_ask, prev_bid = a, b
    return asks, bids


def still_first(
    cfg: MarketConfig, ref_ticks: int, tick: float, side: int
) -> tuple[int, int] | None:
    """The first level of `side` (SELL: asks, BUY: bids) of `fresh_levels(cfg, ...,
    ref_ticks)` as (ticks, units), None when the side has no level, without the others:
    deciding whether an order crosses the still ladder needs only its best level."""
    if cfg.levels < 1:
        return None
    spread, _, den = cfg.offsets
    if side == BUY:
        t = min(ref_ticks * (den - spread) // den, NO_ASK - 1)
        if t < 1:
            return None  # every later bid is lower still
    else:
        t = max(-(-ref_ticks * (den + spread) // den), 1)
    return t, int(cfg.level_notional / (t * tick) * UNITS_PER_BASE)


def best_price(real: int | None, ladder: list[list[int]], side: int) -> int | None:
    """The better of a side's best real price and its best ladder level with units left."""
    synth = None
    for t, u in ladder:
        if u > 0:
            synth = t
            break
    if real is None:
        return synth
    if synth is None:
        return real
    return max(real, synth) if side == BUY else min(real, synth)


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


class Repeat:
    """One value at each of `n` positions: a still window's steps, without a list."""

    __slots__ = ("value", "n")

    def __init__(self, value: int, n: int) -> None:
        self.value = value
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        if not -self.n <= i < self.n:
            raise IndexError(i)
        return self.value


class StillWindow:
    """A `Window` whose steps all show one ladder and one last price (a still path):
    the first step that crosses is the first asked, or none is."""

    __slots__ = ("start", "end", "the_ask", "the_bid", "the_last")

    def __init__(self, start: int, n: int, ask: int, bid: int, last: int) -> None:
        self.start = start
        self.end = start + n
        self.the_ask = ask
        self.the_bid = bid
        self.the_last = last

    @property
    def ask(self) -> Repeat:
        return Repeat(self.the_ask, self.end - self.start)

    @property
    def bid(self) -> Repeat:
        return Repeat(self.the_bid, self.end - self.start)

    @property
    def last(self) -> Repeat:
        return Repeat(self.the_last, self.end - self.start)

    def first_cross(self, k: int, best_bid: int, best_ask: int, top_stop: int) -> int | None:
        """`Window.first_cross` of a window whose every step is the same."""
        if not self.start <= k < self.end:
            return None
        if self.the_ask <= best_bid or self.the_bid >= best_ask or self.the_last <= top_stop:
            return k
        return None


def still_best(cfg: MarketConfig, ref_ticks: int) -> tuple[int, int]:
    """The still ladder's best (ask, bid) around a reference of `ref_ticks`, exactly."""
    spread, _, den = cfg.offsets
    return -(-ref_ticks * (den + spread) // den), ref_ticks * (den - spread) // den


def still_crossings(cfg: MarketConfig, best_bid: int, best_ask: int) -> tuple[int, int]:
    """On a still path: the highest reference (ticks) whose best ask reaches `best_bid`
    and the lowest whose best bid reaches `best_ask` (NO_BID / NO_ASK when none can).
    ceil(r x (den + s) / den) <= B exactly when r <= B x den / (den + s), and
    floor(r x (den - s) / den) >= A exactly when r >= A x den / (den - s)."""
    spread, _, den = cfg.offsets
    low = best_bid * den // (den + spread) if best_bid >= 0 else NO_BID
    high = -(-best_ask * den // (den - spread)) if best_ask < NO_ASK and den > spread else NO_ASK
    return low, high


def window_ahead(
    cfg: MarketConfig,
    step: int,
    tick: float,
    base: float,
    refs: list[float] | None,
    base_ticks: int | None = None,
) -> Window | StillWindow:
    """The window of `cfg.watch_steps` steps from `step`: `refs` are the reference prices
    at those steps, None for a still path (at `base`, `base_ticks` when on a tick)."""
    n = cfg.watch_steps
    h = cfg.half_spread
    if refs is None:
        # A still path shows one ladder at every step: compute it once, not n times
        # (a backtest sets a price, and so rebuilds the window, at each crossing).
        if base_ticks is not None:
            first_ask, first_bid = still_best(cfg, base_ticks)
        else:
            first_ask = math.ceil(base * (1.0 + h) / tick * _CEIL)
            first_bid = math.floor(base * (1.0 - h) / tick * _FLOOR)
        return StillWindow(step, n, first_ask, first_bid, max(1, round(base / tick)))
    # The same expressions as fresh_levels: the window must agree with the ladder.
    ask = [math.ceil(r * (1.0 + h) / tick * _CEIL) for r in refs]
    bid = [math.floor(r * (1.0 - h) / tick * _FLOOR) for r in refs]
    last = [max(1, round(r / tick)) for r in refs]
    return Window(step, ask, bid, last)
