"""The domain's registries: which function decides each command, which applies each
event, which handles each kind of deadline. Each domain module contributes its own."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from engine.domain import customers, feed, sandbox_snapshots, trading, webhook_registrations
from engine.domain.transfers import (
    funding,
    internal_transfers,
    transfer_records,
    withdrawal_fees,
    withdrawals,
)
from engine.kernel.state import Applier, Ctx

Decider = Callable[[Ctx, Any], Any]
TimerHandler = Callable[[Ctx, str], None]

DECIDERS: dict[type, Decider] = {}
APPLIERS: dict[str, Applier] = {}
# The appliers without their observers: observers only produce append-only read-model
# rows (State.append), so a replay that collects none skips them and their calls.
STATE_APPLIERS: dict[str, Applier] = {}
TIMERS: dict[str, TimerHandler] = {}
# Fast appliers for a state-only replay of the log (engine.replay_log), of events that
# open their stream (version 1). A replayer takes (state, stream versions, rows, i): rows
# as SqliteEventStore.scan gives them, rows[i] brief and of its type (an int `rest`, at
# schema 1 and version 1). It applies rows[i] and those after it while they are brief
# rows of its type, records their streams at version 1, and answers the index of the
# first row it left. It must leave exactly the state that its type's applier leaves when
# `state.live` is false.
Replayer = Callable[[Any, dict[str, int], list[tuple[Any, ...]], int], int]
REPLAYERS: dict[str, Replayer] = {}


def _clock_advanced(state: Any, event: Any) -> None:
    state.ext["clock_to"] = event.data["to"]


def register(
    deciders: Mapping[Any, Any] | None = None,
    appliers: Mapping[str, Any] | None = None,
    timers: Mapping[str, Any] | None = None,
    replayers: Mapping[str, Any] | None = None,
) -> None:
    """Add a domain module's functions; a name registered twice is a programming error."""
    _merge(DECIDERS, deciders)
    _merge(APPLIERS, appliers)
    _merge(STATE_APPLIERS, appliers)
    _merge(TIMERS, timers)
    _merge(REPLAYERS, replayers)


def observe(types: Iterable[str], observer: Applier) -> None:
    """Run `observer` after the applier of each of `types`: a projection that follows
    other modules' events (the public event feed) without their knowing. An observer
    must change nothing but `State.append`'s rows (see STATE_APPLIERS)."""
    for name in types:
        inner = APPLIERS[name]

        def chained(state: Any, event: Any, inner: Applier = inner) -> None:
            inner(state, event)
            observer(state, event)

        APPLIERS[name] = chained


def _merge(registry: dict[Any, Any], extra: Mapping[Any, Any] | None) -> None:
    if not extra:
        return
    clash = set(registry) & set(extra)
    if clash:
        raise ValueError(f"registered twice: {sorted(map(str, clash))}")
    registry.update(extra)


register(customers.DECIDERS, customers.APPLIERS)
register(appliers=transfer_records.APPLIERS, replayers=transfer_records.REPLAYERS)
register(funding.DECIDERS, funding.APPLIERS, funding.TIMERS)
register(withdrawal_fees.DECIDERS, withdrawal_fees.APPLIERS, withdrawal_fees.TIMERS)
register(withdrawals.DECIDERS, withdrawals.APPLIERS, withdrawals.TIMERS)
register(internal_transfers.DECIDERS)
register(trading.DECIDERS, trading.APPLIERS, trading.TIMERS)
register(appliers={"ClockAdvanced": _clock_advanced})
register(webhook_registrations.DECIDERS, webhook_registrations.APPLIERS)
register(sandbox_snapshots.DECIDERS, sandbox_snapshots.APPLIERS)
# Last: the feed follows events that every module above has registered.
observe(feed.WATCHED, feed.observe)
