"""Wall-clock timers: APScheduler wakes the writer when a deadline has passed.

It never changes state itself; it submits a `Tick` into the same queue as HTTP, so the
writer stays the only thread that decides anything."""

from __future__ import annotations

from datetime import UTC

from apscheduler.schedulers.background import BackgroundScheduler

from engine.kernel.commands import Tick
from engine.runtime.writer import Engine


class Scheduler:
    def __init__(self, engine: Engine, interval_seconds: float = 0.1) -> None:
        self.engine = engine
        self.interval = interval_seconds
        self._scheduler = BackgroundScheduler(timezone=UTC)
        self._inflight = False

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
        self._scheduler.add_job(
            self._tick,
            "interval",
            seconds=self.interval,
            max_instances=1,
            coalesce=True,
            id="sandex-timers",
        )
        self._scheduler.start()

    def stop(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=True)
