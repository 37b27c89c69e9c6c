"""sandex engine: the event-sourced domain and its persistence. Knows nothing of HTTP."""

from engine.clock import ManualClock, WallClock, format_time, parse_time
from engine.engine import Engine, replay
from engine.errors import DomainError
from engine.settings import ALL_SCOPES, Settings

__all__ = [
    "ALL_SCOPES",
    "DomainError",
    "Engine",
    "ManualClock",
    "Settings",
    "WallClock",
    "format_time",
    "parse_time",
    "replay",
]
