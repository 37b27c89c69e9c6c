"""Engine time: manual and wall clocks, and the wire format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from freezegun import freeze_time

from engine.kernel.clock import (
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
