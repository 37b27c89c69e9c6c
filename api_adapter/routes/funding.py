"""Funding: sandbox deposits, fiat deposit instructions and sandbox wires."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from sandex.api_adapter.operations import operation
from sandex.api_adapter.paging import created_page
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import (
    CreateFiatDepositInstructionsRequest,
    InitiateSandboxFiatDepositRequest,
    SandboxDepositRequest,
)
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.kernel.commands import CreateFiatDepositInstructions, InitiateFiatDeposit
from sandex.engine.read.queries import Page

router = APIRouter(prefix="/v2", tags=["Funding"])
# The fast lane serves this operation from the same row (api_adapter/operations.py).
DEPOSIT = operation("CreateSandboxDeposit")


@route(router, "CreateSandboxDeposit")
async def sandbox_deposit(
    request: Request,
    who: Caller,
    profile_id: str,
    body: SandboxDepositRequest,
) -> JSONResponse:
    return JSONResponse(
        await run(request, DEPOSIT.command(actor(request, who), who, profile_id, body))
    )


@route(router, "CreateFiatDepositInstructions")
async def create_instructions(
    request: Request,
    who: Caller,
    body: CreateFiatDepositInstructionsRequest,
) -> JSONResponse:
    command = CreateFiatDepositInstructions(
        actor=actor(request, who),
        profile_id=body.profile_id,
        fiat_network=body.fiat_network,
        routing_number_type=body.routing_number_type,
        ref_id=body.ref_id,
        identity_id=body.identity_id,
        account_id=body.account_id,
        metadata=body.metadata,
    )
    return JSONResponse(await run(request, command))


@route(router, "ListFiatDepositInstructions")
async def list_instructions(
    request: Request,
    who: Caller,
    page: Annotated[Page, Depends(created_page)],
    ids: Annotated[list[str] | None, Query()] = None,
    ref_ids: Annotated[list[str] | None, Query()] = None,
) -> JSONResponse:
    return JSONResponse(
        request.app.state.queries.list_fiat_instructions(who.customer_id, page, ids, ref_ids)
    )


@route(router, "GetFiatDepositInstructions")
async def get_instructions(request: Request, who: Caller, id: str) -> JSONResponse:
    return JSONResponse(request.app.state.queries.fiat_instructions(who.customer_id, id))


@route(router, "InitiateSandboxFiatDeposit")
async def initiate_fiat_deposit(
    request: Request,
    who: Caller,
    body: InitiateSandboxFiatDepositRequest,
) -> JSONResponse:
    command = InitiateFiatDeposit(
        actor=actor(request, who),
        amount=body.amount,
        asset=body.asset,
        memo_id=body.memo_id,
        fiat_network_instructions=body.fiat_network_instructions.model_dump(exclude_none=True),
        fiat_account_owner=(
            body.fiat_account_owner.model_dump(exclude_none=True)
            if body.fiat_account_owner
            else None
        ),
    )
    return JSONResponse(await run(request, command))
