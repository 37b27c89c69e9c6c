"""Crypto withdrawals and their guaranteed fees."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from api_adapter import response_shapes
from api_adapter.auth import Principal, require
from api_adapter.request_bodies import (
    CreateCryptoWithdrawalFeeRequest,
    CreateCryptoWithdrawalRequest,
)
from api_adapter.responses import JSONResponse
from api_adapter.writer_bridge import actor, run
from engine.kernel.commands import Actor, CreateCryptoWithdrawal, CreateWithdrawalFee

router = APIRouter(prefix="/v2/transfer", tags=["Crypto Withdrawals"])
# Named once: the fast lane (api_adapter/fastpath.py) serves this route with them too.
CREATE_WITHDRAWAL = "CreateCryptoWithdrawal"
WITHDRAW_SCOPE = "transfer:write_crypto_withdrawal"


@router.post(
    "/fees/crypto-withdrawal",
    operation_id="CreateCryptoWithdrawalFee",
    responses=response_shapes.ok(response_shapes.CryptoWithdrawalFee),
    tags=["Fees"],
)
async def create_fee(
    request: Request,
    who: Annotated[Principal, Depends(require("fee:write_crypto_withdrawal_fee"))],
    body: CreateCryptoWithdrawalFeeRequest,
) -> JSONResponse:
    command = CreateWithdrawalFee(
        actor=actor(request, who),
        asset=body.asset,
        destination_address=body.destination_address,
        crypto_network=body.crypto_network,
        amount=body.amount,
        total=body.total,
    )
    return JSONResponse(await run(request, command))


def create_withdrawal_command(
    actor: Actor, body: CreateCryptoWithdrawalRequest
) -> CreateCryptoWithdrawal:
    """The command of a withdrawal request (the route's and the fast lane's)."""
    return CreateCryptoWithdrawal(
        actor=actor,
        profile_id=body.profile_id,
        asset=body.asset,
        destination_address=body.destination_address,
        crypto_network=body.crypto_network,
        amount=body.amount,
        total=body.total,
        fee_id=body.fee_id,
        ref_id=body.ref_id,
        balance_asset=body.balance_asset,
        identity_id=body.identity_id,
        account_id=body.account_id,
        memo=body.memo,
        metadata=body.metadata,
        beneficiary=body.beneficiary.model_dump(exclude_none=True) if body.beneficiary else None,
    )


@router.post(
    "/crypto-withdrawals",
    operation_id=CREATE_WITHDRAWAL,
    responses=response_shapes.ok(response_shapes.Transfer),
)
async def create_withdrawal(
    request: Request,
    who: Annotated[Principal, Depends(require(WITHDRAW_SCOPE))],
    body: CreateCryptoWithdrawalRequest,
) -> JSONResponse:
    return JSONResponse(await run(request, create_withdrawal_command(actor(request, who), body)))
