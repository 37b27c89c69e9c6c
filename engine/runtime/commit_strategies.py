"""How a decided group reaches the log: the writer's commit strategies.

The writer (engine/runtime/writer.py, `Engine._process`) has one decide loop; what
happens around it depends on who drives the engine, and is one of these:

- `Pipelined`: the writer thread runs (the engine's own, or a shared writer's). Each
  group's events and rows are written in one transaction whose COMMIT the engine's
  committer thread (`Committer`) makes, while the writer decides the next group on a
  state that already holds it (docs/design.md, "The write path").
- `Inline`: no writer thread (`Engine.run_inline`): the caller's thread writes and
  commits each group itself.
- `OneTransaction`: inside `Engine.one_transaction`, every group is held in one
  transaction, its events and rows kept in memory and written together, committed
  when the block ends (a backtest's; `scratch` for a log nobody reads afterwards).

A strategy is the writer's own part: it calls the engine's reload (`_recover`) and
reads its state, store and projection (`Writer`, what it uses of the engine). The
engine holds one at a time."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Protocol

from sandex.engine.kernel.clock import Clock
from sandex.engine.kernel.errors import Unavailable
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.logs import get_logger
from sandex.engine.kernel.state import State
from sandex.engine.runtime.market_feed import Changes, MarketFeed
from sandex.engine.runtime.projection import Projection
from sandex.engine.runtime.reply import Batch, Span, complete, fail, overrule
from sandex.engine.store import EventStore, StoreUnavailable

log = get_logger("sandex.engine")

# Inside `one_transaction` the events of this many decisions' worth (about) are kept and
# written together: a few statements per thousand events instead of six per command.
DEFER_EVENTS = 2048
# A scratch block (`one_transaction(scratch=True)`) writes its read-model rows once this
# many entities wait for them, read or not: what it keeps in memory stays bounded.
DEFER_ROWS = 65536


class Writer(Protocol):
    """What a commit strategy uses of the engine it commits for (`Engine`,
    engine/runtime/writer.py)."""

    state: State
    store: EventStore
    projection: Projection
    market_feed: MarketFeed
    clock: Clock
    committed: list[Event]
    last_commit_ok: bool
    _stale: bool
    _thread: threading.Thread | None
    _snapshot_every: int

    def _recover(self) -> None: ...

    def _changed_elsewhere(self) -> bool: ...

    def _publish_unwritten(self) -> None: ...

    def _maybe_snapshot(self, position: int) -> None: ...


class Written:
    """A group commit written and waiting for its COMMIT (`Inline.finish`)."""

    __slots__ = ("spans", "events", "position", "ok", "done", "started", "feed")

    def __init__(self, spans: list[Span], events: list[Event], position: int) -> None:
        self.spans = spans
        self.events = events
        self.position = position
        self.feed: Changes | None = None  # what the market data feeds publish after COMMIT
        self.ok = False
        # Bare locks, held until the committer releases them: a `threading.Event` builds a
        # Condition, a cost every inline command (a backtest's) would pay.
        self.done = threading.Lock()
        self.done.acquire()
        self.started = threading.Lock()
        self.started.acquire()


class CommitStrategy:
    """What the decide loop asks of the way its groups reach the log."""

    # `one_transaction(scratch=True)`: no append-only rows are kept after a reload
    scratch = False
    # the events decided and not yet written (`OneTransaction`), else None
    deferred: list[Event] | None = None

    def __init__(self, engine: Writer) -> None:
        self.engine = engine

    def prepare(self, work: list[Batch], spans: list[Span]) -> bool:
        """Before a group is decided; False when the group has been answered already."""
        raise NotImplementedError

    def commit(self, spans: list[Span], events: list[Event], suspect: bool) -> None:
        """Write the group decided (`events`, the state's dirty marks) and answer it once
        durable; `suspect`: a decision raised unexpectedly, reload the state after."""
        raise NotImplementedError

    def undo_broken(self) -> None:
        """A decision raised after it emitted: the state goes back to the log's."""
        self.engine._recover()

    def settle(self) -> bool:
        """Wait for the group in flight, if any; False if its COMMIT failed."""
        return True

    def rest(self) -> bool:
        """The writer is idle: `settle`, and let go of what only a busy writer needs."""
        return self.settle()

    def write_held(self, rows: bool) -> None:
        """Write the events held and, with `rows` (or once `DEFER_ROWS` entities wait),
        the rows of every entity touched, as they stand now; on a failure nothing of it
        is written, the state reloads from the log, and the error is raised."""
        engine = self.engine
        events = self.deferred
        state = engine.state
        rows = rows or len(state.dirty) >= DEFER_ROWS
        if not events and not (rows and state.dirty):
            return
        if events is not None:
            self.deferred = []
        writes = {}
        if rows:
            writes = engine.projection.rows_for(state, state.dirty)
            state.dirty.clear()
        state.appended = None if self.scratch else []
        try:
            engine.store.write(events or [], writes, state.position)
            engine.store.finish()
        except Exception:
            engine._recover()
            raise


class Inline(CommitStrategy):
    """Each group is written in one transaction and committed at once, on the thread
    that decided it."""

    def prepare(self, work: list[Batch], spans: list[Span]) -> bool:
        engine = self.engine
        if engine._stale or engine._changed_elsewhere():
            engine._recover()
        return True

    def commit(self, spans: list[Span], events: list[Event], suspect: bool) -> None:
        engine = self.engine
        state = engine.state
        if not events and not state.dirty:
            if suspect:
                self.settle()
                engine._recover()
            else:
                engine._publish_unwritten()
            complete(spans)
            return
        writes = engine.projection.rows_for(state, state.dirty)
        state.dirty.clear()
        state.appended = []
        if not self.settle():  # the group before failed: this one was decided on it
            overrule(spans, lambda _: Unavailable("the event store is unavailable; retry"))
            complete(spans)
            return
        written = Written(spans, events, state.position)
        written.feed = engine.market_feed.collect(state, engine.clock.now(), events)
        try:
            engine.store.write(events, writes, state.position)
        except Exception as exc:  # noqa: BLE001 - any failure means nothing is durable
            self.failed(written, exc)
            engine._recover()
            complete(spans)
            return
        self.hand_over(written, suspect)

    def hand_over(self, written: Written, suspect: bool) -> None:
        """Make the written group durable: here, at once."""
        self.finish(written)
        if suspect or not written.ok:
            self.engine._recover()

    def finish(self, written: Written) -> None:
        """Make a written group durable, then answer it (on the committer thread, or on
        the writer's when it runs inline)."""
        engine = self.engine
        written.started.release()
        try:
            try:
                engine.store.finish()
                written.ok = True
                engine.last_commit_ok = True
                engine.committed = written.events
                if written.feed is not None:
                    engine.market_feed.publish(written.feed)
                if engine._snapshot_every and engine._thread is not None:
                    engine._maybe_snapshot(written.position)
            except BaseException as exc:  # noqa: BLE001 - any failure: nothing is durable
                self.failed(written, exc)
            complete(written.spans)
        finally:
            written.done.release()  # the writer waits on it whatever happened

    def failed(self, written: Written, exc: BaseException) -> None:
        log.error("commit failed", error=str(exc))
        self.engine.last_commit_ok = False
        reason = exc if isinstance(exc, StoreUnavailable) else StoreUnavailable(str(exc))
        overrule(written.spans, lambda _: Unavailable(f"the event store is unavailable: {reason}"))


class Committer:
    """An engine's committer thread: makes its written groups' COMMITs in the order
    handed over. Started by the first group handed over, ended by `rest` (an idle
    writer holds no committer thread)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Inline, Written] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def put(self, strategy: Inline, written: Written) -> None:
        """Queue `written`'s COMMIT, which `strategy.finish` makes and answers."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="sandex-commit", daemon=True)
            self._thread.start()
        self._jobs.put((strategy, written))

    def rest(self) -> None:
        """End the thread once what was handed over is committed (the next `put` starts
        another); the caller hands nothing over meanwhile."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join()

    def _loop(self) -> None:
        jobs = self._jobs
        while (job := jobs.get()) is not None:
            strategy, written = job
            try:
                strategy.finish(written)
            except Exception as exc:  # noqa: BLE001 - a bug must not stop the commits
                log.error("answering a group failed", error=repr(exc))


class Pipelined(Inline):
    """The writer thread's: a committer thread makes each group's COMMIT while the
    writer decides the next group. Nothing is answered before its COMMIT returns, and a
    failed COMMIT fails the group decided behind it too (its decisions rest on events
    that are not in the log) and the state reloads. `committer`: a shared writer's
    (kept running while the engine rests: its other engines use it), else its own."""

    def __init__(self, engine: Writer) -> None:
        super().__init__(engine)
        # the group whose COMMIT is under way
        self.inflight: Written | None = None
        self.committer = Committer()
        # called once the group in flight is answered (`committing`)
        self._then: Callable[[], None] | None = None
        # on a shared writer: whether another engine waits for a turn (`hand_over`)
        self.others_ready: Callable[[], bool] | None = None

    def start(self) -> None:
        """Nothing yet: the first group handed over starts the committer thread."""

    def stop(self) -> None:
        """Wait for the group in flight, then end the committer thread."""
        self.rest()

    def rest(self) -> bool:
        """Wait for the group in flight, then end the committer thread (the next group
        handed over starts another)."""
        settled = self.settle()
        self.committer.rest()
        return settled

    def committing(self, then: Callable[[], None]) -> bool:
        """Whether the group in flight is still committing; if so, `then` is called
        once it is answered (a shared writer's turn waits for it, deciding others')."""
        written = self.inflight
        if written is None:
            return False
        self._then = then  # before the test: the committer calls it after releasing
        if written.done.locked():
            return True
        self._then = None
        return False

    def finish(self, written: Written) -> None:
        super().finish(written)
        then, self._then = self._then, None
        if then is not None:
            then()

    def prepare(self, work: list[Batch], spans: list[Span]) -> bool:
        inflight = self.inflight
        if inflight is not None and not inflight.done.locked():
            self.settle()
            inflight = None
        engine = self.engine
        if inflight is None and (engine._stale or engine._changed_elsewhere()):
            engine._recover()
        return True

    def hand_over(self, written: Written, suspect: bool) -> None:
        """To the committer thread, unless a decision was suspect (then at once)."""
        if suspect:
            super().hand_over(written, suspect)
            return
        self.inflight = written
        self.committer.put(self, written)
        others_ready = self.others_ready
        if others_ready is None or not others_ready():
            # Until the committer is inside its COMMIT, which runs without the GIL, it
            # cannot start while this thread decides: hand the GIL over first.
            written.started.acquire()

    def settle(self) -> bool:
        """Wait for the group in flight, if any; False if its COMMIT failed, in which case
        the state, which holds its events, has been reloaded from the log."""
        written = self.inflight
        if written is None:
            return True
        written.done.acquire()  # released by `finish`; only the writer thread waits on it
        self.inflight = None
        if not written.ok:
            self.engine._recover()
            return False
        return True


class OneTransaction(CommitStrategy):
    """`Engine.one_transaction`: nothing inside the block is acknowledged before it ends,
    so the groups' events and read-model rows are kept in memory and written together,
    about every `DEFER_EVENTS` events and when the block ends (no other writer can change
    the log meanwhile). A broken decision is still undone alone."""

    def __init__(self, engine: Writer, scratch: bool) -> None:
        super().__init__(engine)
        self.deferred = []
        self.scratch = scratch
        self._appended_before = 0  # the state's appended rows before this group

    def prepare(self, work: list[Batch], spans: list[Span]) -> bool:
        if len(self.deferred or ()) >= DEFER_EVENTS and not self._flushed(work, spans):
            return False
        self._appended_before = len(self.engine.state.appended or ())
        return True

    def commit(self, spans: list[Span], events: list[Event], suspect: bool) -> None:
        engine = self.engine
        assert self.deferred is not None
        self.deferred.extend(events)  # the list `write_held` takes whole, never a copy
        engine.committed = events
        if suspect:
            try:
                self.write_held(rows=True)
            except Exception as exc:  # noqa: BLE001 - answered as a failed commit
                failed = Unavailable(f"the event store is unavailable: {exc}")
                overrule(spans, lambda _: failed)
            else:
                engine._recover()
        complete(spans)

    def _flushed(self, work: list[Batch], spans: list[Span]) -> bool:
        """Write what the block holds before deciding `work`; False (and the group
        answered unavailable) when the write failed."""
        try:
            self.write_held(rows=not self.scratch)
        except Exception as exc:  # noqa: BLE001 - any failure: nothing of it is written
            log.error("deferred write failed", error=str(exc))
            self.engine.last_commit_ok = False
            for batch in work:
                fail(batch, Unavailable(f"the event store is unavailable: {exc}"))
            complete(spans)
            return False
        return True

    def undo_broken(self) -> None:
        """Write what the commands before the broken group decided (their events and
        appended rows; the state's rows now hold the broken decision's changes), reload
        the state from the log, then write the rows of every entity touched, as the
        reloaded state has them."""
        engine = self.engine
        store = engine.store
        state = engine.state
        events, self.deferred = self.deferred or [], []
        touched = set(state.dirty)
        appended = (state.appended or [])[: self._appended_before]
        writes: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        for table, row in appended:
            writes.setdefault(table, ([], []))[0].append(row)
        position = events[-1].position if events else store.last_position()
        try:
            if events:
                # checkpoint at the events' end: the reload must not rebuild every table
                store.write(events, writes, position)
                store.finish()
        finally:
            engine._recover()
        rows = engine.projection.rows_for(engine.state, touched)
        if rows:
            store.write([], rows, position)
            store.finish()
