"""The engine: one writer thread that owns the state, with group commit.

Every command, from HTTP or from a timer, goes through one queue into one thread. The
thread drains what is queued, decides each command in order (applying its events to the
in-memory state at once), writes all their events and the read-model rows they touched
in ONE transaction, and hands its COMMIT to a committer thread, which answers each
waiting caller once it returns; meanwhile the writer decides the next group. A caller is
never answered before its events are durable; if the commit fails, nobody in the batch
(nor in the group decided behind it) is told "done" and the state is rebuilt from the
log. How a decided group reaches the log is a commit strategy beside the one decide loop
(engine/runtime/commit_strategies.py): pipelined with the writer thread, inline without
it, or held in one transaction.
"""

from __future__ import annotations

import decimal
import gc
import queue
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sandex.engine.config.settings import Settings
from sandex.engine.kernel.clock import LATEST, Clock, ManualClock, format_time, parse_time
from sandex.engine.kernel.commands import AdvanceClock, Command, Tick
from sandex.engine.kernel.credentials import Secrets
from sandex.engine.kernel.errors import Conflict, DomainError, Invalid, LogFull, Unavailable
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.execution_ids import ExecutionIds
from sandex.engine.kernel.ids import IdSource
from sandex.engine.kernel.invariants import check_state
from sandex.engine.kernel.logs import get_logger
from sandex.engine.kernel.money import CONTEXT
from sandex.engine.kernel.registry import Registry
from sandex.engine.kernel.state import Ctx
from sandex.engine.runtime.commit_strategies import (
    CommitStrategy,
    Inline,
    OneTransaction,
    Pipelined,
)
from sandex.engine.runtime.key_file import KeyFile
from sandex.engine.runtime.market_feed import MarketFeed
from sandex.engine.runtime.projection import Projection
from sandex.engine.runtime.replay import rebuild_read_models
from sandex.engine.runtime.reply import Batch, Single, Span, answer_all, complete, fail, overrule
from sandex.engine.runtime.startup_cache import FORMAT as SNAPSHOT_FORMAT
from sandex.engine.runtime.startup_cache import Snapshotter
from sandex.engine.runtime.startup_cache import load as load_state
from sandex.engine.store import EventStore, MemoryRelease, capability

if TYPE_CHECKING:
    from sandex.engine.runtime.shared_writer import SharedWriter

log = get_logger("sandex.engine")

_STOP = object()


class _SnapshotBuilt:
    """Queued by the snapshot thread: the writer stores it (it alone writes the file)."""

    __slots__ = ("position", "check", "data")

    def __init__(self, position: int, check: str, data: bytes) -> None:
        self.position = position
        self.check = check
        self.data = data


# Nothing to write for this long: the committer thread ends and the store's memory kept
# only for speed is given back (`_release_memory`), so a server's idle worlds do not
# each hold them.
_IDLE_SECONDS = 1.0
# The events per command a writer assumes before its first group: about an order's.
_FIRST_EVENTS_PER_COMMAND = 4.0


class EngineStopped(Unavailable):
    pass


class WriterDied(EngineStopped):
    """The writer thread ended on an error nothing expected: the engine decides nothing
    more until it is started again (every caller is told so at once, none waits)."""


class NotDecided(Unavailable):
    """A command of a chain (`Engine.run_inline_chain`) after one that failed."""


@dataclass(frozen=True, slots=True)
class EngineParts:
    """Everything an engine runs on, built by the composition root
    (engine/runtime/composition.py, `bootstrap`): the engine only wires them together,
    so whoever builds them (a server's default database, a world) decides what they are."""

    store: EventStore  # the engine's from now on: `stop` closes it
    settings: Settings
    registry: Registry  # the deciders, appliers, timers and read-model tables
    projection: Projection  # the registry's read-model tables and their rows
    seed: int
    execution_ids: ExecutionIds
    keys: KeyFile
    secrets: Secrets
    clock: Clock
    ids: IdSource
    market_feed: MarketFeed  # the WebSocket feeds' hub, fed by the writer after each group
    snapshotter: Snapshotter
    snapshot_every: int  # events between state snapshots; 0: none


class Engine:
    def __init__(self, parts: EngineParts) -> None:
        """An engine on `parts`; `build_engine` and `open_engine`
        (engine/runtime/composition.py) build them."""
        if not isinstance(parts, EngineParts):
            raise TypeError(
                f"Engine takes its parts: build_engine(store, settings) or"
                f" open_engine({str(parts)!r}) builds them"
            )
        self.registry = parts.registry
        self.projection = parts.projection
        self.settings = parts.settings
        self.store = parts.store
        self.db_path = parts.store.path
        self.seed = parts.seed
        self.execution_ids = parts.execution_ids
        self.keys = parts.keys
        self.secrets = parts.secrets
        self.clock = parts.clock
        self.ids = parts.ids
        self.market_feed = parts.market_feed
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        # With a shared writer (`start(writer)`): it, whether this engine is in its
        # ready queue, the batch the last group ended within, and set once the engine
        # has left it (stopped, or its writer died on it).
        self._shared: SharedWriter | None = None
        self._scheduled = False
        self._carry: Batch | None = None
        self._off = threading.Event()
        # Events per command of the last group written (`_group_limit`); an order's
        # few until the first group says otherwise.
        self._events_per_command = _FIRST_EVENTS_PER_COMMAND
        self._pending: list[Event] = []
        self._ctx: Ctx | None = None  # one context for every decision on this state
        # The events the last batch committed (or wrote into a held transaction,
        # `one_transaction`), in order: a run_inline driver (a backtest) follows them
        # without reading them back from the store.
        self.committed: list[Event] = []
        # How each group reaches the log (engine/runtime/commit_strategies.py): inline
        # until the writer thread runs (`Pipelined`) or a block holds one transaction.
        self._strategy: CommitStrategy = Inline(self)
        self._stale = False
        self._died: WriterDied | None = None  # why the writer thread ended, if it did
        self._group: list[Span] = []  # the spans of the group being decided
        # The log position of the first event of the command being decided's own
        # decision (`Batch.positions`): events before it were timers time had made due.
        self._own_first = 0
        # Whether the last group commit reached the disk (a health check reads it).
        self.last_commit_ok = True
        # State snapshots (engine/runtime/startup_cache.py), built off the writer thread
        # and handed back to it to store.
        self._snapshot_every = parts.snapshot_every
        self._snapshotter = parts.snapshotter
        self._snapshotter.deliver = self._snapshot_built
        self.snapshot_base = 0  # position of the newest snapshot written or loaded
        self.loaded_from = 0  # position of the snapshot the last load started from
        self._load()

    # -- start-up ---------------------------------------------------------------------

    def _load(self) -> None:
        """Rebuild the state from the newest state snapshot and the log after it; bring
        read models up if they lag behind."""
        if hasattr(self, "state"):  # the state being replaced was frozen: let it go
            gc.unfreeze()
        # Collected before loading, not after: the same garbage, without walking the
        # millions of objects the load is about to make.
        gc.collect()
        collecting = gc.isenabled()
        gc.disable()  # until the load is frozen: no collection may walk it halfway
        try:
            self._load_state()
        finally:
            if collecting:
                gc.enable()

    def _load_state(self) -> None:
        state, versions, base = load_state(
            self.store, use_snapshots=self._snapshot_every > 0, registry=self.registry
        )
        self.state = state
        self._versions = versions
        self.loaded_from = base
        self.snapshot_base = max(self.snapshot_base, base)
        if state.last_time:
            self.clock.observe(parse_time(state.last_time))
        if state.ext.get("clock_to"):
            self.clock.observe(parse_time(state.ext["clock_to"]))
        if self.store.checkpoint() != state.position:
            log.warning(
                "read models behind the log; rewriting them", checkpoint=self.store.checkpoint()
            )
            rebuild_read_models(self.store, registry=self.registry, projection=self.projection)
        state.appended = []
        self._data_version = self.store.data_version()
        # Millions of long-lived objects: out of the collector's sight from now on, or
        # every full collection would walk them all.
        gc.freeze()

    # -- lifecycle --------------------------------------------------------------------

    def start(self, writer: SharedWriter | None = None) -> Engine:
        """Start the engine's own writer thread, or with `writer` have that shared writer
        (engine/runtime/shared_writer.py) decide this engine's groups in turn with its
        other engines'."""
        if self._thread is None:
            if writer is None:
                self._thread = threading.Thread(target=self._run, name="sandex-writer", daemon=True)
                self._thread.start()
            else:
                thread = writer.attach()  # first: a closed writer refuses, nothing changed
                self._off.clear()
                self._strategy = strategy = Pipelined(self)
                strategy.others_ready = lambda: writer.others_ready(self)
                self._shared = writer
                self._thread = thread
            self.store.start_checkpoints()
            self._maybe_snapshot(self.state.position)
        return self

    def stop(self) -> None:
        self._snapshotter.cancel()
        if self._thread is not None:
            shared = self._shared
            if shared is None:
                self._queue.put(_STOP)
                self._thread.join()
            else:
                self._enqueue(_STOP)
                while not self._off.wait(1) and self._thread.is_alive():
                    pass  # a shared writer that died cannot answer: the loop ends
                self._shared = None
            self._thread = None
        self.store.close()

    def __enter__(self) -> Engine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the writer's front door -------------------------------------------------------

    def submit(self, command: Command) -> Future[Any]:
        reply = Single((command,))
        if self._thread is None:
            reply.set_exception(EngineStopped("the engine is not running"))
            return reply
        self._enqueue(reply)
        if self._died is not None:  # after the put: the dying writer may have drained
            self._refuse_queued()
        return reply

    def submit_many(self, commands: Sequence[Command]) -> Batch:
        """Queue `commands` in this order with one queue operation and one future, as
        the HTTP adapter does with the requests of one event-loop turn. The writer
        decides them as if submitted one by one (a group commit may end among them), and
        answers the batch once the last is durable: `Batch.answer(i)` per command."""
        batch = Batch(list(commands))  # the caller's list may change once handed over
        if self._thread is None:
            answer_all(batch, EngineStopped("the engine is not running"))
        elif not commands:
            batch._complete()
        else:
            self._enqueue(batch)
            if self._died is not None:
                self._refuse_queued()
        return batch

    def execute(self, command: Command, timeout: float | None = 30) -> Any:
        return self.submit(command).result(timeout)

    def run_inline(self, command: Command) -> Any:
        """Decide and commit `command` in the calling thread, with no writer thread: a
        driver that owns the engine alone (a backtest) is then the one writer, and skips
        a thread hop per command, which costs more than most decisions."""
        if self._thread is not None:
            raise RuntimeError("the writer thread is running: submit commands to it instead")
        reply = Single((command,))
        with decimal.localcontext(CONTEXT):
            self._process([reply])
        return reply.result()

    def run_inline_chain(self, commands: Sequence[Command]) -> Batch:
        """`run_inline` for commands that belong together (a backtest sets a market's
        price, then places the order that needs it): decided in order as one batch, one
        write; once one fails, those after it are not decided (answered NotDecided)."""
        if self._thread is not None:
            raise RuntimeError("the writer thread is running: submit commands to it instead")
        chain = _Chain(tuple(commands))
        with decimal.localcontext(CONTEXT):
            self._process([chain] * len(chain.commands))
        return chain

    @contextmanager
    def one_transaction(self, scratch: bool = False) -> Iterator[None]:
        """Hold every `run_inline` commit in one SQLite transaction, committed when the
        block ends: a driver acknowledged once, at its end (a backtest), pays one commit
        instead of one per command.

        Nothing inside the block is acknowledged before it ends, so the commands' events
        and read-model rows are kept in memory and written together (`OneTransaction`,
        engine/runtime/commit_strategies.py), about every `DEFER_EVENTS` events and when
        the block ends: the same rows, a few statements per thousand events instead of a
        savepoint and a statement per table for each command. A reader of the writer's own connection inside the block
        (`WriterQueries`, `store.read`) calls `flush` first. A broken decision is still
        undone alone: what the commands before it decided is written, and the state
        reloads from it; leaving the block on an exception commits the whole commands
        before it, as per-command commits would have.

        `scratch`: for a database nobody reads once the block ends (a backtest's scratch
        log): no rows of append-only tables (the event feed) are made, since its strategy
        reads orders, executions and balances only, and read-model rows are written for
        a reader (`flush`) only, not with the events nor when the block ends."""
        if self._thread is not None:
            raise RuntimeError("the writer thread is running: one transaction is for run_inline")
        self.store.hold()
        held = self._strategy = OneTransaction(self, scratch)
        self.state.appended = None if scratch else []
        try:
            yield
        finally:
            try:
                held.write_held(rows=not scratch)
            finally:
                self._strategy = Inline(self)
                self.state.appended = []
                self.store.release()

    def flush(self) -> None:
        """Write what `one_transaction` holds in memory: its events, the rows its
        commands appended, and the rows of every entity they touched, as they stand now
        (a row is a function of its entity: the last command's row is what each
        command's own write would have left). On a failure nothing of it is written, the
        state reloads from the log, and the error is raised."""
        self._strategy.write_held(rows=True)

    def health(self) -> dict[str, bool]:
        """Whether the engine can take writes, for a health check (no tenant's data):
        the writer thread is alive, the last group commit reached the disk (False from
        a failed one until one succeeds), and the log could be read back into state."""
        thread = self._thread
        return {
            "writer_alive": thread is not None and thread.is_alive() and self._died is None,
            "last_commit_ok": self.last_commit_ok,
            "log_readable": not self._stale,
        }

    def next_deadline(self) -> datetime | None:
        """The next timer's deadline; None while the log is full, whose timers wait."""
        if self._log_full() is not None:
            return None
        return self.state.timers.next_deadline()

    def _log_full(self) -> LogFull | None:
        """The refusal of a decision on a full log (`State.log_full`); None: room."""
        return self.state.log_full(self.settings.world_max_events)

    # -- the writer thread ------------------------------------------------------------

    def _run(self) -> None:
        decimal.setcontext(CONTEXT.copy())
        pipelined = self._strategy = Pipelined(self)
        pipelined.start()
        try:
            self._drain()
        except BaseException as exc:  # noqa: BLE001 - callers must hear of it, not wait
            log.error("the writer thread died", error=repr(exc))
            if self._died is None:
                self._died = WriterDied(f"the engine's writer stopped on an error: {exc!r}")
        finally:
            pipelined.stop()
            self._strategy = Inline(self)
            if self._died is not None:
                self._refuse_queued()

    def _release_memory(self) -> None:
        """The writer has been idle: once the group in flight is committed (the
        connection is the writer's alone), the committer thread ends and the store gives
        back its cache."""
        settled = self._strategy.rest()
        store = capability(self.store, MemoryRelease)
        if store is not None and settled:
            store.release_memory()

    def _refuse_queued(self) -> None:
        """Answer everything queued with why the writer died (from either side of the
        queue: the dying writer, or a caller who queued after it drained)."""
        error = self._died or EngineStopped("the engine is not running")
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, Batch) and not item.done():
                answer_all(item, error)

    def _abandon(self, work: list[Batch], exc: BaseException) -> None:
        """The writer is dying inside a group (`work`, whose spans `_process` noted):
        once the group in flight is answered, answer every command of this one with the
        cause (nothing of it is durable), and the rest of a batch it cut short."""
        died = self._died = WriterDied(f"the engine's writer stopped on an error: {exc!r}")
        try:
            self._strategy.settle()
        finally:
            for batch, start, _ in self._group:
                if batch.done():
                    continue
                for i in range(start, len(batch.values)):
                    batch.errors[i] = died
                    batch.values[i] = None
                answer_all(batch, died)
            for batch in work:
                if not batch.done():
                    answer_all(batch, died)

    def _group_limit(self) -> int:
        """The most commands the next group takes: `group_commit_max`, or fewer, so that
        it holds about `group_commit_events` events if its commands emit as many each as
        the last group's did. A group's first command waits for the whole group to be
        decided and written: its size follows the work it holds, so that a backlog of
        one-event commands is committed in large groups and one of orders in smaller."""
        settings = self.settings
        by_events = int(settings.group_commit_events / self._events_per_command)
        return max(1, min(settings.group_commit_max, by_events))

    def _enqueue(self, item: Any) -> None:
        """Queue `item` for the writer; a shared writer is told this engine has work."""
        self._queue.put(item)
        shared = self._shared
        if shared is not None:
            shared.wake(self)

    def _drain(self) -> None:
        """The engine's own writer thread: one group after another until the stop."""
        q = self._queue
        carry: Batch | None = None  # a batch that the last group commit ended within
        stopping = False
        while True:
            if carry is not None:
                item, carry = carry, None
            elif stopping:
                break
            else:
                try:
                    item = q.get(timeout=_IDLE_SECONDS)
                except queue.Empty:
                    self._release_memory()
                    item = q.get()
            carry, stopping = self._take(item)
        self._refuse_after_stop()

    def _turn(self) -> None:
        """A shared writer's turn (engine/runtime/shared_writer.py): one group of what
        is queued, then back in its ready queue if more is; on the stop, or an error
        that ends the writer for this engine, it leaves the shared writer."""
        if self._off.is_set():  # a stopped engine, or one whose writer died: refuse
            self._refuse_queued()
            return
        shared = self._shared
        assert shared is not None
        strategy = self._strategy
        if (
            isinstance(strategy, Pipelined)
            and shared.others_ready(self)
            and strategy.committing(lambda: shared.wake(self))
        ):
            return  # its next group waits for its COMMIT; the others' are decided meanwhile
        item = self._carry
        if item is None:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
        self._carry = None
        try:
            carry, stopping = self._take(item)
        except BaseException as exc:  # noqa: BLE001 - callers must hear of it, not wait
            log.error("the writer died", error=repr(exc))
            if self._died is None:
                self._died = WriterDied(f"the engine's writer stopped on an error: {exc!r}")
            self._leave()
            return
        if stopping:
            self._refuse_after_stop()
            self._leave()
        elif carry is not None or not self._queue.empty():
            self._carry = carry
            shared.wake(self)

    def _leave(self) -> None:
        """Off the shared writer: the group in flight answered, the rest refused."""
        try:
            self._strategy.rest()
        finally:
            self._strategy = Inline(self)
            if self._died is not None:
                self._refuse_queued()
            self._off.set()

    def _take(self, item: Any) -> tuple[Batch | None, bool]:
        """Decide one group commit from `item` and what is queued behind it (up to the
        group's limit) and hand it over, then store the state snapshots met: (a batch
        the group ended within, or None; whether the stop was met)."""
        q = self._queue
        carry: Batch | None = None
        stopping = False
        # One entry per command, naming its batch: a batch's next command is the
        # first it holds no value for.
        work: list[Batch] = []
        snapshots: list[_SnapshotBuilt] = []
        room = self._group_limit()
        while True:
            if isinstance(item, Batch):
                left = len(item.commands) - len(item.values)
                if left > room:
                    work += [item] * room
                    carry = item
                    break
                work += [item] * left
                room -= left
                if not room:
                    break
            elif item is _STOP:
                stopping = True  # what was queued after the stop is refused
                break
            else:
                snapshots.append(item)
            try:
                item = q.get_nowait()
            except queue.Empty:
                break
        if work:
            try:
                self._process(work)
            except BaseException as exc:
                self._abandon(work, exc)
                raise
        if snapshots:
            self._strategy.settle()  # the connection is the writer's alone again
        for built in snapshots:
            self._store_snapshot(built)
        return carry, stopping

    def _refuse_after_stop(self) -> None:
        """Refuse what arrived after the stop."""
        q = self._queue
        while True:
            try:
                item = q.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, Batch):
                answer_all(item, EngineStopped("the engine is stopping"))

    def _process(self, work: list[Batch]) -> None:
        """Decide one group commit's commands, then hand them to the commit strategy,
        which writes their events, makes them durable and answers: `work` holds one entry
        per command, naming its batch (engine/runtime/reply.py), in order.

        With the writer thread running, the group's COMMIT is handed to the committer
        thread (`Pipelined`, engine/runtime/commit_strategies.py) and this returns at
        once: the next group is decided while the disk syncs this one, on a state that
        already holds it."""
        spans = self._group = _spans(work)
        strategy = self._strategy
        if not strategy.prepare(work, spans):
            return
        if self._stale:  # the log cannot be read: decide nothing on a state it may not hold
            for batch in work:
                fail(batch, Unavailable("the event store cannot be read; retry"))
            complete(spans)
            return
        self._pending = []
        self.committed = []
        broken = False
        suspect = False  # a decision raised unexpectedly: reload the state after the commit
        handle = self._handle
        for batch in work:  # a Batch cannot be cancelled (`Batch` in the runtime's reply module)
            values = batch.values
            if batch.errors and type(batch) is _Chain:
                fail(batch, NotDecided("not decided: the chain broke"))
                continue
            if broken:
                fail(batch, Unavailable("the engine is recovering; retry"))
                continue
            command = batch.commands[len(values)]
            self._own_first = self.state.position + 1
            try:
                values.append(handle(command))
                if self.state.position >= self._own_first:
                    batch.positions[len(values) - 1] = (self._own_first, self.state.position)
            except DomainError as exc:
                fail(batch, exc)
            except _Broken as exc:
                log.error("decision failed after emitting events", error=repr(exc.cause))
                fail(batch, exc.cause)
                broken = True
            except Exception as exc:  # noqa: BLE001 - a bug must not kill the writer
                log.error("decision failed", command=type(command).__name__, error=repr(exc))
                fail(batch, exc)
                suspect = True
        events, self._pending = self._pending, []
        self._events_per_command = max(1.0, len(events) / len(work))
        if broken:
            strategy.settle()
            overrule(spans, lambda old: old or Unavailable("the engine is recovering; retry"))
            strategy.undo_broken()
            complete(spans)
            return
        strategy.commit(spans, events, suspect)

    # -- state snapshots ----------------------------------------------------------------

    def _maybe_snapshot(self, position: int) -> None:
        """Every `snapshot_every_events`, have the snapshot thread build the state at the
        committed `position` from the log (it never touches this state)."""
        every = self._snapshot_every
        due = every and position - self.snapshot_base >= every and not self._stale
        if due and self._snapshotter.request(position):
            self.snapshot_base = position

    def _snapshot_built(self, position: int, check: str, data: bytes) -> None:
        self._enqueue(_SnapshotBuilt(position, check, data))

    def _store_snapshot(self, built: _SnapshotBuilt) -> None:
        try:
            self.store.save_state_snapshot(built.position, SNAPSHOT_FORMAT, built.check, built.data)
            log.info("state snapshot written", position=built.position, bytes=len(built.data))
        except Exception as exc:  # noqa: BLE001 - a snapshot is an optimisation only
            log.warning("state snapshot not written", position=built.position, error=str(exc))

    def wait_for_snapshot(self, timeout: float | None = None) -> None:
        """Block until a snapshot being built has been handed to the writer (tests)."""
        self._snapshotter.wait(timeout)

    def _changed_elsewhere(self) -> bool:
        """Another process wrote the log (`sandex clients revoke` on a live database):
        decide on the state it left, or the commit would collide with its events."""
        try:
            changed = self.store.data_version() != self._data_version
        except Exception:  # noqa: BLE001 - a failing store shows itself at the commit
            return False
        if changed:
            log.warning("the log changed outside the writer; reloading it")
        return changed

    def _publish_unwritten(self) -> None:
        """A group that wrote nothing may still change what the market data feeds show
        (a new subscriber's snapshot, time moving the ladder): published once the group
        before it is committed, so in log order."""
        changes = self.market_feed.collect(self.state, self.clock.now(), ())
        if changes is not None and self._strategy.settle():
            self.market_feed.publish(changes)

    def _recover(self) -> None:
        self.market_feed.reset()
        self.state.dirty.clear()
        self.state.appended = []
        try:
            self._load()
            self._stale = False
            if self._strategy.scratch:
                self.state.appended = None
        except Exception as exc:  # noqa: BLE001
            log.error("recovery from the log failed", error=str(exc))
            self._stale = True  # the state may hold what the log does not: use none of it

    def _now(self) -> datetime:
        """Engine time; never before the last event (clocks are floored on load)."""
        return self.clock.now()

    def _handle(self, command: Command) -> Any:
        decider = self.registry.deciders.get(type(command))
        if decider is None and isinstance(command, AdvanceClock):
            return self._advance(command)
        clock = self.clock
        now = clock.now()
        if self.state.timers.due(now):
            self._fire_due(now)
            now = clock.now()
            self._own_first = self.state.position + 1  # the timers were time's doing
        if decider is None:
            if isinstance(command, Tick):
                return None
            raise Invalid(f"unknown command {type(command).__name__}")
        actor = command.actor
        meta = {"command": type(command).__name__, "client_id": actor.client_id}
        if actor.request_id:
            meta["request_id"] = actor.request_id
        return self._decide(decider, command, now, meta)

    def _decide(
        self, decider: Any, arg: Any, now: datetime, meta: dict[str, Any], bounded: bool = True
    ) -> Any:
        # Every event of one decision names the position of its first: a decision is the
        # unit the state is consistent after, so time travel cuts the log only there.
        state = self.state
        position = meta["command_position"] = state.position + 1  # `meta` is its own
        self.ids.start(position, now)
        ctx = self._ctx
        if ctx is None or ctx.state is not state:
            ctx = self._ctx = Ctx(
                state,
                now,
                self.ids,
                self.secrets,
                self.settings,
                self.registry.appliers,
                self._versions,
                meta,
                self.registry.price_sources,
            )
        else:
            ctx.begin(now, meta)
        # Unbounded: the closing event of a clock move that began with room in the log,
        # which records where the clock stands (its timers were bounded).
        ctx.max_events = self.settings.world_max_events if bounded else None
        try:
            reply = decider(ctx, arg)
            if ctx.emitted and self.settings.assert_invariants:
                broken = check_state(state, self.registry.checks)
                if broken:
                    raise AssertionError(f"invariant broken: {broken[0]}")
            return reply
        except Exception as exc:
            if ctx.emitted:
                raise _Broken(exc) from exc
            raise
        finally:
            self._pending += ctx.emitted

    def _fire_due(self, until: datetime) -> None:
        """Fire the timers due by `until`, in order, while the log has room: a full
        log's timers stay due (popped, one would be lost from the state, not the log)."""
        timers = self.state.timers
        while self._log_full() is None and (due := timers.pop_due(until)) is not None:
            deadline, kind, key = due
            if isinstance(self.clock, ManualClock) and deadline > self.clock.now():
                self.clock.set(deadline)
            at = max(deadline, self._now())
            self._decide(self.registry.timers[kind], key, at, {"command": "Timer", "timer": kind})

    def _advance(self, command: AdvanceClock) -> dict[str, str]:
        clock = self.clock
        if not isinstance(clock, ManualClock):
            raise Conflict("the sandbox runs on a wall clock; only a manual clock can be moved")
        target, field = _clock_target(command, clock.now())
        if target < clock.now():
            raise Invalid(
                f"{field} invalid: the clock never moves backwards (now {format_time(clock.now())})",
                field=field,
            )
        if target > LATEST:
            raise Invalid(
                f"{field} invalid: the clock cannot move past {format_time(LATEST)}",
                field=field,
            )
        full = self._log_full()
        if full is not None:  # before the clock moves: it moves only with its event
            raise full
        self._fire_due(target)
        clock.set(target)
        self._decide(
            lambda ctx, _: ctx.emit("ClockAdvanced", "clock", {"to": ctx.now_text}),
            None,
            target,
            {"command": "AdvanceClock", "client_id": command.actor.client_id},
            bounded=False,
        )
        return {"now": format_time(target), "mode": "manual"}


def _clock_target(command: AdvanceClock, now: datetime) -> tuple[datetime, str]:
    """Where `command` moves a clock that reads `now`, and the request field it came
    from (for the error that refuses it)."""
    if (command.to is None) == (command.by is None):
        raise Invalid("exactly one of advance_seconds and set_to is required", field="set_to")
    if command.to is not None:
        return command.to, "set_to"
    try:
        return now + command.by, "advance_seconds"  # type: ignore[operator]
    except OverflowError:
        return datetime.max.replace(tzinfo=now.tzinfo), "advance_seconds"


def _spans(work: list[Batch]) -> list[Span]:
    if len(work) == 1:  # one command (run_inline): no counting
        batch = work[0]
        return [(batch, len(batch.values), len(batch.values) + 1)]
    counts: dict[Batch, int] = {}
    for batch in work:
        counts[batch] = counts.get(batch, 0) + 1
    return [
        (batch, len(batch.values), len(batch.values) + count) for batch, count in counts.items()
    ]


class _Chain(Batch):
    """Commands of `Engine.run_inline_chain`: after one fails, the rest are not decided."""

    __slots__ = ()


class _Broken(Exception):
    """A decision raised after it emitted: the in-memory state is no longer trustworthy."""

    def __init__(self, cause: BaseException):
        super().__init__(repr(cause))
        self.cause = cause
