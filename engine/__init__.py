"""sandex engine: the event-sourced domain and its persistence. Knows nothing of HTTP."""

from engine.config.settings import ALL_SCOPES, Settings
from engine.kernel.clock import ManualClock, WallClock, format_time, parse_time
from engine.kernel.errors import DomainError
from engine.runtime.composition import open_engine
from engine.runtime.replay import replay
from engine.runtime.writer import Engine

__all__ = [
    "ALL_SCOPES",
    "DomainError",
    "Engine",
    "ManualClock",
    "Settings",
    "WallClock",
    "format_time",
    "open_engine",
    "parse_time",
    "replay",
]
