"""The writer's answer to one command: a `concurrent.futures.Future` that costs little.

The standard Future builds a `threading.Condition` (a Python-level object around an
RLock) for every instance; at tens of thousands of commands a second that is a large
share of a small command's cost, paid on the caller's thread. A Reply is a subclass, so
`asyncio.wrap_future` and any caller of `result()` take it as it is, but it waits on a
bare lock that it holds until the answer is set.

A submitted command cannot be cancelled: it is in the writer's queue and will be
decided (what was acknowledged is never lost, and what was queued is never silently
dropped). `cancel()` answers False, as a standard Future does for a running one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

# Guards the callback lists of every Reply: held only to append or swap a list.
_CALLBACKS = threading.Lock()


class Reply(Future):  # type: ignore[type-arg]
    __slots__ = ("_gate", "_finished", "_value", "_error", "_callbacks")

    def __init__(self) -> None:  # no super().__init__(): that builds the Condition
        self._gate = threading.Lock()
        self._gate.acquire()
        self._finished = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list[Callable[[Future[Any]], object]] = []

    def __repr__(self) -> str:
        return f"<Reply {'finished' if self._finished else 'pending'}>"

    # -- the writer's side ------------------------------------------------------------

    def set_running_or_notify_cancel(self) -> bool:
        return True

    def set_result(self, result: Any) -> None:
        self._value = result
        self._finish()

    def set_exception(self, exception: BaseException | None) -> None:
        self._error = exception
        self._finish()

    def _finish(self) -> None:
        with _CALLBACKS:
            if self._finished:
                raise RuntimeError("a Reply is answered once")
            self._finished = True
            callbacks, self._callbacks = self._callbacks, []
        self._gate.release()
        for callback in callbacks:
            callback(self)

    # -- the caller's side ------------------------------------------------------------

    def cancel(self) -> bool:
        return False

    def cancelled(self) -> bool:
        return False

    def running(self) -> bool:
        return not self._finished

    def done(self) -> bool:
        return self._finished

    def add_done_callback(self, fn: Callable[[Future[Any]], object]) -> None:
        with _CALLBACKS:
            if not self._finished:
                self._callbacks.append(fn)
                return
        fn(self)

    def _wait(self, timeout: float | None) -> None:
        if self._finished:
            return
        if not self._gate.acquire(timeout=-1 if timeout is None else max(timeout, 0)):
            raise FutureTimeout()
        self._gate.release()  # let every other waiter through too

    def result(self, timeout: float | None = None) -> Any:
        self._wait(timeout)
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._wait(timeout)
        return self._error


__all__ = ["CancelledError", "Reply"]
