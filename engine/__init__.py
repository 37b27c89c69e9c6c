"""sandex engine: the event-sourced domain and its persistence. Knows nothing of HTTP.

The names below are exported lazily (PEP 562): importing any `engine.*` module runs this
file, and a command that needs only the domain or the backtests must not pay for the
writer, the stores and their drivers."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.config.settings import ALL_SCOPES, Settings
    from engine.kernel.clock import ManualClock, WallClock, format_time, parse_time
    from engine.kernel.errors import DomainError
    from engine.runtime.composition import open_engine
    from engine.runtime.replay import replay
    from engine.runtime.writer import Engine

_EXPORTS = {
    "ALL_SCOPES": "engine.config.settings",
    "DomainError": "engine.kernel.errors",
    "Engine": "engine.runtime.writer",
    "ManualClock": "engine.kernel.clock",
    "Settings": "engine.config.settings",
    "WallClock": "engine.kernel.clock",
    "format_time": "engine.kernel.clock",
    "open_engine": "engine.runtime.composition",
    "parse_time": "engine.kernel.clock",
    "replay": "engine.runtime.replay",
}

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
