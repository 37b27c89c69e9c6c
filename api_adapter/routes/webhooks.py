"""sandex's own webhook registration: one URL per customer receives its feed events.

Registering and reading need the scope that reads the events themselves."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import StringConstraints

from api_adapter import response_shapes, webhook_delivery
from api_adapter.auth import Principal, require
from api_adapter.request_bodies import Body
from api_adapter.responses import JSONResponse
from api_adapter.writer_bridge import actor, run
from engine.domain.webhook_registrations import RegisterWebhook, RemoveWebhook
from engine.kernel.errors import NotFound

router = APIRouter(prefix="/v2/sandbox", tags=["Sandbox"])

Events = Annotated[Principal, Depends(require("events:read_event"))]


class WebhookRequest(Body):
    url: Annotated[str, StringConstraints(min_length=1, max_length=2048)]


@router.post(
    "/webhooks",
    operation_id="RegisterSandboxWebhook",
    responses=response_shapes.ok(response_shapes.SandboxWebhookRegistration),
)
async def register(request: Request, who: Events, body: WebhookRequest) -> JSONResponse:
    registered = await run(request, RegisterWebhook(actor=actor(request, who), url=body.url))
    request.app.state.webhooks.nudge()  # its deliverer may poll slowly while none is registered
    return JSONResponse(registered)


@router.get(
    "/webhooks",
    operation_id="GetSandboxWebhook",
    responses=response_shapes.ok(response_shapes.SandboxWebhookStatus),
)
async def get(request: Request, who: Events) -> JSONResponse:
    view = webhook_delivery.status(request.app, who.customer_id)
    if view is None:
        raise NotFound("no webhook is registered")
    return JSONResponse(view)


@router.delete(
    "/webhooks",
    operation_id="RemoveSandboxWebhook",
    responses=response_shapes.ok(response_shapes.SandboxWebhook),
)
async def remove(request: Request, who: Events) -> JSONResponse:
    return JSONResponse(await run(request, RemoveWebhook(actor=actor(request, who))))
