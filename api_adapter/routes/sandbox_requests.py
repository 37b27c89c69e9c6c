"""`GET /v2/sandbox/requests`: the world's recent requests, newest first (docs/faults.md).

A tenant sees its own requests, the bootstrap client everyone's (and those of no known
caller: a token request that failed, a path without a valid token). The list is the
world's `RecentRequests`, in memory; each entry's events are read from the caller's
feed, so that they are the ids `GET /v2/events/{id}` answers. Its own requests are not
listed."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from sandex.api_adapter.auth import Principal
from sandex.api_adapter.operations import BY_ID
from sandex.api_adapter.paging import Limit
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.recent_requests import Entry, Filters, RecentRequests, statuses_of
from sandex.api_adapter.responses import JSONResponse
from sandex.engine.kernel.clock import format_time
from sandex.engine.kernel.errors import Invalid
from sandex.engine.read import feed
from sandex.engine.read.clients import is_bootstrap
from sandex.engine.read.queries import checked_limit

router = APIRouter(prefix="/v2/sandbox", tags=["Sandbox"])

# What a cursor of this list is bound to, beside its caller.
_CURSOR_LIST = "requests"


@route(router, "ListSandboxRequests")
async def list_requests(
    request: Request,
    who: Caller,
    limit: Limit = None,
    page_cursor: Annotated[str | None, Query()] = None,
    operation: Annotated[
        str | None, Query(description="only the requests of this operationId")
    ] = None,
    status: Annotated[
        str | None, Query(description="only the requests answered with this status, or class (4xx)")
    ] = None,
) -> JSONResponse:
    queries = request.app.state.queries
    cursors = queries.cursors
    before = cursors.decode(page_cursor, _CURSOR_LIST, who.customer_id) if page_cursor else None
    size = checked_limit(limit)
    if operation is not None and operation not in BY_ID:
        raise Invalid(f"operation invalid: no operation {operation[:64]!r}", field="operation")
    filters = Filters(operation, statuses_of(status))
    found, items, more = recent_requests(request.app.state, who, before, size, filters)
    answer: dict[str, Any] = {"items": items}
    if more:
        answer["next_page_cursor"] = cursors.encode(found[-1].id, _CURSOR_LIST, who.customer_id)
    return JSONResponse(answer)


def recent_requests(
    app_state: Any, who: Principal, before: int | None, size: int, filters: Filters
) -> tuple[list[Entry], list[dict[str, Any]], bool]:
    """The requests `who` may see (the operator: everyone's; a tenant: its own), their
    views, and whether more follow: the operation's answer, and the console's page."""
    queries = app_state.queries
    recent: RecentRequests = app_state.requests
    everyone = is_bootstrap(queries, who.customer_id)
    found, more = recent.page(None if everyone else who.customer_id, before, size, filters)
    caused = feed.ids_caused(
        queries, [(e.customer_id, e.caused) for e in found if e.customer_id is not None]
    )
    events = iter(caused)
    items = [_view(e, next(events) if e.customer_id is not None else []) for e in found]
    return found, items, more


def _view(entry: Entry, events: list[str]) -> dict[str, Any]:
    """An entry as the API shows it: no field without a value (sandex sends no null)."""
    view: dict[str, Any] = {
        "id": entry.id,
        "request_id": entry.request_id,
        "time": format_time(entry.at),
        "method": entry.method,
        "path": entry.path,
    }
    if entry.operation is not None:
        view["operation"] = entry.operation
    view["status"] = entry.status
    if entry.problem_type is not None:
        view["problem_type"] = entry.problem_type
    if entry.fault is not None:
        view["fault"] = entry.fault
    view["events"] = events
    view["duration_ms"] = round(entry.ms, 3)
    if entry.client_id is not None:
        view["client_id"] = entry.client_id
    return view
