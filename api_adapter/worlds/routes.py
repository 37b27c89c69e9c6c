"""`/v2/sandbox/worlds`: create, list, read and delete the server's other worlds (the
default world's bootstrap client only: scope `sandbox:worlds`). A world's own app has no
worlds of its own: there these operations are 404."""

from __future__ import annotations

import asyncio
import time
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from sandex.api_adapter.paging import Limit
from sandex.api_adapter.pipeline import Caller, passage_of, route
from sandex.api_adapter.problems import AuthError
from sandex.api_adapter.request_bodies import CreateWorldRequest
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.worlds.manager import DRAIN_SECONDS, WorldManager
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.errors import Invalid, NotFound
from sandex.engine.read.clients import is_bootstrap
from sandex.engine.read.queries import checked_limit

router = APIRouter(prefix="/v2/sandbox/worlds", tags=["Sandbox"])


def _manager(request: Request) -> WorldManager:
    manager: WorldManager | None = getattr(request.app.state, "worlds", None)
    if manager is None:
        raise NotFound(f"no such resource: {request.method} {request.url.path}")
    return manager


async def _operator(request: Request, who: Caller) -> WorldManager:
    """The worlds of this server, for the default world's bootstrap client alone: a
    tenant granted the scope by name still is no operator."""
    manager = _manager(request)
    if not is_bootstrap(request.app.state.queries, who.customer_id):
        scope = passage_of(request).operation.scope
        raise AuthError(
            403,
            f"insufficient scope: this operation requires {scope}",
            meta={"required_scope": scope},
        )
    return manager


Worlds = Annotated[WorldManager, Depends(_operator)]


def _present(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without its unset fields: sandex sends no null (response_shapes)."""
    shown = {k: v for k, v in answer.items() if v is not None}
    if isinstance(shown.get("clock"), dict):
        shown["clock"] = {k: v for k, v in shown["clock"].items() if v is not None}
    return shown


def _urls(request: Request, world_id: str) -> dict[str, str]:
    base = str(request.base_url).rstrip("/")
    return {"base_url": f"{base}/w/{world_id}/v2", "token_url": f"{base}/w/{world_id}/oauth2/token"}


@route(router, "CreateSandboxWorld")
async def create_world(
    request: Request, worlds: Worlds, body: CreateWorldRequest | None = None
) -> JSONResponse:
    body = body or CreateWorldRequest()
    if body.start_time is not None:
        if body.clock != "manual":
            raise Invalid(
                "start_time invalid: only a manual clock starts at a time", field="start_time"
            )
        try:
            parse_time(body.start_time)
        except ValueError as exc:
            raise Invalid(
                "start_time invalid: not an RFC 3339 time with offset", field="start_time"
            ) from exc
    made = await run_in_threadpool(
        partial(
            worlds.create,
            name=body.name,
            clock=body.clock,
            start_time=body.start_time,
            seed=body.seed,
            settings=body.settings,
            from_world=body.from_world,
            from_snapshot=body.from_snapshot,
            expires_after_idle_seconds=body.expires_after_idle_seconds,
            recorded=body.record,
        )
    )
    urls = _urls(request, made["id"])
    answer = {"id": made["id"], "name": made["name"], **urls}
    answer.update({k: v for k, v in made.items() if k not in answer})
    return JSONResponse(_present(answer))


@route(router, "ListSandboxWorlds")
async def list_worlds(
    request: Request,
    worlds: Worlds,
    limit: Limit = None,
    page_cursor: Annotated[str | None, Query()] = None,
) -> JSONResponse:
    cursors = request.app.state.queries.cursors
    size = checked_limit(limit)
    after = cursors.decode(page_cursor, "worlds") if page_cursor else 0
    found = [(seq, world_id) for seq, world_id in worlds.ids() if seq > after]
    items = []
    for _, world_id in found[:size]:
        try:
            items.append(_present({**worlds.describe(world_id), **_urls(request, world_id)}))
        except NotFound:
            continue  # deleted meanwhile
    result: dict[str, Any] = {"items": items}
    if len(found) > size:
        result["next_page_cursor"] = cursors.encode(found[size - 1][0], "worlds")
    return JSONResponse(result)


@route(router, "GetSandboxWorld")
async def get_world(request: Request, worlds: Worlds, world_id: str) -> JSONResponse:
    return JSONResponse(_present({**worlds.describe(world_id), **_urls(request, world_id)}))


@route(router, "GetSandboxWorldRecording")
async def get_recording(request: Request, worlds: Worlds, world_id: str) -> JSONResponse:
    scenario = await run_in_threadpool(worlds.recording, world_id)
    return JSONResponse({"id": world_id, "scenario": scenario})


@route(router, "DeleteSandboxWorld")
async def delete_world(request: Request, worlds: Worlds, world_id: str) -> JSONResponse:
    served = worlds.forget(world_id)
    if served is not None:
        # its requests in flight end first (they run on this loop), then its engine stops
        deadline = time.monotonic() + DRAIN_SECONDS
        while served.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
    await run_in_threadpool(worlds.remove, world_id, served)
    return JSONResponse({"id": world_id, "deleted": True})
