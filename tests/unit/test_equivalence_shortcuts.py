"""Smaller shortcuts that had no equivalence test (the order types' shapes shortcut is
pinned by tests/unit/test_order_types.py): the amount precision check that reads the
text before normalizing, the tick check by `divmod`, the integer parameters' digit count
before any conversion, and the market data timestamp's quick parse. Each against its
general path or a plain definition, on every combination or generated values."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal, localcontext
from fractions import Fraction

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sandex.engine.backtest.price_files import parse_timestamp
from sandex.engine.domain.trading import placement
from sandex.engine.domain.trading.amount_texts import price_ticks
from sandex.engine.domain.trading.market import new_markets
from sandex.engine.kernel.errors import DomainError, ExceedPrecision
from sandex.engine.kernel.money import CONTEXT, MARKETS, check_step
from sandex.engine.read.params import MAX_INT64, int_fault

amount_texts = st.builds(
    lambda whole, fraction, zeros: f"{whole}.{fraction}{'0' * zeros}" if fraction else whole,
    st.sampled_from(("0", "1", "12", "007", "123456789012345678901234567890")),
    st.one_of(st.just(""), st.from_regex(r"[0-9]{1,20}", fullmatch=True)),
    st.integers(0, 12),
)


@settings(max_examples=500, derandomize=True, deadline=None)
@given(amount_texts, st.sampled_from((0, 2, 6, 8, 9, 18)))
@example("1.10000000000", 2)
@example("0.000000001", 8)
@example("0.00000000100", 8)
def test_the_precision_check_from_the_text_is_the_normalized_decimal_s(
    text: str, places: int
) -> None:
    value = Decimal(text)
    if value == 0:
        return  # refused as not positive before precision, by parse_amount
    exponent = value.normalize().as_tuple().exponent
    assert isinstance(exponent, int)
    too_precise = -exponent > places
    if too_precise:
        with pytest.raises(ExceedPrecision):
            placement._amount(text, "base_amount", "BTC", places)
    else:
        assert placement._amount(text, "base_amount", "BTC", places) == value


@settings(max_examples=500, derandomize=True, deadline=None)
@given(
    st.sampled_from(sorted(MARKETS)),
    st.integers(1, 10**40),
    st.integers(0, 6),
    st.integers(0, 20),
)
@example("BTCUSD", 4_250_025, 2, 0)  # 42500.25: whole ticks
@example("BTCUSD", 4_250_010, 2, 3)  # 42500.10000: not
@example("MATICUSD", 10**40, 4, 20)  # 61 characters
def test_the_tick_check_by_divmod_is_the_exact_quotient(
    market: str, units: int, places: int, zeros: int
) -> None:
    """A price is its whole number of ticks, or refused with the step check's words."""
    digits = str(units)
    text = f"{digits[:-places]}.{digits[-places:]}{'0' * zeros}" if places else digits
    if text.startswith("."):
        text = "0" + text
    mk = new_markets()[market]
    with localcontext(CONTEXT):  # the writer's context: 64 digits divide exactly
        value = Decimal(text)
        quotient = Fraction(value) / Fraction(mk.tick)
        if quotient.denominator == 1:
            assert price_ticks(text, "price", mk.tick) == quotient.numerator
        else:
            with pytest.raises(DomainError) as expected:
                check_step(value, mk.tick, "price", "tick size")
            with pytest.raises(DomainError) as refused:
                price_ticks(text, "price", mk.tick)
            assert str(refused.value) == str(expected.value)


@contextmanager
def any_int_length() -> Iterator[None]:
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(limit)


def _plain_fault(text: str, low: int, high: int) -> str | None:
    unsigned = text.removeprefix("-")
    if not unsigned or not all("0" <= c <= "9" for c in unsigned):
        return "digits"
    if unsigned != text and not unsigned.strip("0"):
        return "digits"  # a signed zero
    with any_int_length():
        value = int(text)
    if value > high:
        return "above"
    if value < low:
        return "below"
    return None


@settings(max_examples=500, derandomize=True, deadline=None)
@given(
    st.one_of(
        st.from_regex(r"0{0,30}[0-9]{0,25}", fullmatch=True),
        st.text(max_size=6),
        st.integers(-(2**70), 2**70).map(str),
    ),
    st.sampled_from(((0, MAX_INT64), (1, 100), (5, 5), (0, 0), (10, 2**64))),
)
@example("0" * 5000 + "7", (1, 100))
@example("9" * 5000, (0, MAX_INT64))
@example("²", (0, 100))
@example("-7", (0, 100))
@example("-000", (0, 100))
def test_integer_parameters_are_judged_as_their_value(text: str, bounds: tuple[int, int]) -> None:
    low, high = bounds
    assert int_fault(text, low, high) == _plain_fault(text, low, high)


offsets = st.sampled_from([0, 60, -300, 330, 345, -720, 840]).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@settings(max_examples=500, derandomize=True, deadline=None)
@given(
    st.datetimes(
        min_value=datetime(1971, 1, 1), max_value=datetime(2999, 12, 31), timezones=offsets
    ),
    st.sampled_from(("auto", "seconds", "milliseconds", "microseconds")),
    st.sampled_from(("offset", "Z", "z")),
    st.booleans(),
)
def test_a_timestamp_parsed_quickly_is_the_instant_it_names(
    t: datetime, timespec: str, utc: str, padded: bool
) -> None:
    """The quick parse of a time as written, or the general one of any other spelling
    (a lower-case z, spaces around), gives the instant itself."""
    text = t.isoformat(timespec=timespec)
    if utc != "offset" and t.utcoffset() == timedelta(0):
        text = text.removesuffix("+00:00") + utc
    if padded:
        text = f"  {text} "
    kept = {"seconds": 1_000_000, "milliseconds": 1_000}.get(timespec, 1)
    instant = t.replace(microsecond=t.microsecond // kept * kept)
    assert parse_timestamp(text) == (instant - EPOCH) // timedelta(microseconds=1)
