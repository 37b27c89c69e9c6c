"""The server's front: `/w/{world}/...` goes to that world's app with the prefix moved
from the path to `root_path` (so the world's app sees the default world's paths), and
every other request to the default world's app, untouched."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from sandex.api_adapter.problems import domain_problem
from sandex.api_adapter.worlds.manager import WorldManager
from sandex.engine.kernel.errors import NotFound, Unavailable
from sandex.engine.kernel.logs import get_logger

log = get_logger("sandex.worlds")

PREFIX = "/w/"


class WorldDispatch:
    """An ASGI app in front of the default world's `app` (made by `create_app`, whose
    `app.state.worlds` keeps the other worlds)."""

    def __init__(self, app: Any) -> None:
        self.app: ASGIApp = app
        self.manager: WorldManager = app.state.worlds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not scope["path"].startswith(PREFIX):
            await self.app(scope, receive, send)
            return
        world_id, slash, rest = scope["path"][len(PREFIX) :].partition("/")
        feed = scope["type"] == "websocket"  # a deletion waits for requests, not feeds
        try:
            served = self.manager.enter(world_id, feed=feed)
        except Unavailable as exc:  # its database refused to open it (`store_refused`)
            await _refuse(scope, receive, send, exc)
            return
        if served is None:
            await _refuse(scope, receive, send, NotFound(f"world not found with id {world_id}"))
            return
        prefix = PREFIX + world_id
        child = dict(scope)
        child["path"] = slash + rest if slash else "/"
        child["root_path"] = scope.get("root_path", "") + prefix
        raw = scope.get("raw_path")
        if raw is not None and raw.startswith(prefix.encode()):
            child["raw_path"] = raw[len(prefix) :] or b"/"
        started = False

        async def sending(message: Any) -> None:
            nonlocal started
            if message["type"] in ("http.response.start", "websocket.accept", "websocket.close"):
                started = True
            await send(message)

        try:
            await served.app(child, receive, sending)
        except Exception as exc:
            # A world deleted under its request: its engine and connections are gone.
            if started or self.manager.is_current(world_id, served):
                raise
            log.info("request of a deleted world", world=world_id, error=repr(exc))
            await _refuse(scope, receive, send, Unavailable(f"world {world_id} was deleted"))
        finally:
            self.manager.leave(world_id, served, feed=feed)


async def _refuse(scope: Scope, receive: Receive, send: Send, error: Any) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": error.detail[:120]})
        return
    await domain_problem(error)(scope, receive, send)
