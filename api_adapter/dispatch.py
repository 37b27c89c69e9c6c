"""Hand a command to the engine's writer and await its answer without blocking the loop."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Request

from api_adapter.auth import Principal
from engine.commands import Actor, Command


def actor(request: Request, principal: Principal) -> Actor:
    return Actor(
        customer_id=principal.customer_id,
        client_id=principal.client_id,
        request_id=getattr(request.state, "client_request_id", "") or "",
    )


async def run(request: Request, command: Command) -> Any:
    return await asyncio.wrap_future(request.app.state.engine.submit(command))
