"""State snapshots: start-up loads the newest one and replays only the tail of the log.

Not to be confused with the sandbox's own snapshots (engine/domain/sandbox_snapshots.py, events in the
log that users take and restore): these are a cache of the writer's state, kept in the
`state_snapshots` table of the same database, never a source of truth. Dropping the
table costs one full replay at the next start-up; `sandex verify` and `sandex rebuild`
never read it (they are the audit: they replay the whole log).

What a snapshot holds is exactly what a replay of the log up to its position produces,
not the live state: live decisions also keep things no event records (the market watch
a decision armed, caches), and a start-up from a snapshot must equal a start-up from a
full replay. So the writer never pickles its own state. When the log has grown by
`snapshot_every_events` since the last snapshot, a background thread loads that
snapshot through its own read-only connection, replays the events since, pickles the
result and hands the bytes to the writer, which stores them in one short transaction
of its own (the writer stays the only connection that writes). The writer's cost is
that insert; the thread's replay and pickling share the GIL with it, which shows as
latency while a snapshot is being built (docs/performance.md has the figures).

Format: `pickle` (protocol 5) of `(State, stream versions as marshal bytes)`, compressed
with zlib at level 1; settled transfers are stored by column
(engine/kernel/compact_records.py), and the versions of settled transfers' and closed
orders' streams are left out: such a stream gets no event in practice, and a million
versions were a third of a start-up's CPU. Should an event ever be appended to such a
stream, its version is read from the log then (`StreamVersions`, `_from_log`). The state
is plain data (dicts, lists, slotted classes, Decimals, SortedDicts); pickle keeps the
sharing between them (an order in `orders` and in its book level is one object), which a
JSON form would have to rebuild by hand. Unpickling runs code named in the data, so a
snapshot must come from a trusted writer: it is read only from the user's own database,
the same file whose log the engine trusts anyway. A snapshot is used only when its
format matches this code exactly (FORMAT hashes the engine's sources, the Python version
and sortedcontainers': after an upgrade the old snapshots are ignored and start-up
replays the whole log once) and when the event at its position is still the event it was
taken after (time travel or a rewritten log cannot pair a state with the wrong events).
"""

from __future__ import annotations

import gc
import hashlib
import marshal
import pickle
import sys
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sortedcontainers

from sandex.engine.domain.transfers.transfer_records import SETTLED
from sandex.engine.kernel.logs import get_logger
from sandex.engine.kernel.registry import Registry
from sandex.engine.kernel.state import State, StreamVersions
from sandex.engine.store import EventStore

log = get_logger("sandex.snapshots")

KEEP = 2  # snapshots kept: the newest, and one before it should the newest be unusable


# The engine package: a snapshot pickles its classes (domain, kernel), not only ours.
_ROOT = Path(__file__).resolve().parents[1]


def _sources() -> list[Path]:
    """The files whose text FORMAT hashes."""
    return sorted(_ROOT.rglob("*.py"))


def _format() -> str:
    digest = hashlib.sha256()
    for path in _sources():
        digest.update(str(path.relative_to(_ROOT)).encode())
        digest.update(path.read_bytes())
    digest.update(f"{sys.version_info[:3]}:{sortedcontainers.__version__}".encode())
    return "1:" + digest.hexdigest()[:20]


FORMAT = _format()


def encode(state: State, versions: dict[str, int]) -> bytes:
    """The bytes of a snapshot. `state` must be the caller's own (the snapshot thread's
    replay): its settled transfers are made compact first (compact_records.py), with
    their equal short strings made one object, which pickle then writes once and
    start-up builds once. The versions of settled streams are left out (`_unsettled`)."""
    state.transfers.settle(_settled)
    # Stream versions (one per transfer and order ever made) as marshal: a flat dict of
    # str to int loads in less than half pickle's time.
    kept = _unsettled(versions, state)
    return zlib.compress(pickle.dumps((state, marshal.dumps(kept)), protocol=5), 1)


def _settled(transfer: dict[str, Any]) -> bool:
    return transfer.get("status") in SETTLED


# The streams of a transfer and of an order: this prefix and its id (transfer_records.py,
# trading/placement.py). Settled transfers and closed orders get no event after.
_TRANSFER = "transfer-"
_ORDER = "order-"
_COMPACT = (tuple, int)  # a settled entry of `Records`, as `settle` left it or unpickled


def _orders(state: State) -> dict[str, Any]:
    trading = state.ext.get("trading")
    return {} if trading is None else trading.orders  # type: ignore[no-any-return]


def _unsettled(versions: dict[str, int], state: State) -> dict[str, int]:
    """`versions` but those of settled streams: a transfer's compact in `state` (settled)
    and a closed order's. With a snapshot before, `versions` holds only the streams left
    in it and those of the events since: a short walk."""
    transfers, orders = state.transfers, _orders(state)
    entry = dict.get  # the stored form, not `Records.get`'s read
    t, o = len(_TRANSFER), len(_ORDER)
    kept = {}
    for stream, version in versions.items():
        if stream.startswith(_TRANSFER):
            if type(entry(transfers, stream[t:])) in _COMPACT:
                continue
        elif stream.startswith(_ORDER):
            order = orders.get(stream[o:])
            if order is not None and order.closed_at is not None:
                continue
        kept[stream] = version
    return kept


def _from_log(store: EventStore, state: State) -> Callable[[str], int]:
    """The version of a stream missing from the versions of a snapshot of `state`: one of
    its transfers' or orders' (the dicts of `state` as loaded, which only ever grow,
    whatever a sandbox restore installs later) read from the log, through a read-only
    handle of its own (the writer's connection may be committing on another thread
    meanwhile); 0 for any other stream (a new one)."""
    transfers, orders = state.transfers, _orders(state)
    t, o = len(_TRANSFER), len(_ORDER)

    def version(stream: str) -> int:
        if stream.startswith(_TRANSFER):
            known = stream[t:] in transfers
        else:
            known = stream.startswith(_ORDER) and stream[o:] in orders
        if not known:
            return 0
        reader = store.read_only()
        try:
            return reader.stream_version(stream)
        finally:
            reader.close()

    return version


def decode(data: bytes, log: EventStore | None = None) -> tuple[State, StreamVersions]:
    """The state and versions of a snapshot. With `log`, the store it was taken of,
    the versions it left out are read from it when asked for: right only for a state
    replayed to the log's end, the only one events are appended to."""
    collecting = gc.isenabled()
    gc.disable()  # millions of long-lived objects at once: no cyclic collection midway
    try:
        state, packed = pickle.loads(zlib.decompress(data))  # noqa: S301 - see above
        kept = marshal.loads(packed)
    finally:
        if collecting:
            gc.enable()
    if not isinstance(state, State) or not isinstance(kept, dict):
        raise ValueError("not a state snapshot")
    versions = StreamVersions(kept)
    if log is not None:
        versions.elsewhere = _from_log(log, state)
    return state, versions


def newest(store: EventStore, upto: int | None = None) -> tuple[State, StreamVersions] | None:
    """The newest usable snapshot at or before `upto` (the log's end when None), or None;
    its versions read what they left out from `store` only for the log's end."""
    for position, check in store.state_snapshots(FORMAT):
        if upto is not None and position > upto:
            continue
        if store.event_check(position) != check:
            log.warning("a state snapshot does not match the log; ignored", position=position)
            continue
        data = store.state_snapshot_data(position)
        if data is None:
            continue
        try:
            state, versions = decode(data, store if upto is None else None)
        except Exception as exc:  # noqa: BLE001 - a bad cache costs a longer replay only
            log.warning(
                "a state snapshot cannot be read; ignored", position=position, error=str(exc)
            )
            continue
        if state.position != position:
            continue
        return state, versions
    return None


def load(
    store: EventStore,
    *,
    upto: int | None = None,
    use_snapshots: bool = True,
    registry: Registry,
) -> tuple[State, StreamVersions, int]:
    """(state, stream versions, position of the snapshot used or 0): the newest snapshot
    and the log after it, replayed up to `upto` (the end when None)."""
    from sandex.engine.runtime.replay import replay_log

    found = newest(store, upto) if use_snapshots else None
    if found is None and use_snapshots and upto is None and store.state_snapshots(None):
        log.warning(  # a build of other sources: what made a start-up replay it all unsaid
            "state snapshots of another sandex build ignored (not this code's format);"
            " replaying the whole log",
            format=FORMAT,
        )
    state, versions = found if found is not None else (None, None)
    base = state.position if state is not None else 0
    state, versions = replay_log(store, state, versions, after=base, until=upto, registry=registry)
    return state, versions, base


def _undelivered(position: int, check: str, data: bytes) -> None:
    """A snapshot built before an engine took the snapshotter: nobody stores it."""


class Snapshotter:
    """Builds one snapshot at a time in a background thread, from the log alone."""

    def __init__(self, store: EventStore, registry: Registry) -> None:
        """`store` is the writer's: the thread reads through a handle of its own on it.
        The engine it is handed to sets `deliver`, which takes each snapshot built."""
        self.store = store
        self.registry = registry
        self.deliver: Callable[[int, str, bytes], None] = _undelivered
        self._thread: threading.Thread | None = None
        self._cancel = threading.Event()
        self.built = 0  # snapshots handed to the writer (tests and benchmarks read it)

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def request(self, position: int) -> bool:
        """Start building the snapshot at `position` (committed); False while one is built."""
        if self.busy or self._cancel.is_set():
            return False
        self._thread = threading.Thread(
            target=self._build, args=(position,), name="sandex-snapshot", daemon=True
        )
        self._thread.start()
        return True

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def cancel(self) -> None:
        self._cancel.set()
        self.wait()

    def _build(self, position: int) -> None:
        from sandex.engine.runtime import replay as replays

        try:
            store = self.store.read_only()
        except Exception as exc:  # noqa: BLE001
            log.warning("state snapshot skipped: cannot open the log", error=str(exc))
            return
        try:
            found = newest(store, position)
            state, versions = found if found is not None else (None, None)
            base = state.position if state is not None else 0
            cancel = self._cancel
            state, versions = replays.replay_log(
                store,
                state,
                versions,
                after=base,
                until=position,
                pause_gc=False,
                cancelled=cancel.is_set,
                registry=self.registry,
            )
            if state.position != position:
                return  # the log does not reach it (rolled back): nothing to snapshot
            check = store.event_check(position)
            if check is None or cancel.is_set():
                return
            data = encode(state, versions)
            del state, versions
            if not cancel.is_set():
                self.deliver(position, check, data)
                self.built += 1
        except replays.Cancelled:
            pass
        except Exception as exc:  # noqa: BLE001 - a snapshot is an optimisation only
            log.warning("state snapshot failed", position=position, error=repr(exc))
        finally:
            store.close()
