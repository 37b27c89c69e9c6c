"""sandex engine: the event-sourced domain and its persistence. Knows nothing of HTTP.

The names below are exported lazily (PEP 562): importing any `engine.*` module runs this
file, and a command that needs only the domain or the backtests must not pay for the
writer, the stores and their drivers."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandex.engine.config.settings import ALL_SCOPES, Settings
    from sandex.engine.kernel.clock import ManualClock, WallClock, format_time, parse_time
    from sandex.engine.kernel.errors import DomainError
    from sandex.engine.runtime.composition import open_engine
    from sandex.engine.runtime.replay import replay
    from sandex.engine.runtime.writer import Engine

_EXPORTS = {
    "ALL_SCOPES": "sandex.engine.config.settings",
    "DomainError": "sandex.engine.kernel.errors",
    "Engine": "sandex.engine.runtime.writer",
    "ManualClock": "sandex.engine.kernel.clock",
    "Settings": "sandex.engine.config.settings",
    "WallClock": "sandex.engine.kernel.clock",
    "format_time": "sandex.engine.kernel.clock",
    "open_engine": "sandex.engine.runtime.composition",
    "parse_time": "sandex.engine.kernel.clock",
    "replay": "sandex.engine.runtime.replay",
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
