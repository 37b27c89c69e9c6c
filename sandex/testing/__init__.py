"""sandex inside a user's test suite: the pytest plugin's public names (docs/testing.md).

Each is imported when first asked for: pytest imports this package for the plugin in
every run of an environment sandex is installed in, used or not, and the server's
client (httpx, `sandex.client`) is not what an unused plugin should cost."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sandex.testing._defaults import DEFAULT_BALANCES, DEFAULT_START

if TYPE_CHECKING:
    from sandex.testing._server import SandexServer
    from sandex.testing._world import Clock, Faults, SandexWorld, Template, default_template

# Each lazy name's module.
_LAZY = {
    "SandexServer": "sandex.testing._server",
    "Clock": "sandex.testing._world",
    "Faults": "sandex.testing._world",
    "SandexWorld": "sandex.testing._world",
    "Template": "sandex.testing._world",
    "default_template": "sandex.testing._world",
}

__all__ = [
    "DEFAULT_BALANCES",
    "DEFAULT_START",
    "Clock",
    "Faults",
    "SandexServer",
    "SandexWorld",
    "Template",
    "default_template",
]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
