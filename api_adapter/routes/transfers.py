"""Transfers: the list of every movement of funds, and one transfer by id."""

from __future__ import annotations

from typing import Annotated, Literal, TypeVar

from fastapi import APIRouter, Depends, Query, Request

from sandex.api_adapter.paging import created_page, updated_times
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import SecondaryStatus, TransferStatus, TransferType
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import count_poll
from sandex.engine.read.queries import Page

router = APIRouter(prefix="/v2", tags=["Transfers"])

T = TypeVar("T")
# A repeatable filter (`type=A&type=B`); an enum's values are checked, a 400 names it.
Many = Annotated[list[T] | None, Query()]


@route(router, "ListTransfers")
async def list_transfers(
    request: Request,
    who: Caller,
    page: Annotated[Page, Depends(created_page)],
    updated: Annotated[dict[tuple[str, str], str], Depends(updated_times)],
    order_by: Literal["CREATED_AT", "UPDATED_AT"] | None = None,
    profile_ids: Many[str] = None,
    identity_ids: Many[str] = None,
    account_ids: Many[str] = None,
    ref_ids: Many[str] = None,
    ids: Many[str] = None,
    type: Many[TransferType] = None,
    statuses: Many[TransferStatus] = None,
    secondary_statuses: Many[SecondaryStatus] = None,
    group_ids: Many[str] = None,
    crypto_tx_hashes: Many[str] = None,
) -> JSONResponse:
    page.times.update(updated)
    page.order_by = order_by
    filters = {
        "profile_ids": profile_ids or [],
        "identity_ids": identity_ids or [],
        "account_ids": account_ids or [],
        "ref_ids": ref_ids or [],
        "ids": ids or [],
        "type": type or [],
        "statuses": statuses or [],
        "secondary_statuses": secondary_statuses or [],
        "group_ids": group_ids or [],
        "crypto_tx_hashes": crypto_tx_hashes or [],
    }
    return JSONResponse(request.app.state.queries.list_transfers(who.customer_id, page, filters))


@route(router, "GetTransfer")
async def get_transfer(request: Request, who: Caller, id: str) -> JSONResponse:
    await count_poll(request, who, id)
    return JSONResponse(request.app.state.queries.transfer(who.customer_id, id))
