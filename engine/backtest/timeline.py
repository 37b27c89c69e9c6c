"""The timeline a backtest walks: every market's price points merged in time order,
rounded to the market's tick and also kept in ticks (the runner's thresholds are)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from engine.backtest.errors import BacktestError
from engine.backtest.price_files import Series


def merge(
    series: dict[str, Series], ticks: list[Decimal]
) -> tuple[list[int], list[int], list[Decimal], list[int], list[Any]]:
    """One timeline of every market's points: times, market index, price on the tick,
    price in ticks, and the bar each point closes (None for most)."""
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
        per_market.append((s, on_tick, in_ticks, closing))
    if len(per_market) == 1:
        s, on_tick, in_ticks, closing = per_market[0]
        bars: list[Any] = [None] * len(s.times)
        for k, bar in closing.items():
            bars[k] = bar
        return list(s.times), [0] * len(s.times), on_tick, in_ticks, bars
    keyed = heapq.merge(*(_keyed(m, entry[0].times) for m, entry in enumerate(per_market)))
    times: list[int] = []
    mks: list[int] = []
    prices: list[Decimal] = []
    in_all: list[int] = []
    bars_all: list[Any] = []
    for t, m, k in keyed:
        _, on_tick, in_ticks, closing = per_market[m]
        times.append(t)
        mks.append(m)
        prices.append(on_tick[k])
        in_all.append(in_ticks[k])
        bars_all.append(closing.get(k))
    return times, mks, prices, in_all, bars_all


def _keyed(m: int, times: list[int]) -> Iterator[tuple[int, int, int]]:
    return ((t, m, k) for k, t in enumerate(times))


__all__ = ["merge"]
