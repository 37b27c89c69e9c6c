"""Engine time: the only source of "now" for the domain.

Two kinds: a wall clock (the sandbox default) and a manual clock (tests, scenarios,
backtests). Both are monotonic from the engine's point of view: time never goes
backwards, so events are never reordered by a clock that jumps.
"""

from __future__ import annotations

import threading
import time as _time
from datetime import UTC, datetime, timedelta
from typing import Protocol

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The latest time the engine accepts: far enough from datetime's end (year 9999) that
# every deadline computed from it (expiries, confirmations, GTT) stays representable.
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)
_MICROSECOND = timedelta(microseconds=1)


class Clock(Protocol):
    mode: str

    def now(self) -> datetime: ...

    def observe(self, t: datetime) -> None:
        """Never answer a time earlier than `t` again (events already recorded)."""


class WallClock:
    """Wall time with a floor: a wall clock stepping back answers the floor instead."""

    mode = "wall"

    def __init__(self) -> None:
        self._floor = EPOCH
        self._floor_us = 0  # the floor in microseconds since the epoch, compared cheaply
        self._lock = threading.Lock()

    def now(self) -> datetime:
        wall_us = _time.time_ns() // 1000
        with self._lock:
            if wall_us > self._floor_us:
                self._floor_us = wall_us
                self._floor = EPOCH + timedelta(microseconds=wall_us)
            return self._floor

    def observe(self, t: datetime) -> None:
        with self._lock:
            if t > self._floor:
                self._floor = t
                self._floor_us = (t - EPOCH) // _MICROSECOND


class ManualClock:
    """Time that moves only when told to; used for replay and backtests."""

    mode = "manual"

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start if start is not None else datetime(2024, 1, 1, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("manual clock needs an aware datetime")

    def now(self) -> datetime:
        return self._now

    def set(self, t: datetime) -> None:
        if t < self._now:
            raise ValueError("a manual clock never moves backwards")
        self._now = t

    def observe(self, t: datetime) -> None:
        if t > self._now:
            self._now = t


def format_time(t: datetime) -> str:
    """RFC 3339 UTC with microseconds and `Z`, the wire format of every timestamp."""
    if t.tzinfo is UTC:  # the engine's own times: `isoformat` is C, and ends in +00:00
        return t.isoformat(timespec="microseconds")[:-6] + "Z"
    if t.utcoffset():
        t = t.astimezone(UTC)
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
        f".{t.microsecond:06d}Z"
    )


def parse_time(s: str) -> datetime:
    """Parse RFC 3339; a naive time is refused because it has no meaning here."""
    if s[-1:] == "Z" and len(s) == 27:  # the wire format (`format_time`) as written
        try:
            return datetime.fromisoformat(s)
        except ValueError:
            pass  # said again below, with the text
    text = s.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    t = datetime.fromisoformat(text)
    if t.tzinfo is None:
        raise ValueError(f"time {s!r} has no UTC offset")
    try:
        return t.astimezone(UTC)
    except OverflowError as exc:  # 0001-01-01T00:00:00+14:00 lies before year 1 in UTC
        raise ValueError(f"time {s!r} is out of range") from exc


def from_millis(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def to_millis(t: datetime) -> int:
    return (t - EPOCH) // _MILLISECOND
