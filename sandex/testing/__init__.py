"""sandex inside a user's test suite: the pytest plugin's public names (docs/testing.md)."""

from sandex.testing._server import SandexServer
from sandex.testing._world import (
    DEFAULT_BALANCES,
    DEFAULT_START,
    Clock,
    Faults,
    SandexWorld,
    Template,
    default_template,
)

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
