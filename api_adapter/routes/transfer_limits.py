"""Transfer limits: the sandbox's per-withdrawal caps, as the service lists limits."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request

from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import TransferType
from sandex.api_adapter.responses import JSONResponse
from sandex.engine.domain.transfers.transfer_limits import transfer_limits

router = APIRouter(prefix="/v2/transfer", tags=["Limits"])

# The document's names of the platform transfers beside the interface's (PLATFORM_*).
LimitTransferType = TransferType | Literal["PAXOS_TRANSFER_DEBIT", "PAXOS_TRANSFER_CREDIT"]


@route(router, "ListTransferLimits")
async def list_transfer_limits(
    request: Request,
    who: Caller,
    transfer_type: LimitTransferType,
) -> JSONResponse:
    return JSONResponse(transfer_limits(request.app.state.engine.settings, transfer_type))
