"""Deposit addresses, the travel-rule operations on crypto deposits held for review, and
sandex's own sandbox operation that sends crypto to a deposit address."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request

from sandex.api_adapter.paging import created_page
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import (
    CreateDepositAddressRequest,
    RejectCryptoDepositRequest,
    SandboxCryptoDepositRequest,
    UpdateCryptoDepositRequest,
)
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.kernel.commands import (
    CreateDepositAddress,
    RejectCryptoDeposit,
    SandboxCryptoDeposit,
    UpdateCryptoDeposit,
)
from sandex.engine.read.deposit_addresses import list_deposit_addresses
from sandex.engine.read.queries import Page

router = APIRouter(prefix="/v2", tags=["Deposit Addresses"])

Many = Annotated[list[str] | None, Query()]


@route(router, "CreateDepositAddress")
async def create_deposit_address(
    request: Request,
    who: Caller,
    body: CreateDepositAddressRequest,
) -> JSONResponse:
    command = CreateDepositAddress(
        actor=actor(request, who),
        profile_id=body.profile_id,
        crypto_network=body.crypto_network,
        identity_id=body.identity_id,
        account_id=body.account_id,
        ref_id=body.ref_id,
        metadata=body.metadata,
        conversion_target_asset=body.conversion_target_asset,
    )
    return JSONResponse(await run(request, command))


@route(router, "ListDepositAddresses")
async def list_addresses(
    request: Request,
    who: Caller,
    page: Annotated[Page, Depends(created_page)],
    order_by: Literal["CREATED_AT"] | None = None,
    profile_ids: Many = None,
    identity_ids: Many = None,
    ids: Many = None,
    ref_ids: Many = None,
    account_ids: Many = None,
) -> JSONResponse:
    filters = {
        "profile_ids": profile_ids or [],
        "identity_ids": identity_ids or [],
        "ids": ids or [],
        "ref_ids": ref_ids or [],
        "account_ids": account_ids or [],
    }
    queries = request.app.state.queries
    return JSONResponse(list_deposit_addresses(queries, who.customer_id, page, filters))


@route(router, "RejectCryptoDeposit", tags=["Crypto Deposits"])
async def reject_crypto_deposit(
    request: Request,
    who: Caller,
    id: str,
    body: RejectCryptoDepositRequest,
) -> JSONResponse:
    command = RejectCryptoDeposit(
        actor=actor(request, who), transfer_id=id, identity_id=body.identity_id
    )
    return JSONResponse(await run(request, command))


@route(router, "UpdateCryptoDeposit", tags=["Crypto Deposits"])
async def update_crypto_deposit(
    request: Request,
    who: Caller,
    id: str,
    body: UpdateCryptoDepositRequest,
) -> JSONResponse:
    command = UpdateCryptoDeposit(
        actor=actor(request, who),
        transfer_id=id,
        identity_id=body.identity_id,
        originator_address_info=body.originator_address_info.model_dump(exclude_none=True),
    )
    return JSONResponse(await run(request, command))


@route(router, "CreateSandboxCryptoDeposit", tags=["Sandbox"])
async def sandbox_crypto_deposit(
    request: Request,
    who: Caller,
    body: SandboxCryptoDepositRequest,
) -> JSONResponse:
    command = SandboxCryptoDeposit(
        actor=actor(request, who),
        address=body.address,
        crypto_network=body.crypto_network or "",
        asset=body.asset,
        amount=body.amount,
        memo=body.memo,
    )
    return JSONResponse(await run(request, command))
