"""Stablecoin conversions: USD to USDP, PYUSD or USDG and back, at par."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from sandex.api_adapter.paging import Limit, Order, checked_time
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import CreateStablecoinConversionRequest
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, count_poll, run
from sandex.engine.kernel.commands import CancelStablecoinConversion, CreateStablecoinConversion
from sandex.engine.read.queries import Page

router = APIRouter(prefix="/v2/conversion", tags=["Stablecoin Conversion"])

# The reference's inclusive time bounds, under its names.
TimeBound = Annotated[str | None, Query()]


@route(router, "CreateStablecoinConversion")
async def create_conversion(
    request: Request, who: Caller, body: CreateStablecoinConversionRequest
) -> JSONResponse:
    command = CreateStablecoinConversion(
        actor=actor(request, who),
        profile_id=body.profile_id,
        amount=body.amount,
        source_asset=body.source_asset,
        target_asset=body.target_asset,
        ref_id=body.ref_id,
        identity_id=body.identity_id,
        account_id=body.account_id,
        metadata=body.metadata,
        recipient_profile_id=body.recipient_profile_id,
    )
    return JSONResponse(await run(request, command))


@route(router, "ListStablecoinConversions")
async def list_conversions(
    request: Request,
    who: Caller,
    profile_id: str | None = None,
    ref_id: str | None = None,
    created_at_begin: Annotated[TimeBound, Query(alias="created_at.begin")] = None,
    created_at_end: Annotated[TimeBound, Query(alias="created_at.end")] = None,
    updated_at_begin: Annotated[TimeBound, Query(alias="updated_at.begin")] = None,
    updated_at_end: Annotated[TimeBound, Query(alias="updated_at.end")] = None,
    order: Order = None,
    page_cursor: str | None = None,
    limit: Limit = None,
) -> JSONResponse:
    bounds = {
        ("created_at", "gte"): checked_time("created_at.begin", created_at_begin),
        ("created_at", "lte"): checked_time("created_at.end", created_at_end),
        ("updated_at", "gte"): checked_time("updated_at.begin", updated_at_begin),
        ("updated_at", "lte"): checked_time("updated_at.end", updated_at_end),
    }
    page = Page(
        limit=limit,
        page_cursor=page_cursor,
        order=order,
        times={k: v for k, v in bounds.items() if v is not None},
    )
    return JSONResponse(
        request.app.state.queries.list_stablecoin_conversions(
            who.customer_id, page, profile_id, ref_id
        )
    )


@route(router, "GetStablecoinConversion")
async def get_conversion(request: Request, who: Caller, id: str) -> JSONResponse:
    await count_poll(request, who, id)
    return JSONResponse(request.app.state.queries.stablecoin_conversion(who.customer_id, id))


@route(router, "CancelStablecoinConversion")
async def cancel_conversion(request: Request, who: Caller, id: str) -> JSONResponse:
    command = CancelStablecoinConversion(actor=actor(request, who), conversion_id=id)
    return JSONResponse(await run(request, command))
