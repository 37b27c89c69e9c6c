"""The timeline a backtest walks: every market's price points merged in time order,
rounded to the market's tick and also kept in ticks (the runner's thresholds are), with
what each point is in the bar model (docs/backtests.md, "The bar model").

A point's flags: `PATH`, it continues its market's path from the point before (a bar's
extremes and close), so that the runner walks through the prices in between; `SEEN`,
the strategy is called for it (a trade, or a bar's close once the bar is complete);
`GAP`, the price jumps to it (a bar's open), so resting orders it passes trade at the
ladder's prices there. A trade point is `SEEN` only: the next print, not a walk."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from engine.backtest.errors import BacktestError
from engine.backtest.price_files import Series

PATH = 1
SEEN = 2
GAP = 4
# A bar's four points: open, first extreme, second extreme, close.
_BAR_FLAGS = (GAP, PATH, PATH, PATH | SEEN)


def merge(
    series: dict[str, Series], ticks: list[Decimal]
) -> tuple[list[int], list[int], list[Decimal], list[int], list[Any], list[int]]:
    """One timeline of every market's points: times, market index, price on the tick,
    price in ticks, the bar each point closes (None for most), and each point's flags."""
    per_market = []
    for m, s in enumerate(series.values()):
        tick = ticks[m]
        # Half up to the nearest tick: prices are positive, so the integer part of
        # (price + tick / 2) / tick is the rounded quotient, exactly.
        half = tick / 2
        in_ticks = [int((price + half) // tick) for price in s.prices]
        if in_ticks and min(in_ticks) <= 0:
            k = next(k for k, units in enumerate(in_ticks) if units <= 0)
            raise BacktestError(
                f"{s.market}: price {s.prices[k]} at point {k + 1} rounds to zero on the tick {tick}"
            )
        on_tick = [units * tick for units in in_ticks]
        closing: dict[int, Any] = dict(zip(s.closes, s.bars, strict=True))
        flags = list(_BAR_FLAGS) * len(s.bars) if s.bars else [SEEN] * len(s.times)
        per_market.append((s, on_tick, in_ticks, closing, flags))
    if len(per_market) == 1:
        s, on_tick, in_ticks, closing, flags = per_market[0]
        bars: list[Any] = [None] * len(s.times)
        for k, bar in closing.items():
            bars[k] = bar
        return list(s.times), [0] * len(s.times), on_tick, in_ticks, bars, flags
    keyed = heapq.merge(*(_keyed(m, entry[0].times) for m, entry in enumerate(per_market)))
    times: list[int] = []
    mks: list[int] = []
    prices: list[Decimal] = []
    in_all: list[int] = []
    bars_all: list[Any] = []
    flags_all: list[int] = []
    for t, m, k in keyed:
        _, on_tick, in_ticks, closing, flags = per_market[m]
        times.append(t)
        mks.append(m)
        prices.append(on_tick[k])
        in_all.append(in_ticks[k])
        bars_all.append(closing.get(k))
        flags_all.append(flags[k])
    return times, mks, prices, in_all, bars_all, flags_all


def _keyed(m: int, times: list[int]) -> Iterator[tuple[int, int, int]]:
    return ((t, m, k) for k, t in enumerate(times))


__all__ = ["GAP", "PATH", "SEEN", "merge"]
