"""The writer's Reply behaves as the Future its callers (threads and asyncio) expect."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import pytest

from sandex.engine.runtime.reply import Reply


def test_a_result_set_on_another_thread_reaches_every_waiter() -> None:
    reply = Reply()
    seen: list[object] = []
    waiters = [threading.Thread(target=lambda: seen.append(reply.result(5))) for _ in range(3)]
    for w in waiters:
        w.start()
    assert not reply.done() and reply.running()
    reply.set_result({"ok": 1})
    for w in waiters:
        w.join(5)
    assert seen == [{"ok": 1}] * 3 and reply.done()


def test_an_unanswered_reply_times_out_and_cannot_be_cancelled() -> None:
    reply = Reply()
    with pytest.raises(FutureTimeout):
        reply.result(0.01)
    assert reply.cancel() is False and not reply.cancelled()
    reply.set_exception(ValueError("refused"))
    with pytest.raises(ValueError, match="refused"):
        reply.result(0)
    assert isinstance(reply.exception(), ValueError)
    with pytest.raises(RuntimeError):
        reply.set_result(1)  # answered once


def test_callbacks_run_once_whether_added_before_or_after_the_answer() -> None:
    reply = Reply()
    calls: list[str] = []
    reply.add_done_callback(lambda r: calls.append("before"))
    reply.set_result(None)
    reply.add_done_callback(lambda r: calls.append("after"))
    assert calls == ["before", "after"]


def test_asyncio_awaits_a_reply_answered_by_a_thread() -> None:
    async def main() -> object:
        reply = Reply()
        threading.Timer(0.01, reply.set_result, args=("done",)).start()
        return await asyncio.wrap_future(reply)

    assert asyncio.run(main()) == "done"


def test_a_callback_that_raises_neither_stops_the_others_nor_the_answering_thread() -> None:
    """The committer thread answers whole groups: one caller's broken callback must not
    leave the callbacks after it, or the thread itself, without their answer."""
    reply = Reply()
    seen: list[Any] = []

    def broken(_: Any) -> None:
        raise RuntimeError("the loop is closed")

    reply.add_done_callback(broken)
    reply.add_done_callback(lambda r: seen.append(r.result()))
    reply.set_result(7)  # returns: nothing propagates to the thread that answers
    assert seen == [7] and reply.result(0) == 7
