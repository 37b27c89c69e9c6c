"""The synthetic ladder's prices are exact tick integers (issue 17, float rounding).

On a still path (a backtest's) the reference is a whole number of ticks and every level
is the exact ceil/floor of ticks x (1 +/- offset), in integers. On a moving path (a
float reference) a price on a tick still comes out exactly, and any other within a
relative tolerance far below a tick.
"""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from sandex.engine.domain.trading.ladder import fresh_levels, still_crossings, window_ahead
from sandex.engine.domain.trading.market import MarketConfig
from sandex.engine.kernel.money import MARKETS
from tests.conftest import make_settings

TICKS = sorted({spec.tick for spec in MARKETS.values()})


def _cfg(spread_bps: int, levels: int = 3) -> MarketConfig:
    return MarketConfig(
        step_us=1_000_000,
        sigma_step=0.0,
        half_spread=float(spread_bps) / 20000.0,
        level_step=float(5) / 10000.0,
        levels=levels,
        level_notional=10_000.0,
        watch_steps=4,
        maker_fee=Decimal(0),
        taker_fee=Decimal(0),
        latency_us=0,
        start_prices={},
    )


def _best(price: Decimal, tick: Decimal, spread_bps: int) -> tuple[int, int, int, int]:
    """(bid, ask) of the fresh ladder, then of the still window, in ticks."""
    cfg = _cfg(spread_bps)
    asks, bids = fresh_levels(cfg, float(price), float(tick))
    window = window_ahead(cfg, 0, float(tick), float(price), None)
    return bids[0][0], asks[0][0], window.bid[0], window.ask[0]


def test_zero_spread_on_a_cent_tick() -> None:
    # 481.78 / 0.01 is 48177.99999999999 in binary floating point.
    assert 481.78 / 0.01 < 48178
    assert _best(Decimal("481.78"), Decimal("0.01"), 0) == (48178, 48178, 48178, 48178)


def test_zero_spread_on_a_five_cent_tick() -> None:
    # 1.15 / 0.05 is 22.999999999999996 in binary floating point.
    assert 1.15 / 0.05 < 23
    assert _best(Decimal("1.15"), Decimal("0.05"), 0) == (23, 23, 23, 23)


def test_spread_on_a_cent_tick() -> None:
    # 20 bps: half a spread is 10 bps of 580.00 = 0.58, so bid 579.42 and ask 580.58
    # exactly (580.00 x 0.999 / 0.01 is 57941.99999999999 in floating point).
    assert 580.00 * (1.0 - 20 / 20000.0) / 0.01 < 57942
    assert _best(Decimal("580.00"), Decimal("0.01"), 20) == (57942, 58058, 57942, 58058)
    # Off a whole tick the spread rounds outwards: 100.01 +/- 0.10001.
    assert _best(Decimal("100.01"), Decimal("0.01"), 20) == (9990, 10012, 9990, 10012)


def test_later_levels_step_away() -> None:
    cfg = _cfg(0, levels=3)
    asks, bids = fresh_levels(cfg, 481.78, 0.01)
    assert [t for t, _ in asks] == [48178, 48203, 48227]
    assert [t for t, _ in bids] == [48178, 48153, 48129]


@settings(max_examples=400, deadline=None)
@given(
    tick=st.sampled_from(TICKS),
    n=st.integers(min_value=2, max_value=10**9),
    spread_bps=st.sampled_from([0, 0, 1, 2, 5, 10, 25, 50, 100, 333]),
)
def test_whole_tick_prices(tick: Decimal, n: int, spread_bps: int) -> None:
    price = n * tick
    bid, ask, w_bid, w_ask = _best(price, tick, spread_bps)
    assert (w_bid, w_ask) == (bid, ask)
    if spread_bps == 0:
        assert bid == ask == n
        return
    assert bid <= n <= ask
    h = Decimal(spread_bps) / 20000
    up = n * (1 + h)
    down = n * (1 - h)
    assert math.floor(up) <= ask <= math.ceil(up)
    assert math.floor(down) <= bid <= math.ceil(down)
    # Away from a whole tick (by more than the tolerance) the rounding is exact.
    if up - math.floor(up) > up * Decimal("1e-11"):
        assert ask == math.ceil(up)
    if math.ceil(down) - down > down * Decimal("1e-11"):
        assert bid == math.floor(down)


SPREADS = ["0", "1", "2.5", "10", "20", "33.3", "100", "0.01"]


@settings(max_examples=500, deadline=None)
@given(
    market=st.sampled_from(sorted(MARKETS)),
    n=st.integers(min_value=1, max_value=10**10),
    spread_bps=st.sampled_from(SPREADS),
    step_bps=st.sampled_from(["0", "5", "7.5"]),
)
def test_a_still_ladder_is_exact_integer_arithmetic(
    market: str, n: int, spread_bps: str, step_bps: str
) -> None:
    """Every market's tick, any reference on it: each level is the exact rational
    ceil (asks) or floor (bids) of n x (1 +/- (half spread + i x step)), or one tick past
    the level before when those coincide; the still window agrees."""
    tick = MARKETS[market].tick
    cfg = MarketConfig.of(
        make_settings(market_spread_bps=spread_bps, market_level_step_bps=step_bps, market_levels=4)
    )
    asks, bids = fresh_levels(cfg, float(n * tick), float(tick), n)
    window = window_ahead(cfg, 0, float(tick), float(n * tick), None, n)
    assert (window.ask[0], window.bid[0]) == (asks[0][0], bids[0][0] if bids else window.bid[0])
    prev_ask, prev_bid = 0, None
    for i, (ask, _) in enumerate(asks):
        offset = Fraction(spread_bps) / 20000 + i * Fraction(step_bps) / 10000
        assert ask == max(math.ceil(n * (1 + offset)), prev_ask + 1)
        prev_ask = ask
    for i, (bid, _) in enumerate(bids):
        offset = Fraction(spread_bps) / 20000 + i * Fraction(step_bps) / 10000
        exact = math.floor(n * (1 - offset))
        assert bid == (exact if prev_bid is None else min(exact, prev_bid - 1))
        prev_bid = bid


@settings(max_examples=300, deadline=None)
@given(
    best=st.integers(min_value=1, max_value=10**10),
    spread_bps=st.sampled_from(SPREADS),
)
def test_still_crossings_are_the_exact_first_references(best: int, spread_bps: str) -> None:
    """The reference at which the still ladder's ask first reaches a resting bid (its
    bid a resting ask): the backtest sets exactly that price on its walk through a bar."""
    cfg = MarketConfig.of(make_settings(market_spread_bps=spread_bps))
    low, high = still_crossings(cfg, best, best)
    h = Fraction(spread_bps) / 20000

    def ask(r: int) -> int:
        return math.ceil(r * (1 + h))

    def bid(r: int) -> int:
        return math.floor(r * (1 - h))

    assert ask(low) <= best < ask(low + 1)
    assert bid(high) >= best > bid(high - 1)
