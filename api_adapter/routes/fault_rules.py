"""HTTP fault rules (docs/faults.md, sandex.engine.domain.sandbox_faults): armed, listed, read
and removed per world. The bootstrap client's rules match any call of the world; a
tenant's match only its own calls, and a tenant sees, reads and removes only its own."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from sandex.api_adapter.auth import Principal
from sandex.api_adapter.operations import FAULTABLE
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import FaultRuleRequest
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.domain.sandbox_faults import ArmFault, RemoveFault, status_of

router = APIRouter(prefix="/v2/sandbox/faults", tags=["Sandbox"])

# The scope of the world's own client (the bootstrap's): its rules are the world's.
WORLD_SCOPE = "sandbox:write_customer"


def owner_of(who: Principal) -> str | None:
    """Whose calls a caller's rules match: None (every call) for the world's client."""
    return None if WORLD_SCOPE in who.scopes else who.customer_id


def _view(request: Request, rule: dict[str, Any]) -> dict[str, Any]:
    # an answer holds no nulls: a rule without `times` or an end leaves them out
    view = {k: v for k, v in rule.items() if k not in ("owner", "position") and v is not None}
    view["status"] = status_of(rule, request.app.state.engine.clock.now())
    return view


@route(router, "CreateSandboxFault")
async def create_fault(request: Request, who: Caller, body: FaultRuleRequest) -> JSONResponse:
    """Arm a rule; the answer is the rule with its `id`."""
    command = ArmFault(
        actor=actor(request, who),
        rule=body.model_dump(exclude_unset=True),
        owner=owner_of(who),
        operations=FAULTABLE,
    )
    made = await run(request, command)
    request.app.state.faults.add(made)
    return JSONResponse(_view(request, made))


@route(router, "ListSandboxFaults")
async def list_faults(request: Request, who: Caller) -> JSONResponse:
    rules = request.app.state.queries.sandbox_faults(owner_of(who))
    return JSONResponse({"items": [_view(request, rule) for rule in rules]})


@route(router, "GetSandboxFault")
async def get_fault(request: Request, who: Caller, id: str) -> JSONResponse:
    return JSONResponse(_view(request, request.app.state.queries.sandbox_fault(id, owner_of(who))))


@route(router, "DeleteSandboxFault")
async def delete_fault(request: Request, who: Caller, id: str) -> JSONResponse:
    """Remove a rule; the answer is the rule as it was."""
    command = RemoveFault(actor=actor(request, who), rule_id=id, owner=owner_of(who))
    removed = await run(request, command)
    request.app.state.faults.drop([id])
    return JSONResponse(_view(request, removed))
