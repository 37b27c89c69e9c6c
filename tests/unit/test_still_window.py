"""The still window (sandex.engine.domain.trading.ladder.StillWindow) answers what the general
window answers when every one of its steps holds the same ladder and last price: it
stands for that window in O(1), so a backtest's price set builds no lists."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sandex.engine.domain.trading.ladder import StillWindow, Window, window_ahead
from sandex.engine.domain.trading.market import MarketConfig

N = 70  # more than two of the general window's blocks, and a part of one


@given(
    st.integers(0, 10**6),
    st.integers(1, N),
    # prices in a narrow range, so that a best price often equals a threshold
    st.integers(1, 12),
    st.integers(-1, 12),
    st.integers(1, 12),
    st.integers(-1, 13),
    st.integers(-1, 13),
    st.integers(-1, 13),
    st.integers(0, N + 3),
)
@settings(max_examples=300, deadline=None)
# each threshold met exactly, alone; and a step just past the window's end
@example(0, 40, 5, 3, 8, 5, 9, 2, 0)
@example(0, 40, 5, 3, 8, 2, 3, 2, 39)
@example(0, 40, 5, 3, 8, 2, 9, 8, 1)
@example(0, 40, 5, 3, 8, 5, 9, 8, 40)
def test_the_still_window_finds_the_first_cross_of_a_window_of_equal_steps(
    start: int,
    n: int,
    ask: int,
    bid: int,
    last: int,
    best_bid: int,
    best_ask: int,
    top_stop: int,
    ahead: int,
) -> None:
    still = StillWindow(start, n, ask, bid, last)
    general = Window(start, [ask] * n, [bid] * n, [last] * n)
    assert (still.start, still.end) == (general.start, general.end)
    assert [still.ask[i] for i in range(n)] == general.ask
    assert [still.bid[i] for i in range(n)] == general.bid
    assert [still.last[i] for i in range(n)] == general.last
    k = start + ahead
    assert still.first_cross(k, best_bid, best_ask, top_stop) == general.first_cross(
        k, best_bid, best_ask, top_stop
    )


@given(st.integers(1, 10**9), st.integers(0, 50), st.integers(1, N))
def test_a_still_path_s_window_is_a_still_window(ticks: int, spread_bps: int, n: int) -> None:
    cfg = MarketConfig(
        step_us=1_000_000,
        sigma_step=0.0,
        half_spread=spread_bps / 20000.0,
        level_step=5 / 10000.0,
        levels=3,
        level_notional=10_000.0,
        watch_steps=n,
        maker_fee=Decimal(0),
        taker_fee=Decimal(0),
        latency_us=0,
        start_prices={},
        offsets=(spread_bps, 10, 20000),
    )
    window = window_ahead(cfg, 5, 0.25, ticks * 0.25, None, ticks)
    assert isinstance(window, StillWindow)
    assert (window.start, window.end, len(window.ask)) == (5, 5 + n, n)
