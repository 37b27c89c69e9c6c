"""Accounts (tag Accounts) and their members (tag Account Members): each request
translated into its command."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Request

from api_adapter import identity_shapes as shapes
from api_adapter import response_shapes
from api_adapter.auth import Principal, require
from api_adapter.identity_bodies import (
    AddAccountMembersRequest,
    CreateAccountRequest,
    UpdateAccountRequest,
)
from api_adapter.paging import created_page, updated_times
from api_adapter.responses import JSONResponse
from api_adapter.writer_bridge import actor, run
from engine.kernel.commands import (
    AddAccountMembers,
    CreateAccount,
    RemoveAccountMember,
    UpdateAccount,
)
from engine.read import identities as reads
from engine.read.queries import Page

router = APIRouter(prefix="/v2/identity", tags=["Accounts"])

Read = Annotated[Principal, Depends(require("identity:read_account"))]
Write = Annotated[Principal, Depends(require("identity:write_account"))]


@router.post(
    "/accounts", operation_id="CreateAccount", responses=response_shapes.ok(shapes.Account)
)
async def create_account(request: Request, who: Write, body: CreateAccountRequest) -> JSONResponse:
    command = CreateAccount(
        actor=actor(request, who),
        account=body.account.model_dump(exclude_none=True),
        create_profile=bool(body.create_profile),
    )
    return JSONResponse(await run(request, command))


@router.get(
    "/accounts",
    operation_id="ListAccounts",
    responses=response_shapes.ok(shapes.ListAccountsResponse),
)
async def list_accounts(
    request: Request,
    who: Read,
    page: Annotated[Page, Depends(created_page)],
    updated: Annotated[dict[tuple[str, str], str], Depends(updated_times)],
    identity_id: str | None = None,
    order_by: Literal["CREATED_AT"] | None = None,
) -> JSONResponse:
    page.times.update(updated)
    queries = request.app.state.queries
    return JSONResponse(reads.list_accounts(queries, who.customer_id, page, identity_id))


@router.put("/accounts", operation_id="UpdateAccount", responses=response_shapes.ok(shapes.Account))
async def update_account(request: Request, who: Write, body: UpdateAccountRequest) -> JSONResponse:
    command = UpdateAccount(
        actor=actor(request, who),
        account=body.account.model_dump(exclude_none=True),
        set_user_disabled=body.set_user_disabled,
    )
    return JSONResponse(await run(request, command))


@router.get(
    "/accounts/{id}", operation_id="GetAccount", responses=response_shapes.ok(shapes.Account)
)
async def get_account(request: Request, who: Read, id: str) -> JSONResponse:
    return JSONResponse(reads.account(request.app.state.queries, who.customer_id, id))


@router.post(
    "/account-members",
    operation_id="AddAccountMembers",
    tags=["Account Members"],
    responses=response_shapes.ok(shapes.AddAccountMembersResponse),
)
async def add_account_members(
    request: Request, who: Write, body: AddAccountMembersRequest
) -> JSONResponse:
    command = AddAccountMembers(
        actor=actor(request, who),
        account_id=body.account_id,
        members=tuple(m.model_dump(exclude_none=True) for m in body.members),
    )
    return JSONResponse(await run(request, command))


@router.delete(
    "/account-members/{id}",
    operation_id="DeleteAccountMember",
    tags=["Account Members"],
    responses=response_shapes.ok(shapes.DeleteAccountMemberResponse),
)
async def delete_account_member(request: Request, who: Write, id: str) -> JSONResponse:
    command = RemoveAccountMember(actor=actor(request, who), member_id=id)
    return JSONResponse(await run(request, command))
