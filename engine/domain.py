"""The domain's registries: which function decides each command, which applies each
event, which handles each kind of deadline. Each domain module contributes its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine import customers, funding, transfers
from engine.state import Applier, Ctx

Decider = Callable[[Ctx, Any], Any]
TimerHandler = Callable[[Ctx, str], None]

DECIDERS: dict[type, Decider] = {}
APPLIERS: dict[str, Applier] = {}
TIMERS: dict[str, TimerHandler] = {}


def _clock_advanced(state: Any, event: Any) -> None:
    state.ext["clock_to"] = event.data["to"]


def register(
    deciders: dict[type, Decider] | None = None,
    appliers: dict[str, Applier] | None = None,
    timers: dict[str, TimerHandler] | None = None,
) -> None:
    for registry, extra in ((DECIDERS, deciders), (APPLIERS, appliers), (TIMERS, timers)):
        if not extra:
            continue
        clash = set(registry) & set(extra)  # type: ignore[arg-type]
        if clash:
            raise ValueError(f"registered twice: {sorted(map(str, clash))}")
        registry.update(extra)  # type: ignore[attr-defined]


register(customers.DECIDERS, customers.APPLIERS)
register(appliers=transfers.APPLIERS)
register(funding.DECIDERS, funding.APPLIERS, funding.TIMERS)
register(appliers={"ClockAdvanced": _clock_advanced})
