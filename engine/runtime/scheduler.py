"""Wall-clock timers: a ticker thread wakes the writer when a deadline has passed.

It never changes state itself; it submits a `Tick` into the same queue as HTTP, so the
writer stays the only thread that decides anything.

Every started `Scheduler` of one interval in the process shares one ticker thread,
which looks at each engine's earliest deadline in turn: a server's worlds,
each on a wall clock of its own, cost one thread between them rather
than a thread and a worker pool each waking every interval."""

from __future__ import annotations

import threading

from engine.kernel.commands import Tick
from engine.kernel.logs import get_logger
from engine.runtime.writer import Engine

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
    """The thread that ticks every started scheduler of one interval, every interval;
    it ends when the last one stops."""

    _lock = threading.Lock()  # the tickers and their members
    _tickers: dict[float, _Ticker] = {}

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.members: list[Scheduler] = []
        self._stopping = threading.Event()
        self._passing = threading.Lock()  # held during a pass: `leave` waits for it
        self._thread = threading.Thread(target=self._run, name="sandex-timers", daemon=True)

    @classmethod
    def join(cls, scheduler: Scheduler) -> _Ticker:
        with cls._lock:
            ticker = cls._tickers.get(scheduler.interval)
            if ticker is None:
                ticker = cls._tickers[scheduler.interval] = _Ticker(scheduler.interval)
                ticker._thread.start()
            ticker.members.append(scheduler)
            return ticker

    def leave(self, scheduler: Scheduler) -> None:
        with self._lock:
            self.members.remove(scheduler)
            last = not self.members
            if last:
                del self._tickers[self.interval]
                self._stopping.set()
        with self._passing:  # a pass that may hold `scheduler` has ended
            pass
        if last and threading.current_thread() is not self._thread:
            self._thread.join()

    def _run(self) -> None:
        while not self._stopping.wait(self.interval):
            with self._passing:
                with self._lock:
                    members = list(self.members)
                for scheduler in members:
                    try:
                        scheduler._tick()
                    except Exception as exc:  # noqa: BLE001 - the other engines still tick
                        log.warning("timer tick failed", error=repr(exc))
