"""Transfers: the list of every movement of funds, and one transfer by id."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request

from api_adapter import shapes
from api_adapter.auth import Principal, require
from api_adapter.paging import created_page, updated_times
from api_adapter.responses import JSONResponse
from engine.queries import Page

router = APIRouter(prefix="/v2", tags=["Transfers"])

Read = Annotated[Principal, Depends(require("transfer:read_transfer"))]
Many = Annotated[list[str] | None, Query()]


@router.get(
    "/transfer/transfers",
    operation_id="ListTransfers",
    responses=shapes.ok(shapes.ListTransfersResponse),
)
async def list_transfers(
    request: Request,
    who: Read,
    page: Annotated[Page, Depends(created_page)],
    updated: Annotated[dict[tuple[str, str], str], Depends(updated_times)],
    order_by: Literal["CREATED_AT"] | None = None,
    profile_ids: Many = None,
    ref_ids: Many = None,
    ids: Many = None,
    type: Many = None,
    statuses: Many = None,
    group_ids: Many = None,
    crypto_tx_hashes: Many = None,
) -> JSONResponse:
    page.times.update(updated)
    filters = {
        "profile_ids": profile_ids or [],
        "ref_ids": ref_ids or [],
        "ids": ids or [],
        "type": type or [],
        "statuses": statuses or [],
        "group_ids": group_ids or [],
        "crypto_tx_hashes": crypto_tx_hashes or [],
    }
    return JSONResponse(request.app.state.queries.list_transfers(who.customer_id, page, filters))


@router.get(
    "/transfer/transfers/{id}", operation_id="GetTransfer", responses=shapes.ok(shapes.Transfer)
)
async def get_transfer(request: Request, who: Read, id: str) -> JSONResponse:
    return JSONResponse(request.app.state.queries.transfer(who.customer_id, id))
