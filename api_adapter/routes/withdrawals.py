"""Crypto withdrawals and their guaranteed fees."""

from __future__ import annotations

from fastapi import APIRouter, Request

from sandex.api_adapter.operations import operation
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import (
    CreateCryptoWithdrawalFeeRequest,
    CreateCryptoWithdrawalRequest,
)
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.kernel.commands import CreateWithdrawalFee

router = APIRouter(prefix="/v2/transfer", tags=["Crypto Withdrawals"])
# The fast lane serves this operation from the same row (api_adapter/operations.py).
CREATE = operation("CreateCryptoWithdrawal")


@route(router, "CreateCryptoWithdrawalFee", tags=["Fees"])
async def create_fee(
    request: Request,
    who: Caller,
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


@route(router, "CreateCryptoWithdrawal")
async def create_withdrawal(
    request: Request,
    who: Caller,
    body: CreateCryptoWithdrawalRequest,
) -> JSONResponse:
    return JSONResponse(await run(request, CREATE.command(actor(request, who), who, "", body)))
