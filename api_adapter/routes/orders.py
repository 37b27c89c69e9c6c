"""Orders: create, get, list, cancel."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request

from sandex.api_adapter.auth import Principal
from sandex.api_adapter.operations import operation
from sandex.api_adapter.paging import Limit, checked_time
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import CreateOrderRequest, MarketName
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.domain.trading.order import CLOSED_STATES, ORDER_STATUSES
from sandex.engine.kernel.commands import CancelOrder
from sandex.engine.read.queries import Page

router = APIRouter(prefix="/v2", tags=["Orders"])

# The fast lane serves this operation from the same row (api_adapter/operations.py).
CREATE = operation("CreateOrder")
OrderStatus = Literal[ORDER_STATUSES]  # type: ignore[valid-type]
POLL_SECONDS = 0.005


def order_page(
    limit: Limit = None,
    page_cursor: str | None = None,
    begin: Annotated[str | None, Query(alias="order_time.begin")] = None,
    end: Annotated[str | None, Query(alias="order_time.end")] = None,
) -> Page:
    times = {}
    if (begin := checked_time("order_time.begin", begin)) is not None:
        times[("created_at", "gte")] = begin
    if (end := checked_time("order_time.end", end)) is not None:
        times[("created_at", "lte")] = end
    return Page(limit=limit, page_cursor=page_cursor, times=times)


@route(router, "CreateOrder")
async def create_order(
    request: Request, who: Caller, profile_id: str, body: CreateOrderRequest
) -> JSONResponse:
    order = await run(request, CREATE.command(actor(request, who), who, profile_id, body))
    if body.await_fill_millis:  # CREATE.route_only: the fast lane hands these on
        order = await _await_fill(request, who, order, body.await_fill_millis)
    return JSONResponse(order)


async def _await_fill(request: Request, who: Principal, order: dict, millis: int) -> dict:
    """Hold the answer until the order is closed or `millis` of real time pass, whatever
    the engine's clock: the reference's rule is a wait, and on a manual clock another
    request (a price set, the clock moved) may fill the order meanwhile."""
    if order["status"] in CLOSED_STATES:
        return order
    loop = asyncio.get_running_loop()
    deadline = loop.time() + millis / 1000
    queries = request.app.state.queries
    while (left := deadline - loop.time()) > 0:
        await asyncio.sleep(min(POLL_SECONDS, left))
        order = queries.order(who.customer_id, order["profile_id"], order["id"])
        if order["status"] in CLOSED_STATES:
            break
    return order


@route(router, "GetOrder")
async def get_order(request: Request, who: Caller, profile_id: str, id: str) -> JSONResponse:
    return JSONResponse(request.app.state.queries.order(who.customer_id, profile_id, id))


@route(router, "CancelOrder")
async def cancel_order(request: Request, who: Caller, profile_id: str, id: str) -> JSONResponse:
    command = CancelOrder(actor=actor(request, who), profile_id=profile_id, order_id=id)
    return JSONResponse(await run(request, command))


@route(router, "ListProfileOrders")
async def list_profile_orders(
    request: Request,
    who: Caller,
    profile_id: str,
    page: Annotated[Page, Depends(order_page)],
    market: MarketName | None = None,
    status: OrderStatus | None = None,
    ref_ids: Annotated[list[str] | None, Query()] = None,
) -> JSONResponse:
    return JSONResponse(
        request.app.state.queries.list_orders(
            who.customer_id,
            page,
            profile_id=profile_id,
            market=market,
            status=status,
            ref_ids=ref_ids,
        )
    )


@route(router, "ListOrders")
async def list_orders(
    request: Request,
    who: Caller,
    page: Annotated[Page, Depends(order_page)],
    profile_id: str | None = None,
    account_id: str | None = None,
    market: MarketName | None = None,
    status: OrderStatus | None = None,
    ref_ids: Annotated[list[str] | None, Query()] = None,
) -> JSONResponse:
    return JSONResponse(
        request.app.state.queries.list_orders(
            who.customer_id,
            page,
            profile_id=profile_id,
            account_id=account_id,
            market=market,
            status=status,
            ref_ids=ref_ids,
        )
    )
