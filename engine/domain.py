"""The domain's registries: which function decides each command, which applies each
event, which handles each kind of deadline. Each domain module contributes its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine import customers, fees, funding, internal_transfers, orders, transfers, withdrawals
from engine.state import Applier, Ctx

Decider = Callable[[Ctx, Any], Any]
TimerHandler = Callable[[Ctx, str], None]

DECIDERS: dict[type, Decider] = {}
APPLIERS: dict[str, Applier] = {}
TIMERS: dict[str, TimerHandler] = {}


def _clock_advanced(state: Any, event: Any) -> None:
    state.ext["clock_to"] = event.data["to"]


def register(
    deciders: Mapping[Any, Any] | None = None,
    appliers: Mapping[str, Any] | None = None,
    timers: Mapping[str, Any] | None = None,
) -> None:
    """Add a domain module's functions; a name registered twice is a programming error."""
    _merge(DECIDERS, deciders)
    _merge(APPLIERS, appliers)
    _merge(TIMERS, timers)


def _merge(registry: dict[Any, Any], extra: Mapping[Any, Any] | None) -> None:
    if not extra:
        return
    clash = set(registry) & set(extra)
    if clash:
        raise ValueError(f"registered twice: {sorted(map(str, clash))}")
    registry.update(extra)


register(customers.DECIDERS, customers.APPLIERS)
register(appliers=transfers.APPLIERS)
register(funding.DECIDERS, funding.APPLIERS, funding.TIMERS)
register(fees.DECIDERS, fees.APPLIERS, fees.TIMERS)
register(withdrawals.DECIDERS, withdrawals.APPLIERS, withdrawals.TIMERS)
register(internal_transfers.DECIDERS)
register(orders.DECIDERS, orders.APPLIERS, orders.TIMERS)
register(appliers={"ClockAdvanced": _clock_advanced})
