"""Hand a command to the engine's writer and await its answer without blocking the loop.

The loop and the writer meet through one bridge per event loop, which batches both ways:

- Commands submitted while the loop runs one iteration (the requests that arrived
  together) reach the writer's queue together, at the end of it, in one
  `Engine.submit_many` (one queue operation and one future for all of them). The
  writer starts a batch the moment its queue holds anything, so a command queued alone
  would make it decide and commit a batch of one while the rest of the wave waits for
  the next commit.
- Answers come back with one wake-up of the loop per batch rather than one per command
  (asyncio.wrap_future schedules a callback into the loop for each), which is work the
  writer does between its commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections import deque
from contextvars import ContextVar
from functools import partial
from typing import Any

from fastapi import Request

from sandex.api_adapter.auth import Principal
from sandex.engine import Engine
from sandex.engine.kernel.commands import Actor, Command, CountPoll
from sandex.engine.runtime.reply import Batch


def actor(request: Request, principal: Principal) -> Actor:
    return actor_of(principal, getattr(request.state, "client_request_id", "") or "")


# The actors of requests without a request id of the client's (most of them), one per
# client: an Actor is immutable, and making one was a tenth of the fast lane's own work.
_ACTORS: dict[tuple[str, str], Actor] = {}
_MAX_ACTORS = 4096


def actor_of(principal: Principal, client_request_id: str) -> Actor:
    """The command's actor; only a request id the client sent enters the log."""
    if client_request_id:
        return Actor(principal.customer_id, principal.client_id, client_request_id)
    key = principal.customer_id, principal.client_id
    made = _ACTORS.get(key)
    if made is None:
        if len(_ACTORS) >= _MAX_ACTORS:
            _ACTORS.clear()
        made = _ACTORS[key] = Actor(principal.customer_id, principal.client_id)
    return made


async def run(request: Request, command: Command) -> Any:
    return await submit(request.app.state.engine, command)


async def count_poll(request: Request, who: Principal, item_id: str) -> None:
    """A read of an item the world paces `after_polls`: counted (and the item settled at
    the last poll) before it is read. Any other read writes nothing."""
    if request.app.state.queries.polls_awaited(who.customer_id, item_id):
        await run(request, CountPoll(actor=actor(request, who), item_id=item_id))


# The first and last log position of each decision the request being served caused, a
# list the request log sets per request (None: nobody keeps them).
Caused = list[tuple[int, int]]
CAUSED: ContextVar[Caused | None] = ContextVar("sandex_caused", default=None)


def submit(engine: Engine, command: Command) -> asyncio.Future[Any]:
    """The answer to `command`, to be awaited on the running loop."""
    loop = asyncio.get_running_loop()
    bridge = _bridges.get(loop)
    if bridge is None:
        bridge = _bridges[loop] = _Bridge(loop)
    return bridge.submit(engine, command, CAUSED.get())


# A command handed over: its waiter, and its request's list of what it caused.
_Entry = tuple[Command, asyncio.Future[Any], Caused | None]


class _Bridge:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.outbox: list[tuple[Engine, _Entry]] = []
        self.inbox: deque[tuple[list[_Entry], Batch]] = deque()
        self.waking = False

    def submit(
        self, engine: Engine, command: Command, caused: Caused | None
    ) -> asyncio.Future[Any]:
        waiter = self.loop.create_future()
        if not self.outbox:
            self.loop.call_soon(self._flush)
        self.outbox.append((engine, (command, waiter, caused)))
        return waiter

    def _flush(self) -> None:
        outbox, self.outbox = self.outbox, []
        per_engine: dict[Engine, list[_Entry]] = {}
        for engine, entry in outbox:
            per_engine.setdefault(engine, []).append(entry)
        for engine, entries in per_engine.items():
            self._hand_over(engine, entries)

    def _hand_over(self, engine: Engine, entries: list[_Entry]) -> None:
        """One queue operation and one future for the turn's commands to `engine`."""
        try:
            batch = engine.submit_many([entry[0] for entry in entries])
        except BaseException as exc:  # noqa: BLE001 - the callers get it, not the loop
            for _, waiter, _ in entries:
                waiter.set_exception(exc)
            return
        batch.add_done_callback(partial(self._answered, entries))

    def _answered(self, entries: list[_Entry], batch: Batch) -> None:
        """Run by whoever answers (the writer thread): queue it, wake the loop once."""
        self.inbox.append((entries, batch))
        if not self.waking:
            self.waking = True
            # a closed loop: nobody awaits the answer any more
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        self.waking = False  # before draining: an answer queued from now on wakes again
        inbox = self.inbox
        while inbox:
            entries, batch = inbox.popleft()
            values, errors, positions = batch.result(), batch.errors, batch.positions
            for i, (_, waiter, caused) in enumerate(entries):
                error = errors.get(i) if errors else None
                if caused is not None and error is None and i in positions:
                    caused.append(positions[i])  # committed, whether or not it is awaited
                if waiter.done():  # the request was cancelled; its command was still decided
                    continue
                if error is None:
                    waiter.set_result(values[i])
                else:
                    waiter.set_exception(error)


_bridges: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Bridge] = (
    weakref.WeakKeyDictionary()
)
