"""Hand a command to the engine's writer and await its answer without blocking the loop."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Request

from api_adapter.auth import Principal
from engine.commands import Actor, Command


def actor(request: Request, principal: Principal) -> Actor:
    return actor_of(principal, getattr(request.state, "client_request_id", "") or "")


def actor_of(principal: Principal, client_request_id: str) -> Actor:
    """The command's actor; only a request id the client sent enters the log."""
    return Actor(
        customer_id=principal.customer_id,
        client_id=principal.client_id,
        request_id=client_request_id,
    )


async def run(request: Request, command: Command) -> Any:
    return await asyncio.wrap_future(request.app.state.engine.submit(command))
