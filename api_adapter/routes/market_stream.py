"""The public WebSocket feeds at the service's paths: `/marketdata[/{market}]` (a SNAPSHOT
of each book, then an UPDATE per level that changes) and `/executiondata[/{market}]`
(the last trade, then every trade). No token, as the service. docs/market-data.md.

The connection only moves messages: the engine's hub (engine/runtime/market_feed.py)
decides what they are and fills this connection's bounded queue after each commit; the
connection sends what is queued, and ends when the hub ends it (too slow), when a send
takes longer than `stream_send_timeout_seconds`, or when the client leaves. Nothing
here waits on the writer, and the writer never waits on a client."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from typing import Any

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from sandex.engine import Engine
from sandex.engine.domain.trading.market_feed import FEED_MARKETS
from sandex.engine.kernel.commands import Tick
from sandex.engine.kernel.logs import get_logger
from sandex.engine.runtime.market_feed import BOOK, TRADES, Subscriber

log = get_logger("sandex.stream")

TRY_LATER = 1013  # too many connections from this address
UNKNOWN = 1008  # policy violation: no such market
GOING_AWAY = 1001


class _Streams:
    """The app's open feed connections, counted per client address (event loop only)."""

    def __init__(self) -> None:
        self.per_ip: Counter[str] = Counter()
        self.last_tick = 0.0


def _streams(websocket: WebSocket) -> _Streams:
    state = websocket.app.state
    streams = getattr(state, "streams", None)
    if streams is None:
        streams = state.streams = _Streams()
    return streams  # type: ignore[no-any-return]


async def _read_until_gone(websocket: WebSocket) -> None:
    """The client sends nothing the feed reads (the server's WebSocket protocol closes a
    connection that sends a message): wait until it disconnects."""
    with contextlib.suppress(WebSocketDisconnect, RuntimeError):
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass


async def _wall_ticks(engine: Engine, streams: _Streams) -> None:
    """On a wall clock the house's ladder moves every market step with no event: ask the
    writer for a group every step, so the feed sees each move (one tick per app, however
    many connections)."""
    step = engine.settings.market_step_seconds
    while True:
        await asyncio.sleep(step)
        now = time.monotonic()
        if now - streams.last_tick >= step * 0.9:
            streams.last_tick = now
            engine.submit(Tick())


async def _serve(websocket: WebSocket, kind: str, market: str | None) -> None:
    engine: Engine = websocket.app.state.engine
    settings = engine.settings
    streams = _streams(websocket)
    await websocket.accept()
    if market is not None and market not in FEED_MARKETS:
        await websocket.close(UNKNOWN, f"unknown market: {market[:64]}")
        return
    address = websocket.client.host if websocket.client else ""
    if streams.per_ip[address] >= settings.stream_connections_per_ip:
        most = settings.stream_connections_per_ip
        await websocket.close(TRY_LATER, f"too many connections: at most {most} per address")
        return
    streams.per_ip[address] += 1
    loop = asyncio.get_running_loop()
    ready = asyncio.Event()

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the connection is gone
            loop.call_soon_threadsafe(ready.set)

    markets = (market,) if market is not None else FEED_MARKETS
    sub = Subscriber(kind, markets, settings.stream_queue_messages, wake)
    feed = engine.market_feed
    wanted = feed.subscribe(sub)
    tasks = [asyncio.ensure_future(_read_until_gone(websocket))]
    if settings.clock != "manual":
        tasks.append(asyncio.ensure_future(_wall_ticks(engine, streams)))
    try:
        if wanted:
            engine.submit(Tick())  # a group soon, whose publication brings the snapshot
        await pump(websocket, sub, ready, tasks[0], settings.stream_send_timeout_seconds)
    finally:
        feed.unsubscribe(sub)
        for task in tasks:
            task.cancel()
        streams.per_ip[address] -= 1
        if not streams.per_ip[address]:
            del streams.per_ip[address]


async def pump(
    websocket: WebSocket,
    sub: Subscriber,
    ready: asyncio.Event,
    gone: asyncio.Future[Any],
    timeout: float,
) -> None:
    """Send what the hub queues for `sub` until the client leaves or the hub ends it."""
    while True:
        waiter: asyncio.Future[Any] = asyncio.ensure_future(ready.wait())
        await asyncio.wait([waiter, gone], return_when=asyncio.FIRST_COMPLETED)
        if gone.done():
            waiter.cancel()
            return
        ready.clear()
        items, end = sub.take()
        try:
            async with asyncio.timeout(timeout):
                for text in items:
                    await websocket.send_text(text)
        except (TimeoutError, WebSocketDisconnect, RuntimeError, OSError):
            log.info("market data client dropped: a send did not complete", timeout=timeout)
            with contextlib.suppress(Exception):
                await websocket.close(1008, "too slow: a send did not complete in time")
            return
        if end is not None:
            log.info("market data client closed", code=end[0], reason=end[1])
            with contextlib.suppress(Exception):
                await websocket.close(*end)
            return


async def market_data(websocket: WebSocket) -> None:
    await _serve(websocket, BOOK, websocket.path_params.get("market"))


async def execution_data(websocket: WebSocket) -> None:
    await _serve(websocket, TRADES, websocket.path_params.get("market"))


ROUTES = [
    WebSocketRoute("/marketdata", market_data),
    WebSocketRoute("/marketdata/{market}", market_data),
    WebSocketRoute("/executiondata", execution_data),
    WebSocketRoute("/executiondata/{market}", execution_data),
]
