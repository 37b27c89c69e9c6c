"""sandex's own sandbox operations (not in the reference): clock, tenants, the pacing
of pending items and their release by hand (docs/faults.md)."""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Request

from sandex.api_adapter.auth import Principal
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import (
    ClockMoveRequest,
    CreateCustomerRequest,
    PacingRequest,
    ReleaseRequest,
)
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.domain import sandbox_pacing
from sandex.engine.kernel.clock import format_time, parse_time
from sandex.engine.kernel.commands import (
    AdvanceClock,
    CreateCustomer,
    ReleaseOrder,
    ReleasePending,
    SetPacing,
)
from sandex.engine.kernel.errors import Invalid

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


@route(router, "GetSandboxPacing")
async def get_pacing(request: Request) -> JSONResponse:
    return JSONResponse(sandbox_pacing.view_of(request.app.state.queries.sandbox_pacing()))


@route(router, "SetSandboxPacing")
async def set_pacing(
    request: Request,
    who: Caller,
    body: PacingRequest,
) -> JSONResponse:
    """The world's pace of each named kind; the answer holds every kind's."""
    view = sandbox_pacing.view_of(request.app.state.queries.sandbox_pacing())
    for kind in sandbox_pacing.KINDS:
        entry = getattr(body, kind)
        if entry is None:
            continue
        value = None if entry.value is None else str(entry.value)
        command = SetPacing(actor=actor(request, who), kind=kind, mode=entry.mode, value=value)
        try:
            view = await run(request, command)
        except Invalid as exc:
            raise Invalid(f"{kind}.{exc.detail}", field=f"{kind}.{exc.field}") from exc
    return JSONResponse(view)


@route(router, "CompleteSandboxTransfer")
async def complete_transfer(request: Request, who: Caller, id: str) -> JSONResponse:
    """Settle the caller's pending transfer now, as if its time had come and the
    sandbox said yes."""
    return await _release(request, who, "transfer", id, "complete")


@route(router, "FailSandboxTransfer")
async def fail_transfer(
    request: Request, who: Caller, id: str, body: ReleaseRequest | None = None
) -> JSONResponse:
    """End the caller's pending transfer FAILED, `reason` in its status details; a
    withdrawal's hold goes back to its balance."""
    return await _release(request, who, "transfer", id, "fail", body)


@route(router, "CompleteSandboxConversion")
async def complete_conversion(request: Request, who: Caller, id: str) -> JSONResponse:
    """Settle the caller's CREATED conversion now (cancelling it is DELETE's)."""
    return await _release(request, who, "conversion", id, "complete")


@route(router, "CompleteSandboxFiatAccountReview")
async def approve_account(request: Request, who: Caller, id: str) -> JSONResponse:
    """The review of the caller's PENDING fiat account, now: APPROVED."""
    return await _release(request, who, "fiat_account", id, "complete")


@route(router, "FailSandboxFiatAccountReview")
async def reject_account(
    request: Request, who: Caller, id: str, body: ReleaseRequest | None = None
) -> JSONResponse:
    """The review of the caller's PENDING fiat account, now: REJECTED."""
    return await _release(request, who, "fiat_account", id, "fail", body)


@route(router, "ReleaseSandboxOrder")
async def release_order(request: Request, who: Caller, id: str) -> JSONResponse:
    """The caller's order held by its `sandbox:hold` metadata, let go: it meets the market
    as an order submitted now would."""
    command = ReleaseOrder(actor=actor(request, who), order_id=id)
    return JSONResponse(await run(request, command))


async def _release(
    request: Request,
    who: Principal,
    kind: str,
    item_id: str,
    outcome: str,
    body: ReleaseRequest | None = None,
) -> JSONResponse:
    command = ReleasePending(
        actor=actor(request, who),
        kind=kind,
        item_id=item_id,
        outcome=outcome,
        reason=body.reason if body else None,
    )
    return JSONResponse(await run(request, command))
