"""sandex's own snapshot, restore and reset of the whole sandbox (bootstrap client only).

They are commands like any other: they wait their turn in the writer's queue, so a
request in flight is decided wholly before or wholly after them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from api_adapter import response_shapes
from api_adapter.auth import Principal, require
from api_adapter.request_bodies import Body, ShortText
from api_adapter.responses import JSONResponse
from api_adapter.writer_bridge import actor, run
from engine.domain.sandbox_snapshots import ResetSandbox, RestoreSnapshot, TakeSnapshot
from engine.read import sandbox_snapshots

router = APIRouter(prefix="/v2/sandbox", tags=["Sandbox"])

Admin = Annotated[Principal, Depends(require("sandbox:write_customer"))]


class SnapshotRequest(Body):
    name: ShortText


@router.post(
    "/snapshots",
    operation_id="TakeSandboxSnapshot",
    responses=response_shapes.ok(response_shapes.SandboxSnapshot),
)
async def take_snapshot(request: Request, who: Admin, body: SnapshotRequest) -> JSONResponse:
    return JSONResponse(await run(request, TakeSnapshot(actor=actor(request, who), name=body.name)))


@router.get(
    "/snapshots",
    operation_id="ListSandboxSnapshots",
    responses=response_shapes.ok(response_shapes.ListSandboxSnapshotsResponse),
)
async def list_snapshots(request: Request, who: Admin) -> JSONResponse:
    return JSONResponse({"items": sandbox_snapshots.list_snapshots(request.app.state.queries)})


@router.post(
    "/snapshots/{name}/restore",
    operation_id="RestoreSandboxSnapshot",
    responses=response_shapes.ok(response_shapes.RestoredSandboxSnapshot),
)
async def restore_snapshot(request: Request, who: Admin, name: str) -> JSONResponse:
    return JSONResponse(await run(request, RestoreSnapshot(actor=actor(request, who), name=name)))


@router.post(
    "/reset",
    operation_id="ResetSandbox",
    responses=response_shapes.ok(response_shapes.SandboxReset),
)
async def reset(request: Request, who: Admin) -> JSONResponse:
    return JSONResponse(await run(request, ResetSandbox(actor=actor(request, who))))
