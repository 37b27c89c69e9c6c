"""The registry: which function decides each command, which applies each event, which
handles each kind of deadline. Each domain module exports its `Registration`; whoever
composes an engine builds one `Registry` from the list (engine/domain/registrations.py
gives the domain's), so importing a module registers nothing and two engines may run
with different registries."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.state import Applier, Ctx, State

Decider = Callable[[Ctx, Any], Any]
TimerHandler = Callable[[Ctx, str], None]
# Fast appliers for a state-only replay of the log (runtime's replay_log), of events that
# open their stream (version 1). A replayer takes (state, stream versions, rows, i): rows
# as SqliteEventStore.scan gives them, rows[i] brief and of its type (an int `rest`, at
# schema 1 and version 1). It applies rows[i] and those after it while they are brief
# rows of its type, records their streams at version 1, and answers the index of the
# first row it left. It must leave exactly the state that its type's applier leaves when
# `state.live` is false.
Replayer = Callable[[Any, dict[str, int], list[tuple[Any, ...]], int], int]
# An invariant of the state, answering what is broken as text (engine/kernel/invariants.py).
Check = Callable[[State], list[str]]
# A USD price of an asset from the state, or None when the source does not know it
# (engine/domain/transfers/notional_prices.py asks the sources in order).
PriceSource = Callable[[State, str], Decimal | None]


@dataclass(frozen=True, slots=True)
class Registration:
    """What one domain module contributes. `observers` run after the applier of their
    event type: a projection that follows other modules' events (the public event feed)
    without their knowing; an observer must change nothing but `State.append`'s rows.
    `tables` are the module's read models, `checks` its invariants, `price_sources` what
    it knows of USD prices: declared here rather than added to lists at import."""

    # Loosely typed: each module's dict maps its command classes to deciders of them.
    deciders: Mapping[Any, Any] = field(default_factory=dict)
    appliers: Mapping[str, Applier] = field(default_factory=dict)
    timers: Mapping[str, TimerHandler] = field(default_factory=dict)
    replayers: Mapping[str, Replayer] = field(default_factory=dict)
    observers: Mapping[str, Applier] = field(default_factory=dict)
    tables: tuple[ReadModelTable, ...] = ()
    checks: tuple[Check, ...] = ()
    price_sources: tuple[PriceSource, ...] = ()


@dataclass(frozen=True, slots=True)
class Registry:
    """The merged registrations of one engine. `state_appliers` are the appliers without
    their observers: a replay that collects no read-model rows skips them."""

    deciders: dict[type, Decider]
    appliers: dict[str, Applier]
    state_appliers: dict[str, Applier]
    timers: dict[str, TimerHandler]
    replayers: dict[str, Replayer]
    tables: tuple[ReadModelTable, ...] = ()
    checks: tuple[Check, ...] = ()
    price_sources: tuple[PriceSource, ...] = ()


def build_registry(registrations: Iterable[Registration]) -> Registry:
    """One registry from `registrations`, in order; a name registered twice is a
    programming error. Observers chain after every registration's appliers are in."""
    registrations = tuple(registrations)
    deciders: dict[type, Decider] = {}
    appliers: dict[str, Applier] = {}
    timers: dict[str, TimerHandler] = {}
    replayers: dict[str, Replayer] = {}
    for r in registrations:
        _merge(deciders, r.deciders)
        _merge(appliers, r.appliers)
        _merge(timers, r.timers)
        _merge(replayers, r.replayers)
    state_appliers = dict(appliers)
    for r in registrations:
        for name, observer in r.observers.items():
            appliers[name] = _chained(appliers[name], observer)
    tables = tuple(t for r in registrations for t in r.tables)
    _unique([t.name for t in tables])
    _unique([t.kind for t in tables if t.kind])
    return Registry(
        deciders,
        appliers,
        state_appliers,
        timers,
        replayers,
        tables,
        tuple(c for r in registrations for c in r.checks),
        tuple(p for r in registrations for p in r.price_sources),
    )


def _chained(inner: Applier, observer: Applier) -> Applier:
    def chained(state: Any, event: Any) -> None:
        inner(state, event)
        observer(state, event)

    return chained


def _merge(registry: dict[Any, Any], extra: Mapping[Any, Any]) -> None:
    clash = set(registry) & set(extra)
    if clash:
        raise ValueError(f"registered twice: {sorted(map(str, clash))}")
    registry.update(extra)


def _unique(names: list[str]) -> None:
    twice = {n for n in names if names.count(n) > 1}
    if twice:
        raise ValueError(f"registered twice: {sorted(twice)}")
