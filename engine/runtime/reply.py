"""The writer's answer to one command: a `concurrent.futures.Future` that costs little.

The standard Future builds a `threading.Condition` (a Python-level object around an
RLock) for every instance; at tens of thousands of commands a second that is a large
share of a small command's cost, paid on the caller's thread. A Reply is a subclass, so
`asyncio.wrap_future` and any caller of `result()` take it as it is, but it waits on a
bare lock that it holds until the answer is set.

Commands submitted together (`Engine.submit_many`) share one `Batch`: one future, one
lock and one queue operation for all of them, however many there are.

A submitted command cannot be cancelled: it is in the writer's queue and will be
decided (what was acknowledged is never lost, and what was queued is never silently
dropped). `cancel()` answers False, as a standard Future does for a running one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from sandex.engine.kernel.logs import get_logger

log = get_logger("sandex.engine")
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
        self._callbacks: list[Callable[[Future[Any]], object]] | None = None

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
            callbacks, self._callbacks = self._callbacks, None
        self._gate.release()
        for callback in callbacks or ():
            try:
                callback(self)
            except Exception as exc:  # noqa: BLE001 - the answering thread must go on
                # It answers the rest of its group and the groups after it: a caller's
                # broken callback must not leave them unanswered.
                log.error("a reply's callback raised", error=repr(exc))

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
                if self._callbacks is None:
                    self._callbacks = []
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


class Batch(Reply):
    """The answer to commands submitted together, given when the last of them is
    durable: `result()` lists their values in order (None for a command that failed),
    `errors` maps the index of each failed command to its exception, and `answer(i)`
    gives command `i`'s value or raises its exception. `positions` maps the index of
    each command whose own decision recorded events to the log positions of its first
    and last (the timers it fired first are not its own; a clock move's are), which
    whoever asked can show as what the command caused (the HTTP request log).

    The writer appends to `values` (and `errors`) as it decides, so that a batch larger
    than one group commit can be decided over several; it is answered when every
    command has a value."""

    __slots__ = ("commands", "values", "errors", "positions")

    def __init__(self, commands: Sequence[Any]) -> None:
        super().__init__()
        self.commands = commands
        self.values: list[Any] = []
        self.errors: dict[int, BaseException] = {}
        self.positions: dict[int, tuple[int, int]] = {}

    def answer(self, index: int, timeout: float | None = None) -> Any:
        self._wait(timeout)
        error = self.errors.get(index)
        if error is not None:
            raise error
        return self.values[index]

    def _complete(self) -> None:
        """Called by the writer once every command has a value."""
        self.set_result(self.values)


class Single(Batch):
    """One command submitted alone: answered with its own value or exception."""

    __slots__ = ()

    def _complete(self) -> None:
        error = self.errors.get(0)
        if error is None:
            self.set_result(self.values[0])
        else:
            self.set_exception(error)


# The commands one group commit holds of a batch: (batch, first index, end index). A
# batch may span groups, and the writer decides the next group's part of it while the
# committer answers this one's: each side works by the indexes fixed here.
Span = tuple[Batch, int, int]


def fail(batch: Batch, error: BaseException) -> None:
    """Give the batch's next command `error` for an answer."""
    batch.errors[len(batch.values)] = error
    batch.values.append(None)


def overrule(spans: list[Span], error: Any) -> None:
    """Answer every command of the group with `error(its own error or None)`: nothing of
    this group commit is durable."""
    for batch, start, end in spans:
        for i in range(start, end):
            batch.errors[i] = error(batch.errors.get(i))
            batch.values[i] = None


def complete(spans: list[Span]) -> None:
    """Answer each batch whose last command this group holds."""
    for batch, _, end in spans:
        if end == len(batch.commands):
            batch._complete()


def answer_all(batch: Batch, error: BaseException) -> None:
    """Answer every command of the batch not yet decided with `error`."""
    while len(batch.values) < len(batch.commands):
        fail(batch, error)
    batch._complete()


__all__ = [
    "Batch",
    "CancelledError",
    "Reply",
    "Single",
    "Span",
    "answer_all",
    "complete",
    "fail",
    "overrule",
]
