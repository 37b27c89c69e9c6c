"""The integer texts of the order path (`units_text`, `price_text`, the VWAP's `_vwap`
and `vwap_text`) against exact Decimal and Fraction arithmetic and `format(…, "f")`
(tests/support/equivalence_helpers.py): every market's tick, other tick sizes, zero, negative
and large values.

Already covered: tests/unit/test_hot_path_texts.py holds `_gross_text` to the normalized
Decimal product for every market (so it is not repeated here); one VWAP with a
half-up tie is checked through the API in tests/api/test_orders_matching.py."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from decimal import ROUND_HALF_UP, Decimal, localcontext

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sandex.engine.domain.trading import amount_texts
from sandex.engine.domain.trading.amount_texts import price_text, units_text, vwap_text
from sandex.engine.domain.trading.market import new_markets
from sandex.engine.kernel.money import CONTEXT, MARKETS, MarketSpec
from tests.support import equivalence_helpers as plain

MARKET_NAMES = sorted(MARKETS)
EDGES = [0, 1, 99_999_999, 100_000_000, 100_000_001, 10**18, 10**27 - 1, 10**27, 10**40 + 7]
quantities = st.one_of(st.sampled_from(EDGES), st.integers(0, 10**9), st.integers(0, 10**45))
signed = st.one_of(quantities, quantities.map(lambda n: -n))


@settings(max_examples=500, derandomize=True, deadline=None)
@given(signed)
def test_units_text_is_the_decimal_amount_with_8_places(units: int) -> None:
    with localcontext(CONTEXT):  # the writer's context, as views are built
        assert units_text(units) == plain.units_text(units)
    if units >= 0:  # the integer path leans on no context at all
        assert units_text(units) == plain.units_text(units)


@settings(max_examples=500, derandomize=True, deadline=None)
@given(st.sampled_from(MARKET_NAMES), signed)
def test_price_text_of_every_market_is_its_tick_times_the_ticks(market: str, ticks: int) -> None:
    expected = plain.price_text(MARKETS[market].tick, ticks)
    with localcontext(CONTEXT):
        assert price_text(market, ticks) == expected
    if ticks >= 0:
        assert price_text(market, ticks) == expected


@contextmanager
def market_with_tick(tick: Decimal) -> Iterator[str]:
    """A market of this tick size, known to the texts for the block's length."""
    name = "TESTUSD"
    with pytest.MonkeyPatch.context() as m:
        m.setitem(MARKETS, name, MarketSpec(name, "TEST", "USD", tick))
        m.setitem(amount_texts._TICKS, name, amount_texts._tick_text(tick))
        yield name


tick_sizes = st.builds(
    lambda digits, exponent: Decimal(digits).scaleb(exponent),
    st.integers(1, 10**6),
    st.integers(-12, 3),
)


@settings(max_examples=500, derandomize=True, deadline=None)
@given(tick_sizes, signed, quantities, st.integers(0, 10**18))
@example(Decimal("5E+1"), 3, 10, 3)  # a whole tick with an exponent
@example(Decimal("1.0"), 7, 1, 2)  # a tick written with a trailing zero
@example(Decimal("0.25"), 1, 1, 8)  # exactly half a unit of the 8th place: up
def test_texts_of_any_tick_size_are_exact(
    tick: Decimal, ticks: int, spent: int, filled: int
) -> None:
    with market_with_tick(tick) as name, localcontext(CONTEXT):
        assert price_text(name, ticks) == plain.price_text(tick, ticks)
        assert amount_texts.order_vwap_text(name, spent, filled) == plain.vwap_text(
            tick, spent, filled
        )


@settings(max_examples=500, derandomize=True, deadline=None)
@given(
    st.sampled_from(MARKET_NAMES),
    st.one_of(st.just(0), st.integers(0, 10**18), st.integers(0, 10**30)),
    st.one_of(st.just(0), st.just(1), st.just(3), st.integers(0, 10**18)),
)
@example("MATICUSD", 9_000 * 19_999 + 9_001, 20_000)  # 0.900000005: a tie, rounded up
@example("BTCUSD", 10**30, 10**18 - 1)
def test_vwap_text_is_the_exact_quotient_rounded_half_up(
    market: str, spent: int, filled: int
) -> None:
    """Exact, and the same as the 60-digit Decimal division and quantize it replaces."""
    mk = new_markets()[market]
    expected = plain.vwap_text(mk.tick, spent, filled)
    assert amount_texts.order_vwap_text(market, spent, filled) == expected
    assert vwap_text(mk, spent, filled) == expected
    if filled:
        with localcontext() as c:
            c.prec = 60
            replaced = Decimal(spent) * mk.tick / Decimal(filled)
            assert format(replaced.quantize(Decimal("1E-8"), ROUND_HALF_UP), "f") == expected
