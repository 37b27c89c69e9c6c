"""Replays: the state folded from the log, generically (any events) or fast (stored rows
in bulk, the start-up path), and the read models rebuilt from a replayed state."""

from __future__ import annotations

import decimal
import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from sandex.engine.kernel.events import SCHEMA_VERSIONS, Event, upcast
from sandex.engine.kernel.logs import get_logger
from sandex.engine.kernel.money import CONTEXT
from sandex.engine.kernel.progress import Progress, reporting
from sandex.engine.kernel.registry import Registry
from sandex.engine.kernel.state import State, StreamVersions
from sandex.engine.runtime.projection import Projection
from sandex.engine.store import Concurrency, EventStore

log = get_logger("sandex.engine")


@contextmanager
def _folding(state: State, pause_gc: bool) -> Iterator[None]:
    """What both replays fold the log under: the domain's decimal context, `state.live`
    off (appliers mark nothing for a commit), and, with `pause_gc`, the collector off."""
    collecting = pause_gc and gc.isenabled()
    if collecting:
        gc.disable()
    state.live = False
    try:
        with decimal.localcontext(CONTEXT):
            yield
    finally:
        state.live = True
        if collecting:
            gc.enable()


def replay(
    events: Iterable[Event],
    state: State | None = None,
    versions: StreamVersions | None = None,
    *,
    pause_gc: bool = True,
    registry: Registry,
) -> tuple[State, StreamVersions]:
    """Fold the log into a fresh state (or into `state`, a snapshot's, with the events
    after it); the same code path as live application.

    `pause_gc` turns the cyclic collector off meanwhile: a replay allocates millions of
    long-lived objects and no cyclic garbage. The switch is process-wide, so a replay in
    a background thread, beside a running writer, leaves it alone."""
    state = State() if state is None else state
    versions = StreamVersions() if versions is None else versions
    appliers = registry.appliers if state.appended is not None else registry.state_appliers
    event = None
    with _folding(state, pause_gc):
        for event in events:
            appliers[event.type](state, event)
            versions[event.stream] = event.version
    if event is not None:
        state.position = event.position
        state.last_time = event.occurred_at
    state.dirty.clear()
    return state, versions


def replay_log(
    store: EventStore,
    state: State | None = None,
    versions: StreamVersions | None = None,
    *,
    after: int = 0,
    until: int | None = None,
    pause_gc: bool = True,
    cancelled: Callable[[], bool] | None = None,
    registry: Registry,
) -> tuple[State, StreamVersions]:
    """`replay` of the log after `after` (up to `until`), read as raw rows: the same
    state, faster. A run of events whose type has a replayer (`Registry.replayers`) goes to
    it as rows, with no `Event` built; any other event goes through its applier as
    `replay` does. Replayers apply a state-only replay (`state.appended` None): one that
    collects read-model rows takes the appliers and their observers for every event.
    `cancelled` is asked between chunks of rows; when it answers true, `Cancelled`."""
    state = State() if state is None else state
    versions = StreamVersions() if versions is None else versions
    collecting = state.appended is not None
    appliers = registry.appliers if collecting else registry.state_appliers
    current = SCHEMA_VERSIONS
    # Only events at schema 1 of types still at schema 1 skip upcasting unchecked.
    fast = (
        {}
        if collecting
        else {t: f for t, f in registry.replayers.items() if current.get(t, 1) == 1}
    )
    first = tuple(fast)
    replayers = tuple(fast.values())
    loads = orjson.loads
    last: tuple[Any, ...] | None = None
    at: str | None = None
    with _folding(state, pause_gc):
        for rows in store.scan(after, until, first):
            if cancelled is not None and cancelled():
                raise Cancelled
            i, n = 0, len(rows)
            while i < n:
                position, stream, data, rest = rows[i]
                if type(rest) is int:
                    i = replayers[rest](state, versions, rows, i)
                    continue
                version, typ, schema, at = loads(rest)
                versions[stream] = version
                event = Event(typ, stream, loads(data), position, version, at, {}, schema)
                if schema != current.get(typ, 1):
                    event = upcast(event)
                appliers[typ](state, event)
                i += 1
            last = rows[-1]
    if last is not None:
        state.position = last[0]
        if type(last[3]) is int:  # a brief row carries no time
            at = store.occurred_at(last[0])
        state.last_time = at or state.last_time
    state.dirty.clear()
    return state, versions


class Cancelled(Exception):
    """A replay was asked to stop (the snapshot thread, when the engine stops)."""


def rebuild_read_models(
    store: EventStore,
    progress: Progress | None = None,
    *,
    registry: Registry,
    projection: Projection,
) -> State:
    """Replay the whole log, collecting the append-only rows too, and rewrite every
        read-model table from it in one transaction; the state replayed.

        The rewrite commits only if the log still ends where the replay did: a writer that
        holds no lease (`sandex clients revoke`) may have appended meanwhile, and rows made
        from the shorter log would drop what it wrote. The replay then goes on from where
        it stopped, and the rewrite is tried again. `progress(position, last)` is told how
        far the replay has got (engine/kernel/progress.py). `registry` and `projection`: the
    engine's (engine/runtime/composition.py builds them)."""
    state = State()
    state.appended = []
    while True:
        total = store.last_position() if progress is not None else 0
        events = store.read(after=state.position, with_meta=False)
        replay(reporting(events, progress, total), state, registry=registry)
        rows: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        for table, row in projection.all_rows(state):
            rows.setdefault(table, ([], []))[0].append(row)
        try:
            store.replace_read_models(rows, state.position)
        except Concurrency:
            log.warning("the log grew during a read-model rewrite; replaying its tail")
            continue
        state.appended = None
        return state
