"""Accounts (tag Accounts) and their members (tag Account Members): each request
translated into its command."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Request

from sandex.api_adapter.identity_bodies import (
    AddAccountMembersRequest,
    CreateAccountRequest,
    UpdateAccountRequest,
)
from sandex.api_adapter.paging import created_page, updated_times
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.kernel.commands import (
    AddAccountMembers,
    CreateAccount,
    RemoveAccountMember,
    UpdateAccount,
)
from sandex.engine.read import identities as reads
from sandex.engine.read.queries import Page

router = APIRouter(prefix="/v2/identity", tags=["Accounts"])


@route(router, "CreateAccount")
async def create_account(request: Request, who: Caller, body: CreateAccountRequest) -> JSONResponse:
    command = CreateAccount(
        actor=actor(request, who),
        account=body.account.model_dump(exclude_none=True),
        create_profile=bool(body.create_profile),
    )
    return JSONResponse(await run(request, command))


@route(router, "ListAccounts")
async def list_accounts(
    request: Request,
    who: Caller,
    page: Annotated[Page, Depends(created_page)],
    updated: Annotated[dict[tuple[str, str], str], Depends(updated_times)],
    identity_id: str | None = None,
    order_by: Literal["CREATED_AT"] | None = None,
) -> JSONResponse:
    page.times.update(updated)
    queries = request.app.state.queries
    return JSONResponse(reads.list_accounts(queries, who.customer_id, page, identity_id))


@route(router, "UpdateAccount")
async def update_account(request: Request, who: Caller, body: UpdateAccountRequest) -> JSONResponse:
    command = UpdateAccount(
        actor=actor(request, who),
        account=body.account.model_dump(exclude_none=True),
        set_user_disabled=body.set_user_disabled,
    )
    return JSONResponse(await run(request, command))


@route(router, "GetAccount")
async def get_account(request: Request, who: Caller, id: str) -> JSONResponse:
    return JSONResponse(reads.account(request.app.state.queries, who.customer_id, id))


@route(router, "AddAccountMembers", tags=["Account Members"])
async def add_account_members(
    request: Request, who: Caller, body: AddAccountMembersRequest
) -> JSONResponse:
    command = AddAccountMembers(
        actor=actor(request, who),
        account_id=body.account_id,
        members=tuple(m.model_dump(exclude_none=True) for m in body.members),
    )
    return JSONResponse(await run(request, command))


@route(router, "DeleteAccountMember", tags=["Account Members"])
async def delete_account_member(request: Request, who: Caller, id: str) -> JSONResponse:
    command = RemoveAccountMember(actor=actor(request, who), member_id=id)
    return JSONResponse(await run(request, command))
