"""Engine time: manual and wall clocks, and the wire format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from freezegun import freeze_time
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sandex.engine.kernel.clock import (
    ManualClock,
    WallClock,
    format_time,
    from_millis,
    parse_time,
    to_millis,
)


def test_a_manual_clock_moves_only_forward_when_told() -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    clock = ManualClock(start)
    assert clock.now() == start
    clock.set(start + timedelta(seconds=5))
    assert clock.now() == start + timedelta(seconds=5)
    with pytest.raises(ValueError):
        clock.set(start)
    clock.observe(start)  # an older observation changes nothing
    assert clock.now() == start + timedelta(seconds=5)


def test_a_wall_clock_that_jumps_back_answers_its_floor() -> None:
    clock = WallClock()
    with freeze_time("2030-06-01 12:00:00"):
        first = clock.now()
    with freeze_time("2030-06-01 11:00:00"):
        assert clock.now() == first
    with freeze_time("2030-06-01 12:00:01"):
        assert clock.now() == first + timedelta(seconds=1)


def test_a_wall_clock_never_answers_before_the_last_recorded_event() -> None:
    clock = WallClock()
    future = datetime(2100, 1, 1, tzinfo=UTC)
    clock.observe(future)
    assert clock.now() == future


def test_times_are_rfc3339_utc_with_microseconds_and_z() -> None:
    t = datetime(2024, 1, 28, 0, 48, 0, 222744, tzinfo=UTC)
    assert format_time(t) == "2024-01-28T00:48:00.222744Z"
    assert parse_time("2024-01-28T00:48:00.222744Z") == t
    assert parse_time("2024-01-28T01:48:00.222744+01:00") == t
    with pytest.raises(ValueError):
        parse_time("2024-01-28T00:48:00")
    assert to_millis(from_millis(1706402880222)) == 1706402880222


def _spelled_out(t: datetime) -> str:
    """The wire format by its definition, field by field."""
    t = t.astimezone(UTC)
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
        f".{t.microsecond:06d}Z"
    )


@settings(max_examples=500, derandomize=True, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), timezones=st.just(UTC)))
@example(datetime(5, 1, 1, tzinfo=UTC))
@example(datetime(2024, 1, 1, 0, 0, 0, 0, tzinfo=UTC))
def test_the_engine_times_quick_format_and_parse_are_the_definitions(t: datetime) -> None:
    """An engine time (tzinfo UTC) is formatted by `isoformat` and its text parsed by
    `fromisoformat` directly: the same text and instant as the general paths."""
    text = format_time(t)
    assert text == _spelled_out(t)
    assert parse_time(text) == t
    assert parse_time(f" {text} ") == t  # the general path: spaces around it
    assert format_time(t.astimezone(timezone(timedelta(hours=-3)))) == text


def test_a_wall_clock_answers_the_later_of_its_time_and_its_observations() -> None:
    clock = WallClock()
    with freeze_time("2030-06-01 12:00:00"):
        assert format_time(clock.now()) == "2030-06-01T12:00:00.000000Z"
    clock.observe(datetime(2030, 6, 1, 12, 0, 1, 500001, tzinfo=UTC))
    with freeze_time("2030-06-01 12:00:01"):  # behind the observed floor
        assert format_time(clock.now()) == "2030-06-01T12:00:01.500001Z"
    with freeze_time("2030-06-01 12:00:02"):
        assert format_time(clock.now()) == "2030-06-01T12:00:02.000000Z"
