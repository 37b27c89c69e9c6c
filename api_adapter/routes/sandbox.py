"""sandex's own sandbox operations (not in the reference): clock and tenants."""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Request

from api_adapter.pipeline import Caller, route
from api_adapter.request_bodies import ClockMoveRequest, CreateCustomerRequest
from api_adapter.responses import JSONResponse
from api_adapter.writer_bridge import actor, run
from engine.kernel.clock import format_time, parse_time
from engine.kernel.commands import AdvanceClock, CreateCustomer
from engine.kernel.errors import Invalid

router = APIRouter(prefix="/v2/sandbox", tags=["Sandbox"])


@route(router, "GetSandboxClock")
async def get_clock(request: Request) -> JSONResponse:
    engine = request.app.state.engine
    return JSONResponse({"now": format_time(engine.clock.now()), "mode": engine.clock.mode})


@route(router, "MoveSandboxClock")
async def move_clock(
    request: Request,
    who: Caller,
    body: ClockMoveRequest,
) -> JSONResponse:
    if (body.advance_seconds is None) == (body.set_to is None):
        raise Invalid(
            "exactly one of advance_seconds and set_to is required", field="advance_seconds"
        )
    if body.set_to is not None:
        try:
            command = AdvanceClock(actor=actor(request, who), to=parse_time(body.set_to))
        except ValueError as exc:
            raise Invalid(
                "set_to invalid: not an RFC 3339 time with offset", field="set_to"
            ) from exc
    else:
        # The writer adds the delta to its own clock: two advances sent together move
        # it twice, where a target computed here would make them aim at the same time.
        assert body.advance_seconds is not None
        by = timedelta(seconds=body.advance_seconds)
        command = AdvanceClock(actor=actor(request, who), by=by)
    return JSONResponse(await run(request, command))


@route(router, "CreateSandboxCustomer")
async def create_customer(
    request: Request,
    who: Caller,
    body: CreateCustomerRequest | None = None,
) -> JSONResponse:
    command = CreateCustomer(
        actor=actor(request, who),
        scopes=tuple(body.scopes) if body and body.scopes else (),
        self_match_prevention=body.self_match_prevention if body else False,
        identity_labels=body.identity_labels if body else False,
    )
    return JSONResponse(await run(request, command))
