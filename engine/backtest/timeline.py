"""The timeline a backtest walks: every market's price points merged in time order,
kept in ticks of the market (the runner's thresholds are), with what each point is in
the bar model (docs/backtests.md, "The bar model").

A point's flags: `PATH`, it continues its market's path from the point before (a bar's
extremes and close), so that the runner walks through the prices in between; `SEEN`,
the strategy is called for it (a trade, or a bar's close once the bar is complete);
`GAP`, the price jumps to it (a bar's open), so resting orders it passes trade at the
ladder's prices there. A trade point is `SEEN` only: the next print, not a walk.

The timeline is held as arrays (times 8 bytes a point, ticks 4 for bars whose prices
fit in int32 and 8 otherwise, market and flags one byte each): a point's price on the
tick, a `Decimal`, is made when it is read (`OnTick`), and a bar only when the strategy
is handed one (`ClosingBars`), so that a million bars fit in a few hundred megabytes."""

from __future__ import annotations

import heapq
import operator
from array import array
from collections.abc import Iterator, Sequence
from decimal import Decimal, getcontext
from itertools import repeat
from typing import Any, overload

import numpy as np

from sandex.engine.backtest.errors import BacktestError
from sandex.engine.backtest.price_files import (
    EXACT,
    Bar,
    BarPoints,
    Bars,
    Decimals,
    Series,
    decimal_parts,
    view,
)

PATH = 1
SEEN = 2
GAP = 4
# A bar's four points: open, first extreme, second extreme, close.
_BAR_FLAGS = bytes((GAP, PATH, PATH, PATH | SEEN))


class OnTick(Sequence[Decimal]):
    """The timeline's prices on the tick, made from its ticks when read: `units * tick`,
    the very Decimal a list of them would hold."""

    __slots__ = ("mks", "tick_of", "ticks")

    def __init__(self, ticks: array[int], mks: Sequence[int], tick_of: Sequence[Decimal]) -> None:
        self.ticks = ticks
        self.mks = mks
        self.tick_of = list(tick_of)

    def __len__(self) -> int:
        return len(self.ticks)

    @overload
    def __getitem__(self, i: int) -> Decimal: ...
    @overload
    def __getitem__(self, i: slice) -> list[Decimal]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return EXACT.multiply(self.ticks[i], self.tick_of[self.mks[i]])

    def __iter__(self) -> Iterator[Decimal]:
        # The caller's context multiplies exactly when it keeps the 28 digits the
        # prices were once made with; a narrower one would round: EXACT then.
        times = operator.mul if getcontext().prec >= 28 else EXACT.multiply
        return map(times, self.ticks, map(self.tick_of.__getitem__, self.mks))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class ClosingBars(Sequence[Bar | None]):
    """The bar each point closes, or None: made from its market's bars when asked."""

    __slots__ = ("bars_of", "mks", "pos")

    def __init__(self, bars_of: list[Any], mks: Sequence[int], pos: Sequence[int] | None) -> None:
        # per market: None (trades), a {point: bar} dict, or compact `Bars` (bar k
        # closes at point 4k + 3)
        self.bars_of = bars_of
        self.mks = mks
        self.pos = pos  # each point's index in its market's series (None: one market)

    def __bool__(self) -> bool:
        return any(b is not None for b in self.bars_of)

    def __len__(self) -> int:
        return len(self.mks)

    def __iter__(self) -> Iterator[Bar | None]:
        return (self[i] for i in range(len(self.mks)))

    def one_market_of_bars(self) -> bool:
        """One market of loaded bars: point 4k opens bar k, 4k + 3 closes it."""
        return self.pos is None and len(self.bars_of) == 1 and isinstance(self.bars_of[0], Bars)

    @overload
    def __getitem__(self, i: int) -> Bar | None: ...
    @overload
    def __getitem__(self, i: slice) -> list[Bar | None]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self.mks)
        bars = self.bars_of[self.mks[i]]
        if bars is None:
            return None
        k = i if self.pos is None else self.pos[i]
        if isinstance(bars, dict):
            return bars.get(k)  # type: ignore[no-any-return]
        return bars.bar(k >> 2) if k & 3 == 3 else None

    def bar_of_close(self) -> Any:
        """One market of loaded bars: `bar(k)` answers bar k (closed at point 4k + 3)."""
        return self.bars_of[0].bar


def _ticks(prices: Sequence[Decimal], tick: Decimal) -> array[int]:
    """Each price rounded half up to the nearest tick, in ticks: (2P + T) // 2T in
    integers, P and T the price and the tick on a common exponent (prices are
    positive), exactly the `int((price + tick / 2) // tick)` of Decimals."""
    tc, te = decimal_parts(tick)
    if isinstance(prices, Decimals):
        out = array("q")
        out.frombytes(_column_ticks(prices, tc, te).tobytes())
        return out
    if isinstance(prices, BarPoints):
        bars = prices.bars
        down = np.frombuffer(bars.down, dtype=bool) if bars.down else np.zeros(0, bool)
        # A column at a time, written in place: no temporary as large as the timeline.
        # 4 bytes a point when every price fits (a high is a bar's largest), else 8.
        h = _column_ticks(bars.high, tc, te)
        fits = not len(h) or int(h.max()) < 1 << 31
        out = array("i" if fits else "q", bytes(4 if fits else 8)) * (4 * len(bars))
        if out:
            points = view(out).reshape(-1, 4)
            points[:, 1] = h
            points[:, 2] = h
            del h
            low = _column_ticks(bars.low, tc, te)
            np.copyto(points[:, 1], low, where=~down)
            np.copyto(points[:, 2], low, where=down)
            del low
            points[:, 0] = _column_ticks(bars.open, tc, te)
            points[:, 3] = _column_ticks(bars.close, tc, te)
            del points
        return out
    half = tick / 2
    return array("q", (int((price + half) // tick) for price in prices))


def _column_ticks(column: Decimals, tc: int, te: int) -> Any:
    """A column's prices in ticks (int64, numpy): (2P + T) // 2T on a common exponent,
    in numpy where no product can pass int64, else in Python's integers."""
    exps = column.exps
    coefs = np.frombuffer(column.coefs, dtype=np.int64) if exps else np.zeros(0, np.int64)
    if exps and min(exps) == max(exps):  # one exponent, the common case
        e = exps[0]
        common = min(e, te)
        two_t = 2 * tc * 10 ** (te - common)
        scale = 2 * 10 ** (e - common)
        t = two_t // 2
        if int(coefs.max()) * scale + t < 1 << 63 and two_t < 1 << 63:
            return (coefs * scale + t) // two_t
        return np.array([(p * scale + t) // two_t for p in column.coefs], dtype=np.int64)
    out = []
    for p, e in zip(column.coefs, exps, strict=True):
        common = min(e, te)
        t = tc * 10 ** (te - common)
        out.append((2 * p * 10 ** (e - common) + t) // (2 * t))
    return np.array(out, dtype=np.int64)


def merge(
    series: dict[str, Series], ticks: list[Decimal]
) -> tuple[array[int], array[int], OnTick, array[int], ClosingBars, bytes]:
    """One timeline of every market's points: times, market index, prices on the tick
    (made when read), prices in ticks, the bar each point closes, and each point's flags."""
    per_market = []
    bars_of: list[Any] = []
    for m, s in enumerate(series.values()):
        tick = ticks[m]
        in_ticks = _ticks(s.prices, tick)
        if in_ticks and view(in_ticks).min() <= 0:
            k = next(k for k, units in enumerate(in_ticks) if units <= 0)
            raise BacktestError(
                f"{s.market}: price {s.prices[k]} at point {k + 1} rounds to zero on the tick {tick}"
            )
        times = s.times if isinstance(s.times, array) else array("q", s.times)
        flags = _BAR_FLAGS * len(s.bars) if s.bars else bytes([SEEN]) * len(times)
        if not s.bars:
            bars_of.append(None)
        elif isinstance(s.bars, Bars) and s.closes == range(3, len(times), 4):
            bars_of.append(s.bars)
        else:
            bars_of.append(dict(zip(s.closes, s.bars, strict=True)))
        per_market.append((times, in_ticks, flags))
    kind = "B" if len(per_market) < 256 else "H"
    if len(per_market) == 1:
        times, in_ticks, flags = per_market[0]
        mks = array(kind, bytes(len(times)))
        return (
            times,
            mks,
            OnTick(in_ticks, mks, ticks),
            in_ticks,
            ClosingBars(bars_of, mks, None),
            flags,
        )
    keyed = heapq.merge(*(_keyed(m, entry[0]) for m, entry in enumerate(per_market)))
    times_all = array("q")
    mks = array(kind)
    in_all = array("q")
    pos = array("l")
    flags_all = bytearray()
    for t, m, k in keyed:
        _, in_ticks, flags = per_market[m]
        times_all.append(t)
        mks.append(m)
        in_all.append(in_ticks[k])
        pos.append(k)
        flags_all.append(flags[k])
    return (
        times_all,
        mks,
        OnTick(in_all, mks, ticks),
        in_all,
        ClosingBars(bars_of, mks, pos),
        bytes(flags_all),
    )


def _keyed(m: int, times: Sequence[int]) -> Iterator[tuple[int, int, int]]:
    return zip(times, repeat(m), range(len(times)))


__all__ = ["GAP", "PATH", "SEEN", "ClosingBars", "OnTick", "merge"]
