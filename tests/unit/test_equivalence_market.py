"""The market's precomputed views against the step-by-step definitions they stand for:
the watch window's best prices and last price (a still path's shortcut and the noisy
path's run) against each step's fresh ladder and last price, and the cached ladder with
what was taken against the fresh ladder less a plain record of consumption.

Already covered: tests/unit/test_book.py holds `first_cross` to a scan of the window's own
lists and `Noise.run` to `Noise.at`, not the lists to the ladder they summarize, nor
the ladder cache to a fresh ladder after consumptions and price changes."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sandex.engine.config.settings import Settings
from sandex.engine.domain.trading.book import BUY, SELL
from sandex.engine.domain.trading.ladder import best_price
from sandex.engine.domain.trading.market import Market, MarketConfig
from sandex.engine.kernel.money import MARKETS

NAMES = sorted(MARKETS)


def config(volatility: str, **extra: Any) -> MarketConfig:
    return MarketConfig.of(
        Settings(market_volatility=Decimal(volatility), market_watch_steps=64, **extra)
    )


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    st.sampled_from(NAMES),
    st.sampled_from(("0", "0.03", "0.8")),
    st.sampled_from(({}, {"market_spread_bps": Decimal(0)}, {"market_levels": 1})),
    st.one_of(st.none(), st.sampled_from(("0.0001", "1", "42500.25", "3"))),
    st.integers(0, 10**7),
    st.integers(1, 500),
)
def test_the_watch_window_shows_each_step_s_fresh_ladder_and_last_price(
    name: str,
    volatility: str,
    extra: dict[str, Any],
    anchor: str | None,
    step: int,
    ahead: int,
) -> None:
    cfg = config(volatility, **extra)
    seed = 7
    mk, fresh = Market(MARKETS[name]), Market(MARKETS[name])
    if anchor is not None:
        price = Decimal(anchor).quantize(mk.tick) or mk.tick
        for m in (mk, fresh):
            m.set_anchor(price, step, 5)
    first = step + ahead  # the window looks at steps after the last print
    window = mk.window_at(cfg, seed, first)
    assert window.start == first and window.end == first + 64
    for i in range(64):
        k = first + i
        asks, bids = fresh.fresh_ladder(cfg, seed, k)
        assert window.ask[i] == asks[0][0], (i, "ask")
        if bids:
            assert window.bid[i] == bids[0][0], (i, "bid")
        else:
            assert window.bid[i] < 1, (i, "no bid")
        assert window.last[i] == fresh.last_price(cfg, seed, k), (i, "last")


# What happens to a market between two reads of its ladder.
action = st.one_of(
    st.tuples(
        st.just("consume"),
        st.integers(0, 2),
        st.sampled_from((BUY, SELL)),
        st.lists(st.tuples(st.integers(0, 9), st.integers(1, 10**8)), max_size=3),
    ),
    st.tuples(st.just("price"), st.integers(0, 2), st.sampled_from(("42000", "43000.5"))),
    st.tuples(st.just("read"), st.integers(0, 2), st.sampled_from((BUY, SELL))),
)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.sampled_from(("0", "0.03")), st.lists(action, max_size=25))
@example("0", [("read", 0, SELL), ("consume", 0, SELL, [(0, 1000)]), ("read", 0, SELL)])
def test_the_cached_ladder_is_the_fresh_ladder_less_what_its_step_took(
    volatility: str, actions: list[tuple[Any, ...]]
) -> None:
    cfg = config(volatility)
    seed = 7
    mk = Market(MARKETS["BTCUSD"])
    position = 0
    taken: dict[tuple[int, int], int] = {}  # (side, ticks) -> units, at `taken_at` only
    taken_at: tuple[int, int] | None = None  # (anchor position, step)
    anchors: list[tuple[Decimal, int, int]] = []
    for act in actions:
        kind, step = act[0], act[1]
        if kind == "price":
            position += 1
            anchors.append((Decimal(act[2]), step, position))
            mk.set_anchor(Decimal(act[2]), step, position)
            continue
        side = act[2]
        plain = Market(MARKETS["BTCUSD"])  # no cache, no consumption
        for anchor in anchors[-1:]:
            plain.set_anchor(*anchor)
        asks, bids = plain.fresh_ladder(cfg, seed, step)
        levels = asks if side == SELL else bids
        if kind == "consume":
            used = [[levels[i % len(levels)][0], units] for i, units in act[3]]
            mk.consume(step, side, used)
            if taken_at != (position, step):
                taken, taken_at = {}, (position, step)
            for ticks, units in used:
                taken[(side, ticks)] = taken.get((side, ticks), 0) + units
            continue
        here = taken if taken_at == (position, step) else {}
        expected = [[t, max(u - here.get((side, t), 0), 0)] for t, u in levels]
        # the best price first: on a still ladder it is computed alone when not cached
        assert mk.ladder_top(cfg, seed, step, side) == best_price(None, expected, side)
        assert mk.ladder_side(cfg, seed, step, side) == expected


@settings(max_examples=300, derandomize=True, deadline=None)
@given(
    st.sampled_from(NAMES),
    st.sampled_from(("0", "0.03")),
    st.sampled_from((Decimal(0), Decimal(1), Decimal(10), Decimal("2.5"), Decimal(20000))),
    st.integers(1, 3),
    # a level worth less than one base unit at the price shows 0 units: the best is then
    # a later level, or none
    st.sampled_from((Decimal("50000"), Decimal("0.000001"), Decimal("0.0005"))),
    st.sampled_from(("0.0001", "0.25", "1", "42500.25", "3", "987654.5")),
    st.integers(0, 10**6),
    st.sampled_from((BUY, SELL)),
)
def test_the_ladder_s_best_price_is_its_first_level_with_units_left(
    name: str,
    volatility: str,
    spread: Decimal,
    levels: int,
    notional: Decimal,
    anchor: str,
    step: int,
    side: int,
) -> None:
    cfg = config(
        volatility,
        market_spread_bps=spread,
        market_levels=levels,
        market_level_notional=notional,
    )
    mk, plain = Market(MARKETS[name]), Market(MARKETS[name])
    price = Decimal(anchor).quantize(mk.tick) or mk.tick
    for m in (mk, plain):
        m.set_anchor(price, step, 3)
    expected = best_price(None, plain.ladder_side(cfg, 7, step, side), side)
    assert mk.ladder_top(cfg, 7, step, side) == expected
