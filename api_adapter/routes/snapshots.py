"""sandex's own snapshot, restore and reset of the whole sandbox (bootstrap client only).

They are commands like any other: they wait their turn in the writer's queue, so a
request in flight is decided wholly before or wholly after them."""

from __future__ import annotations

from fastapi import APIRouter, Request

from sandex.api_adapter import faults
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import SnapshotRequest
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.domain.sandbox_snapshots import ResetSandbox, RestoreSnapshot, TakeSnapshot
from sandex.engine.read import sandbox_snapshots

router = APIRouter(prefix="/v2/sandbox", tags=["Sandbox"])


@route(router, "TakeSandboxSnapshot")
async def take_snapshot(request: Request, who: Caller, body: SnapshotRequest) -> JSONResponse:
    return JSONResponse(await run(request, TakeSnapshot(actor=actor(request, who), name=body.name)))


@route(router, "ListSandboxSnapshots")
async def list_snapshots(request: Request, who: Caller) -> JSONResponse:
    return JSONResponse({"items": sandbox_snapshots.list_snapshots(request.app.state.queries)})


@route(router, "RestoreSandboxSnapshot")
async def restore_snapshot(request: Request, who: Caller, name: str) -> JSONResponse:
    restored = await run(request, RestoreSnapshot(actor=actor(request, who), name=name))
    faults.reload(request.app.state)  # the world's fault rules came back with it
    return JSONResponse(restored)


@route(router, "ResetSandbox")
async def reset(request: Request, who: Caller) -> JSONResponse:
    done = await run(request, ResetSandbox(actor=actor(request, who)))
    faults.reload(request.app.state)
    return JSONResponse(done)
