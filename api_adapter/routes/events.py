"""The public event feed: a customer's order and transfer changes, oldest first.

The body is the reference's `{events: [...]}`; a page that is not the last also carries
an `X-Next-Page-Cursor` header (pass it back as `page_cursor`), because events of one
decision share a `created_at` and a time filter alone could skip or repeat them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from sandex.api_adapter.paging import page_limit
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.webhook_delivery import delivered_through
from sandex.engine.read import feed

router = APIRouter(prefix="/v2", tags=["Events"])


@route(router, "ListEvents")
async def list_events(
    request: Request,
    who: Caller,
    limit: Annotated[
        int | None,
        page_limit(feed.MAX_LIMIT),
        Query(description=f"page size, 1 to {feed.MAX_LIMIT}; 0 is the same as none"),
    ] = None,
    page_cursor: str | None = None,
    type: str | None = None,
    created_at_lt: Annotated[str | None, Query(alias="created_at.lt")] = None,
    created_at_lte: Annotated[str | None, Query(alias="created_at.lte")] = None,
    created_at_eq: Annotated[str | None, Query(alias="created_at.eq")] = None,
    created_at_gte: Annotated[str | None, Query(alias="created_at.gte")] = None,
    created_at_gt: Annotated[str | None, Query(alias="created_at.gt")] = None,
) -> JSONResponse:
    times = {
        op: value
        for op, value in (
            ("lt", created_at_lt),
            ("lte", created_at_lte),
            ("eq", created_at_eq),
            ("gte", created_at_gte),
            ("gt", created_at_gt),
        )
        if value is not None
    }
    owner = who.customer_id
    events, next_cursor = feed.list_events(
        request.app.state.queries,
        owner,
        limit=limit,
        page_cursor=page_cursor,
        type=type,
        times=times,
        delivered_through=delivered_through(request.app, owner),
    )
    headers = None if next_cursor is None else {"X-Next-Page-Cursor": next_cursor}
    return JSONResponse({"events": events}, headers=headers)


@route(router, "GetEvent")
async def get_event(request: Request, who: Caller, id: str) -> JSONResponse:
    through = delivered_through(request.app, who.customer_id)
    return JSONResponse(feed.get_event(request.app.state.queries, who.customer_id, id, through))
