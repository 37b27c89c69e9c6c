"""sandex's own sandbox operations (not in the reference): clock, tenants, the pacing
of pending items and their release by hand (docs/faults.md)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Request

from api_adapter import response_shapes
from api_adapter.auth import Principal, require
from api_adapter.request_bodies import (
    ClockMoveRequest,
    CreateCustomerRequest,
    PacingRequest,
    ReleaseRequest,
)
from api_adapter.responses import JSONResponse
from api_adapter.writer_bridge import actor, run
from engine.domain import sandbox_pacing
from engine.kernel.clock import format_time, parse_time
from engine.kernel.commands import AdvanceClock, CreateCustomer, ReleasePending, SetPacing
from engine.kernel.errors import Invalid

router = APIRouter(prefix="/v2/sandbox", tags=["Sandbox"])


@router.get(
    "/clock",
    operation_id="GetSandboxClock",
    responses=response_shapes.ok(response_shapes.SandboxClock),
)
async def get_clock(request: Request) -> JSONResponse:
    engine = request.app.state.engine
    return JSONResponse({"now": format_time(engine.clock.now()), "mode": engine.clock.mode})


@router.post(
    "/clock",
    operation_id="MoveSandboxClock",
    responses=response_shapes.ok(response_shapes.SandboxClock),
)
async def move_clock(
    request: Request,
    who: Annotated[Principal, Depends(require("sandbox:write_customer"))],
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


@router.post(
    "/customers",
    operation_id="CreateSandboxCustomer",
    responses=response_shapes.ok(response_shapes.SandboxCustomer),
)
async def create_customer(
    request: Request,
    who: Annotated[Principal, Depends(require("sandbox:write_customer"))],
    body: CreateCustomerRequest | None = None,
) -> JSONResponse:
    command = CreateCustomer(
        actor=actor(request, who),
        scopes=tuple(body.scopes) if body and body.scopes else (),
        self_match_prevention=body.self_match_prevention if body else False,
        identity_labels=body.identity_labels if body else False,
    )
    return JSONResponse(await run(request, command))


@router.get(
    "/pacing",
    operation_id="GetSandboxPacing",
    responses=response_shapes.ok(response_shapes.SandboxPacing),
)
async def get_pacing(request: Request) -> JSONResponse:
    return JSONResponse(sandbox_pacing.view_of(request.app.state.queries.sandbox_pacing()))


@router.put(
    "/pacing",
    operation_id="SetSandboxPacing",
    responses=response_shapes.ok(response_shapes.SandboxPacing),
)
async def set_pacing(
    request: Request,
    who: Annotated[Principal, Depends(require("sandbox:write_customer"))],
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


Release = Annotated[Principal, Depends(require("transfer:write_sandbox_transfer"))]


@router.post(
    "/transfers/{id}/complete",
    operation_id="CompleteSandboxTransfer",
    responses=response_shapes.ok(response_shapes.Transfer),
)
async def complete_transfer(request: Request, who: Release, id: str) -> JSONResponse:
    """Settle the caller's pending transfer now, as if its time had come and the
    sandbox said yes."""
    return await _release(request, who, "transfer", id, "complete")


@router.post(
    "/transfers/{id}/fail",
    operation_id="FailSandboxTransfer",
    responses=response_shapes.ok(response_shapes.Transfer),
)
async def fail_transfer(
    request: Request, who: Release, id: str, body: ReleaseRequest | None = None
) -> JSONResponse:
    """End the caller's pending transfer FAILED, `reason` in its status details; a
    withdrawal's hold goes back to its balance."""
    return await _release(request, who, "transfer", id, "fail", body)


@router.post(
    "/conversions/{id}/complete",
    operation_id="CompleteSandboxConversion",
    responses=response_shapes.ok(response_shapes.StablecoinConversion),
)
async def complete_conversion(request: Request, who: Release, id: str) -> JSONResponse:
    """Settle the caller's CREATED conversion now (cancelling it is DELETE's)."""
    return await _release(request, who, "conversion", id, "complete")


@router.post(
    "/fiat-accounts/{id}/complete",
    operation_id="CompleteSandboxFiatAccountReview",
    responses=response_shapes.ok(response_shapes.FiatAccount),
)
async def approve_account(request: Request, who: Release, id: str) -> JSONResponse:
    """The review of the caller's PENDING fiat account, now: APPROVED."""
    return await _release(request, who, "fiat_account", id, "complete")


@router.post(
    "/fiat-accounts/{id}/fail",
    operation_id="FailSandboxFiatAccountReview",
    responses=response_shapes.ok(response_shapes.FiatAccount),
)
async def reject_account(
    request: Request, who: Release, id: str, body: ReleaseRequest | None = None
) -> JSONResponse:
    """The review of the caller's PENDING fiat account, now: REJECTED."""
    return await _release(request, who, "fiat_account", id, "fail", body)


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
