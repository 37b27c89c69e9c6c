"""One writer thread, and one committer thread, for many engines (a server's worlds).

Each engine keeps its own queue, state, store and commit pipeline; the shared writer
decides whichever engines have work, one group each in turn (`Engine._turn`), and hands
every group's COMMIT to its one committer (`Committer`). Driven at once, engines of
their own threads each woke a writer and a committer per group and took turns on the
GIL, which every SQLite call gives up and takes back: a burst over many engines now
costs one wake-up of each of two threads, as one engine's does.

Per engine as before: nobody is answered before their COMMIT returns, a failed COMMIT
fails that engine's group and the one decided behind it, an engine idle for a while
gives back its store's memory (`Engine._release_memory`; the committer thread ends once
every engine rests), `stop` answers the group in flight and refuses what comes after,
and an error that would have ended an engine's own writer thread ends it for that
engine alone (`WriterDied`), the others going on."""

from __future__ import annotations

import decimal
import queue
import threading
import time
from typing import TYPE_CHECKING

from sandex.engine.kernel.logs import get_logger
from sandex.engine.kernel.money import CONTEXT
from sandex.engine.runtime import writer as writer_module

if TYPE_CHECKING:
    from sandex.engine.runtime.writer import Engine

log = get_logger("sandex.engine")

_CLOSE = None  # in the ready queue: the thread ends


class SharedWriter:
    """The writer thread of every engine started on it (`Engine.start(writer)`):
    started by the first, ended by `close` once they are stopped."""

    def __init__(self) -> None:
        self._ready: queue.SimpleQueue[Engine | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def thread(self) -> threading.Thread | None:
        return self._thread

    def attach(self) -> threading.Thread:
        """The thread an engine starting on this writer runs on (started if need be).
        Refused once closed: a thread started then would have nobody to end it."""
        with self._lock:
            if self._closed:
                raise writer_module.EngineStopped("the shared writer is closed")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._loop, name="sandex-writer", daemon=True
                )
                self._thread.start()
            return self._thread

    def others_ready(self, engine: Engine) -> bool:
        """Whether an engine other than `engine` waits for a turn (`engine` itself may
        be queued again while in its turn: the HTTP side hands it more meanwhile)."""
        return self._ready.qsize() > engine._scheduled

    def wake(self, engine: Engine) -> None:
        """`engine` has work: give it a turn (once, however often it is told)."""
        if not engine._scheduled:
            engine._scheduled = True
            self._ready.put(engine)

    def close(self) -> None:
        """End the thread (its engines stopped first: the server is stopping); no
        engine starts on this writer after."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
        if thread is not None:
            self._ready.put(_CLOSE)
            thread.join()

    def _loop(self) -> None:
        decimal.setcontext(CONTEXT.copy())
        ready = self._ready
        # the engines that had work since they last gave back their memory, with when
        # their last turn was, oldest first
        busy: dict[Engine, float] = {}
        try:
            while True:
                if busy:
                    idle = writer_module._IDLE_SECONDS
                    wait = next(iter(busy.values())) + idle - time.monotonic()
                    try:
                        engine = ready.get(timeout=max(0.0, wait))
                    except queue.Empty:
                        self._release_idle(busy)
                        continue
                else:
                    engine = ready.get()
                if engine is _CLOSE:
                    return
                engine._scheduled = False
                engine._turn()
                busy.pop(engine, None)
                if not engine._off.is_set():
                    busy[engine] = time.monotonic()
                self._release_idle(busy)
        finally:
            for engine in busy:
                engine._strategy.settle()

    @staticmethod
    def _release_idle(busy: dict[Engine, float]) -> None:
        """Each engine with nothing queued for `_IDLE_SECONDS` gives back its memory."""
        idle = writer_module._IDLE_SECONDS
        now = time.monotonic()
        while busy:
            engine, last = next(iter(busy.items()))
            if now - last < idle:
                return
            del busy[engine]
            if not engine._off.is_set():
                try:
                    engine._release_memory()
                except Exception as exc:  # noqa: BLE001 - memory kept, the writer goes on
                    log.warning("an idle engine kept its memory", error=repr(exc))
