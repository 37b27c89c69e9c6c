"""The writer's in-memory state, and the context a decision runs in.

State is a projection of the log: appliers (one per event type, in the domain modules)
are the only code that changes it, both live and when the log is replayed on start-up.
Appliers also mark what they touched as dirty so that the writer upserts exactly those
read-model rows in the same transaction as the events.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from sandex.engine.config.settings import Settings
from sandex.engine.kernel.clock import format_time
from sandex.engine.kernel.compact_records import Records
from sandex.engine.kernel.credentials import Secrets
from sandex.engine.kernel.errors import LogFull
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.ids import IdSource
from sandex.engine.kernel.ledger import Ledger


class Timers:
    """Deadlines (GTT expiry, fee expiry, confirmations, delayed credits) in time order.

    Entries are never removed when their subject closes; the handler of a fired entry
    checks that it still applies (lazy deletion keeps appliers simple)."""

    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[datetime, int, str, str]] = []
        self._seq = 0

    def add(self, deadline: datetime, kind: str, key: str) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (deadline, self._seq, kind, key))

    def next_deadline(self) -> datetime | None:
        return self._heap[0][0] if self._heap else None

    def due(self, until: datetime) -> bool:
        return bool(self._heap) and self._heap[0][0] <= until

    def pop_due(self, until: datetime) -> tuple[datetime, str, str] | None:
        if self._heap and self._heap[0][0] <= until:
            deadline, _, kind, key = heapq.heappop(self._heap)
            return deadline, kind, key
        return None

    def __len__(self) -> int:
        return len(self._heap)


class Caches:
    """What one state's appliers remember for speed: texts and numbers that recur (an
    order's time, a fee rate, a posting's amount) kept as one object each, and the last
    order views built. Each state has its own, so engines in one process (and a replay
    on the snapshot thread) never meet in them. Not part of the state's value: a pickled
    or copied state starts with empty caches."""

    __slots__ = ("order_time", "rates", "amounts", "views")

    def __init__(self) -> None:
        self.order_time = ""
        self.rates: dict[str, Decimal] = {}
        self.amounts: dict[str, Decimal] = {}
        # The last two order views built and what they were built from (`order_view`).
        self.views: list[tuple[Any, ...] | None] = [None, None]

    def __reduce__(self) -> tuple[type[Caches], tuple[()]]:
        return (Caches, ())


@dataclass
class State:
    ledger: Ledger = field(default_factory=Ledger)
    customers: dict[str, dict[str, Any]] = field(default_factory=dict)
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    transfers: Records = field(default_factory=Records)  # settled ones compact (records.py)
    # (profile_id, ref_id) -> transfer id, for idempotence of transfers.
    transfer_refs: dict[tuple[str, str], str] = field(default_factory=dict)
    fiat_instructions: dict[str, dict[str, Any]] = field(default_factory=dict)
    memos: dict[str, str] = field(default_factory=dict)
    pending_fiat: dict[str, dict[str, Any]] = field(default_factory=dict)
    timers: Timers = field(default_factory=Timers)
    # Read-model rows to rewrite at the next commit: (kind, key).
    dirty: set[tuple[str, Any]] = field(default_factory=set)
    # Domain extensions keep their own state here, keyed by module name.
    ext: dict[str, Any] = field(default_factory=dict)
    last_time: str = ""
    position: int = 0
    # False while the log is replayed: nothing is marked dirty (read models are already
    # written), and appliers may keep the event's data as their own, since a replayed
    # event is never encoded again; live, the data is encoded after it is applied.
    live: bool = True
    # Rows of append-only read models (the event feed) that applied events produced, for
    # the next commit. None when nobody will write them: a start-up replay, whose tables
    # already hold them, skips computing them at all (most of a replay's cost otherwise).
    appended: list[tuple[str, dict[str, Any]]] | None = None
    caches: Caches = field(default_factory=Caches, compare=False, repr=False)

    def mark(self, kind: str, key: Any) -> None:
        if self.live:
            self.dirty.add((kind, key))

    def append(self, table: str, row: dict[str, Any]) -> None:
        if self.appended is not None:
            self.appended.append((table, row))

    def log_full(self, max_events: int | None) -> LogFull | None:
        """The refusal of any decision that would record an event, once the log holds
        `max_events` events (the `world_max_events` setting; None: no limit); None while
        the log has room."""
        if max_events is not None and self.position >= max_events:
            return LogFull(max_events, self.position)
        return None


Applier = Callable[[State, Event], None]


class StreamVersions(dict[str, int]):
    """Each stream's last version: what gives the next event of a stream its version.

    A stream missing from the dict has no event yet (0), unless `elsewhere` knows it: a
    state snapshot leaves out the streams that are settled, which are most of a long
    log's and never get another event in practice (engine/runtime/startup_cache.py), and
    `elsewhere` then reads such a stream's version from the log the first time an event
    is appended to it."""

    __slots__ = ("elsewhere",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.elsewhere: Callable[[str], int] | None = None

    def __missing__(self, stream: str) -> int:
        elsewhere = self.elsewhere
        return 0 if elsewhere is None else elsewhere(stream)


class Ctx:
    """What one decision sees: state, engine time, the seeded id source, the source of
    secrets (the OS, engine/kernel/credentials.py) and settings.

    `emit` applies the event to the state at once, so later steps of the same command
    (a second fill, say) see the first; a decision validates before it emits."""

    __slots__ = (
        "state",
        "now",
        "now_text",
        "ids",
        "secrets",
        "settings",
        "meta",
        "emitted",
        "price_sources",
        "max_events",
        "_appliers",
        "_versions",
    )

    def __init__(
        self,
        state: State,
        now: datetime,
        ids: IdSource,
        secrets: Secrets,
        settings: Settings,
        appliers: dict[str, Applier],
        versions: StreamVersions,
        meta: dict[str, Any],
        price_sources: tuple[Callable[[State, str], Decimal | None], ...] = (),
    ) -> None:
        self.state = state
        self.now = now
        self.now_text = format_time(now)
        self.ids = ids
        self.secrets = secrets
        self.settings = settings
        self.meta = meta
        self.emitted: list[Event] = []
        # The log's limit (`world_max_events`), checked at a decision's first event: a
        # decision is recorded whole or refused before it applies anything.
        self.max_events = settings.world_max_events
        # The registry's sources of USD prices (engine/domain/transfers/notional_prices.py).
        self.price_sources = price_sources
        self._appliers = appliers
        self._versions = versions  # each stream's last version, advanced as events emit

    def begin(self, now: datetime, meta: dict[str, Any]) -> None:
        """Make this the context of the next decision: the writer keeps one per state
        rather than building one for every command. The time's text is kept from the
        last decision when the time is the same (on a manual clock, many in a row)."""
        if now != self.now:
            self.now_text = format_time(now)
        self.now = now
        self.meta = meta
        self.emitted = []

    def emit(self, type: str, stream: str, data: dict[str, Any]) -> Event:
        state = self.state
        limit = self.max_events  # None (no limit) costs no call
        if limit is not None and not self.emitted:
            full = state.log_full(limit)
            if full is not None:
                raise full
        versions = self._versions
        version = versions[stream] = versions[stream] + 1
        event = Event(type, stream, data, state.position + 1, version, self.now_text, self.meta)
        self._appliers[type](state, event)
        state.position = event.position
        state.last_time = event.occurred_at
        self.emitted.append(event)
        return event
