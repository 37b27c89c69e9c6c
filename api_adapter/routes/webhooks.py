"""sandex's own webhook registration: one URL per customer receives its feed events.

Registering and reading need the scope that reads the events themselves."""

from __future__ import annotations

from fastapi import APIRouter, Request

from api_adapter import webhook_delivery
from api_adapter.pipeline import Caller, route
from api_adapter.request_bodies import WebhookRequest
from api_adapter.responses import JSONResponse
from api_adapter.writer_bridge import actor, run
from engine.domain.webhook_registrations import RegisterWebhook, RemoveWebhook
from engine.kernel.errors import NotFound

router = APIRouter(prefix="/v2/sandbox", tags=["Sandbox"])


@route(router, "RegisterSandboxWebhook")
async def register(request: Request, who: Caller, body: WebhookRequest) -> JSONResponse:
    return JSONResponse(
        await run(request, RegisterWebhook(actor=actor(request, who), url=body.url))
    )


@route(router, "GetSandboxWebhook")
async def get(request: Request, who: Caller) -> JSONResponse:
    view = webhook_delivery.status(request.app, who.customer_id)
    if view is None:
        raise NotFound("no webhook is registered")
    return JSONResponse(view)


@route(router, "RemoveSandboxWebhook")
async def remove(request: Request, who: Caller) -> JSONResponse:
    return JSONResponse(await run(request, RemoveWebhook(actor=actor(request, who))))
