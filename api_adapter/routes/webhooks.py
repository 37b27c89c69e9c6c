"""sandex's own webhook registration: one URL per customer receives its feed events;
and the rules that make its deliveries fail, wait, repeat or swap (docs/faults.md).

Registering and reading need the scope that reads the events themselves; fault rules
need `sandbox:faults`, and each tenant's see and hit only its own webhook."""

from __future__ import annotations

from fastapi import APIRouter, Request

from sandex.api_adapter import webhook_delivery
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import WebhookFaultRequest, WebhookRequest
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.domain.webhook_faults import ArmWebhookFault, RemoveWebhookFault
from sandex.engine.domain.webhook_registrations import RegisterWebhook, RemoveWebhook
from sandex.engine.kernel.errors import NotFound
from sandex.engine.read import webhook_status

router = APIRouter(prefix="/v2/sandbox", tags=["Sandbox"])


@route(router, "RegisterSandboxWebhook")
async def register(request: Request, who: Caller, body: WebhookRequest) -> JSONResponse:
    registered = await run(request, RegisterWebhook(actor=actor(request, who), url=body.url))
    request.app.state.webhooks.nudge()  # its deliverer may poll slowly while none is registered
    return JSONResponse(registered)


@route(router, "GetSandboxWebhook")
async def get(request: Request, who: Caller) -> JSONResponse:
    view = webhook_delivery.status(request.app, who.customer_id)
    if view is None:
        raise NotFound("no webhook is registered")
    return JSONResponse(view)


@route(router, "RemoveSandboxWebhook")
async def remove(request: Request, who: Caller) -> JSONResponse:
    return JSONResponse(await run(request, RemoveWebhook(actor=actor(request, who))))


@route(router, "CreateSandboxWebhookFault")
async def arm_fault(request: Request, who: Caller, body: WebhookFaultRequest) -> JSONResponse:
    """Arm a rule over the caller's own webhook deliveries; the engine checks the action."""
    command = ArmWebhookFault(
        actor=actor(request, who),
        match=body.match.model_dump(exclude_none=True) if body.match else {},
        action=body.action.model_dump(exclude_none=True),
        times=body.times,
    )
    return JSONResponse(await run(request, command))


@route(router, "ListSandboxWebhookFaults")
async def list_faults(request: Request, who: Caller) -> JSONResponse:
    items = webhook_status.fault_rules(request.app.state.queries, who.customer_id)
    return JSONResponse({"items": items})


@route(router, "GetSandboxWebhookFault")
async def get_fault(request: Request, who: Caller, id: str) -> JSONResponse:
    found = webhook_status.fault_rules(request.app.state.queries, who.customer_id, id)
    if not found:
        raise NotFound("webhook fault rule not found")
    return JSONResponse(found[0])


@route(router, "DeleteSandboxWebhookFault")
async def delete_fault(request: Request, who: Caller, id: str) -> JSONResponse:
    command = RemoveWebhookFault(actor=actor(request, who), rule_id=id)
    return JSONResponse(await run(request, command))
