"""Wall-clock timers: APScheduler wakes the writer when a deadline has passed.

It never changes state itself; it submits a `Tick` into the same queue as HTTP, so the
writer stays the only thread that decides anything.

Every started `Scheduler` of one interval in the process shares one APScheduler job,
which looks at each engine's earliest deadline in turn: a server's worlds, each on a
wall clock of its own, cost one thread between them rather than a scheduler thread and
a worker pool each waking every interval."""

from __future__ import annotations

import threading
from datetime import UTC

from apscheduler.executors.debug import DebugExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from sandex.engine.kernel.commands import Tick
from sandex.engine.kernel.logs import get_logger
from sandex.engine.runtime.writer import Engine

log = get_logger("sandex.timers")


class Scheduler:
    def __init__(self, engine: Engine, interval_seconds: float = 0.1) -> None:
        self.engine = engine
        self.interval = interval_seconds
        self._inflight = False
        self._ticker: _Ticker | None = None

    def _tick(self) -> None:
        if self._inflight:
            return
        deadline = self.engine.next_deadline()
        if deadline is None or deadline > self.engine.clock.now():
            return
        self._inflight = True
        future = self.engine.submit(Tick())
        future.add_done_callback(lambda _: setattr(self, "_inflight", False))

    def start(self) -> None:
        if self._ticker is None:
            self._ticker = _Ticker.join(self)

    def stop(self) -> None:
        """From now on this engine is not ticked; a pass under way has ended."""
        ticker, self._ticker = self._ticker, None
        if ticker is not None:
            ticker.leave(self)


class _Ticker:
    """One APScheduler scheduler (one thread: its jobs run in it, not in a worker pool)
    ticks every started `Scheduler` of one interval, every interval; it stops with the
    last of them."""

    _lock = threading.Lock()  # the tickers and their members
    _tickers: dict[float, _Ticker] = {}

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.members: list[Scheduler] = []
        self._passing = threading.Lock()  # held during a pass: `leave` waits for it
        self._passer: int | None = None  # the thread of the passes
        self._scheduler = BackgroundScheduler(timezone=UTC, executors={"default": DebugExecutor()})
        self._scheduler.add_job(
            self._pass,
            "interval",
            seconds=interval,
            max_instances=1,
            coalesce=True,
            id="sandex-timers",
        )

    @classmethod
    def join(cls, scheduler: Scheduler) -> _Ticker:
        with cls._lock:
            ticker = cls._tickers.get(scheduler.interval)
            if ticker is None:
                ticker = cls._tickers[scheduler.interval] = _Ticker(scheduler.interval)
                ticker._scheduler.start()
            ticker.members.append(scheduler)
            return ticker

    def leave(self, scheduler: Scheduler) -> None:
        with self._lock:
            self.members.remove(scheduler)
            last = not self.members
            if last:
                del self._tickers[self.interval]
        if threading.get_ident() == self._passer:
            # stopped by a tick: its scheduler cannot wait for its own thread
            if last:
                threading.Thread(target=self._scheduler.shutdown, daemon=True).start()
            return
        with self._passing:  # a pass that may hold `scheduler` has ended
            pass
        if last:
            self._scheduler.shutdown(wait=True)

    def _pass(self) -> None:
        self._passer = threading.get_ident()
        with self._passing:
            with self._lock:
                members = list(self.members)
            for scheduler in members:
                try:
                    scheduler._tick()
                except Exception as exc:  # noqa: BLE001 - the other engines still tick
                    log.warning("timer tick failed", error=repr(exc))
