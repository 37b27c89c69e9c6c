"""Executions: the fills of a customer's orders, all profiles or one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from sandex.api_adapter.paging import Limit, checked_time
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.responses import JSONResponse
from sandex.engine.read.queries import Page, checked_limit

router = APIRouter(prefix="/v2", tags=["Orders"])

# The reference: at most 1000 per page across profiles; per profile 20 by default, 500 at most.
PROFILE_DEFAULT_LIMIT = 20
PROFILE_MAX_LIMIT = 500


def execution_page(
    limit: Limit = None,
    page_cursor: str | None = None,
    begin: Annotated[str | None, Query(alias="range.begin")] = None,
    end: Annotated[str | None, Query(alias="range.end")] = None,
) -> Page:
    times = {}
    if (begin := checked_time("range.begin", begin)) is not None:
        times[("executed_at", "gte")] = begin
    if (end := checked_time("range.end", end)) is not None:
        times[("executed_at", "lte")] = end
    return Page(limit=limit, page_cursor=page_cursor, times=times)


@route(router, "ListExecutions")
async def list_executions(
    request: Request,
    who: Caller,
    page: Annotated[Page, Depends(execution_page)],
    profile_id: str | None = None,
    account_id: str | None = None,
    order_id: str | None = None,
    since_execution_id: str | None = None,
) -> JSONResponse:
    return JSONResponse(
        request.app.state.queries.list_executions(
            who.customer_id,
            page,
            profile_id=profile_id,
            account_id=account_id,
            order_id=order_id,
            since_execution_id=since_execution_id,
        )
    )


@route(router, "ListProfileExecutions")
async def list_profile_executions(
    request: Request,
    who: Caller,
    profile_id: str,
    page: Annotated[Page, Depends(execution_page)],
    order_id: str | None = None,
    since_execution_id: str | None = None,
) -> JSONResponse:
    page.limit = checked_limit(page.limit, PROFILE_DEFAULT_LIMIT, PROFILE_MAX_LIMIT)
    return JSONResponse(
        request.app.state.queries.list_executions(
            who.customer_id,
            page,
            profile_id=profile_id,
            order_id=order_id,
            since_execution_id=since_execution_id,
        )
    )
