"""Fiat accounts, and fiat withdrawals to them."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request

from sandex.api_adapter.paging import created_page
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import (
    CreateFiatAccountRequest,
    CreateFiatWithdrawalRequest,
    UpdateFiatAccountRequest,
)
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, count_poll, run
from sandex.engine.kernel.commands import (
    CreateFiatAccount,
    CreateFiatWithdrawal,
    DeleteFiatAccount,
    UpdateFiatAccount,
)
from sandex.engine.read.fiat_accounts import fiat_account, list_fiat_accounts
from sandex.engine.read.queries import Page

router = APIRouter(prefix="/v2/transfer", tags=["Fiat Transfers"])

Many = Annotated[list[str] | None, Query()]
IncludeDeleted = Annotated[bool | None, Query()]


@route(router, "CreateFiatAccount")
async def create_fiat_account(
    request: Request, who: Caller, body: CreateFiatAccountRequest
) -> JSONResponse:
    command = CreateFiatAccount(
        actor=actor(request, who),
        fiat_account_owner=body.fiat_account_owner.model_dump(exclude_none=True),
        fiat_network_instructions=body.fiat_network_instructions.model_dump(exclude_none=True),
        ref_id=body.ref_id,
        identity_id=body.identity_id,
        account_id=body.account_id,
        metadata=body.metadata,
    )
    return JSONResponse(await run(request, command))


@route(router, "ListFiatAccounts")
async def list_accounts(
    request: Request,
    who: Caller,
    page: Annotated[Page, Depends(created_page)],
    ids: Many = None,
    ref_ids: Many = None,
    order_by: Literal["CREATED_AT"] | None = None,  # the one order there is
    include_deleted: IncludeDeleted = None,
) -> JSONResponse:
    filters = {"ids": ids or [], "ref_ids": ref_ids or []}
    queries = request.app.state.queries
    return JSONResponse(
        list_fiat_accounts(queries, who.customer_id, page, filters, bool(include_deleted))
    )


@route(router, "GetFiatAccount")
async def get_account(
    request: Request, who: Caller, id: str, include_deleted: IncludeDeleted = None
) -> JSONResponse:
    await count_poll(request, who, id)
    queries = request.app.state.queries
    return JSONResponse(fiat_account(queries, who.customer_id, id, bool(include_deleted)))


@route(router, "UpdateFiatAccount")
async def update_account(
    request: Request, who: Caller, id: str, body: UpdateFiatAccountRequest
) -> JSONResponse:
    owner = body.fiat_account_owner
    instructions = body.fiat_network_instructions
    command = UpdateFiatAccount(
        actor=actor(request, who),
        fiat_account_id=id,
        fiat_account_owner=owner.model_dump(exclude_none=True) if owner else None,
        fiat_network_instructions=(
            instructions.model_dump(exclude_none=True) if instructions else None
        ),
        metadata=body.metadata,
    )
    return JSONResponse(await run(request, command))


@route(router, "DeleteFiatAccount")
async def delete_account(request: Request, who: Caller, id: str) -> JSONResponse:
    command = DeleteFiatAccount(actor=actor(request, who), fiat_account_id=id)
    return JSONResponse(await run(request, command))


@route(router, "CreateFiatWithdrawal")
async def create_fiat_withdrawal(
    request: Request,
    who: Caller,
    body: CreateFiatWithdrawalRequest,
) -> JSONResponse:
    command = CreateFiatWithdrawal(
        actor=actor(request, who),
        profile_id=body.profile_id,
        fiat_account_id=body.fiat_account_id,
        asset=body.asset,
        amount=body.amount,
        total=body.total,
        ref_id=body.ref_id,
        identity_id=body.identity_id,
        account_id=body.account_id,
        metadata=body.metadata,
        memo=body.memo,
    )
    return JSONResponse(await run(request, command))
