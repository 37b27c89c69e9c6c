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
from api_adapter.routes import writes
from api_adapter.writer_bridge import actor, run
from engine.kernel.commands import CreateWithdrawalFee

router = APIRouter(prefix="/v2/transfer", tags=["Crypto Withdrawals"])
# The fast lane serves this route from the same entry (api_adapter/routes/writes.py).
CREATE = writes.CREATE_WITHDRAWAL


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


@router.post(
    CREATE.under(router.prefix),
    operation_id=CREATE.operation,
    responses=response_shapes.ok(response_shapes.Transfer),
)
async def create_withdrawal(
    request: Request,
    who: Annotated[Principal, Depends(require(CREATE.scope))],
    body: CreateCryptoWithdrawalRequest,
) -> JSONResponse:
    return JSONResponse(await run(request, CREATE.build(actor(request, who), who, "", body)))
