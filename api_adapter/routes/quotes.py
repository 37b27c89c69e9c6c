"""Held-rate quotes and their executions (engine/domain/quotes.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query, Request

from sandex.api_adapter.paging import Limit, Order, checked_time
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import CreateQuoteExecutionRequest, MarketName, Side
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.domain.quotes import EXECUTION_STATUSES
from sandex.engine.kernel.commands import CreateQuoteExecution, IssueQuotes
from sandex.engine.read.queries import Page

router = APIRouter(prefix="/v2")


@route(router, "ListQuotes", tags=["Quotes"])
async def list_quotes(
    request: Request,
    who: Caller,
    markets: Annotated[list[MarketName] | None, Query()] = None,
) -> JSONResponse:
    """The markets' shared quotes (every market when none is named): a new batch, an
    event, only for a market whose live pair is stale (engine/domain/quotes.py)."""
    command = IssueQuotes(actor=actor(request, who), markets=tuple(markets or ()))
    return JSONResponse(await run(request, command))


@route(router, "CreateQuoteExecution", tags=["Quote Executions"])
async def create_quote_execution(
    request: Request,
    who: Caller,
    profile_id: str,
    body: CreateQuoteExecutionRequest,
) -> JSONResponse:
    command = CreateQuoteExecution(
        actor=actor(request, who),
        profile_id=profile_id,
        quote_id=body.quote_id,
        ref_id=body.ref_id,
        base_amount=body.base_amount,
        quote_amount=body.quote_amount,
        metadata=body.metadata,
        identity_id=body.identity_id,
        account_id=body.account_id,
        recipient_profile_id=body.recipient_profile_id,
    )
    return JSONResponse(await run(request, command))


def execution_page(
    limit: Limit = None,
    page_cursor: str | None = None,
    order: Order = None,
    order_by: Literal["CREATED_AT"] | None = None,
    begin: Annotated[str | None, Query(alias="created_at.begin")] = None,
    end: Annotated[str | None, Query(alias="created_at.end")] = None,
) -> Page:
    times = {}
    if (begin := checked_time("created_at.begin", begin)) is not None:
        times[("created_at", "gte")] = begin
    if (end := checked_time("created_at.end", end)) is not None:
        times[("created_at", "lte")] = end
    return Page(limit=limit, page_cursor=page_cursor, order=order, times=times)


@route(router, "ListQuoteExecutions", tags=["Quote Executions"])
async def list_quote_executions(
    request: Request,
    who: Caller,
    profile_id: str,
    page: Annotated[Page, Depends(execution_page)],
    side: Side | None = None,
    market: MarketName | None = None,
    status: Literal[EXECUTION_STATUSES] | None = None,  # type: ignore[valid-type]
) -> JSONResponse:
    return JSONResponse(
        request.app.state.queries.list_quote_executions(
            who.customer_id, profile_id, page, side=side, market=market, status=status
        )
    )


@route(router, "GetQuoteExecution", tags=["Quote Executions"])
async def get_quote_execution(
    request: Request, who: Caller, profile_id: str, id: str
) -> JSONResponse:
    return JSONResponse(request.app.state.queries.quote_execution(who.customer_id, profile_id, id))
