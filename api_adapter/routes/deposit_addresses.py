"""Deposit addresses, the travel-rule operations on crypto deposits held for review, and
sandex's own sandbox operation that sends crypto to a deposit address."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request

from api_adapter import response_shapes
from api_adapter.auth import Principal, require
from api_adapter.paging import created_page
from api_adapter.request_bodies import (
    CreateDepositAddressRequest,
    RejectCryptoDepositRequest,
    SandboxCryptoDepositRequest,
    UpdateCryptoDepositRequest,
)
from api_adapter.responses import JSONResponse
from api_adapter.writer_bridge import actor, run
from engine.kernel.commands import (
    CreateDepositAddress,
    RejectCryptoDeposit,
    SandboxCryptoDeposit,
    UpdateCryptoDeposit,
)
from engine.read.deposit_addresses import list_deposit_addresses
from engine.read.queries import Page

router = APIRouter(prefix="/v2", tags=["Deposit Addresses"])

Many = Annotated[list[str] | None, Query()]


@router.post(
    "/transfer/deposit-addresses",
    operation_id="CreateDepositAddress",
    responses=response_shapes.ok(response_shapes.DepositAddress),
)
async def create_deposit_address(
    request: Request,
    who: Annotated[Principal, Depends(require("transfer:write_deposit_address"))],
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


@router.get(
    "/transfer/deposit-addresses",
    operation_id="ListDepositAddresses",
    responses=response_shapes.ok(response_shapes.ListDepositAddressesResponse),
)
async def list_addresses(
    request: Request,
    who: Annotated[Principal, Depends(require("transfer:read_deposit_address"))],
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


@router.post(
    "/transfer/crypto-deposits/{id}/reject",
    operation_id="RejectCryptoDeposit",
    responses=response_shapes.ok(response_shapes.RejectCryptoDepositResponse),
    tags=["Crypto Deposits"],
)
async def reject_crypto_deposit(
    request: Request,
    who: Annotated[Principal, Depends(require("transfer:reject_crypto_deposit"))],
    id: str,
    body: RejectCryptoDepositRequest,
) -> JSONResponse:
    command = RejectCryptoDeposit(
        actor=actor(request, who), transfer_id=id, identity_id=body.identity_id
    )
    return JSONResponse(await run(request, command))


@router.post(
    "/transfer/crypto-deposits/{id}/update",
    operation_id="UpdateCryptoDeposit",
    responses=response_shapes.ok(response_shapes.UpdateCryptoDepositResponse),
    tags=["Crypto Deposits"],
)
async def update_crypto_deposit(
    request: Request,
    who: Annotated[Principal, Depends(require("transfer:update_crypto_deposit"))],
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


@router.post(
    "/sandbox/crypto-deposits",
    operation_id="CreateSandboxCryptoDeposit",
    responses=response_shapes.ok(response_shapes.Transfer),
    tags=["Sandbox"],
)
async def sandbox_crypto_deposit(
    request: Request,
    who: Annotated[Principal, Depends(require("transfer:write_sandbox_crypto_deposit"))],
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
