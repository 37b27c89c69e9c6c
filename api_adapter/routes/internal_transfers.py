"""Internal transfers between two profiles of the caller's customer."""

from __future__ import annotations

from fastapi import APIRouter, Request

from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import CreateInternalTransferRequest
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.kernel.commands import CreateInternalTransfer

router = APIRouter(prefix="/v2/transfer", tags=["Internal Transfers"])


@route(router, "CreateInternalTransfer")
async def create_internal_transfer(
    request: Request,
    who: Caller,
    body: CreateInternalTransferRequest,
) -> JSONResponse:
    command = CreateInternalTransfer(
        actor=actor(request, who),
        from_profile_id=body.from_profile_id,
        to_profile_id=body.to_profile_id,
        asset=body.asset,
        amount=body.amount,
        ref_id=body.ref_id,
        metadata=body.metadata,
        recipient_metadata=body.recipient_metadata,
        from_identity_id=body.from_identity_id,
        from_account_id=body.from_account_id,
        to_identity_id=body.to_identity_id,
        to_account_id=body.to_account_id,
    )
    return JSONResponse(await run(request, command))
