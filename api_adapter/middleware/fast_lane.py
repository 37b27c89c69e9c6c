"""A fast lane for the busiest writes: creating orders, crypto withdrawals and sandbox
deposits, as a pure ASGI layer in front of FastAPI's router.

FastAPI's route matching over every route, dependency solving and request objects cost
several times the adapter's own work per request, and the loop is what feeds the
writer's group commit. The lane serves the rows of the operation table that carry a
command builder (api_adapter/operations.py): it runs the request pipeline's gates
(`pipeline.run_gates`: rate limit, bearer token, scope), validates the body the guard
parsed (`body_guard.body_value`) with the row's model, builds the row's command and
answers its result, and renders every refusal with `problems.render`, as the route
would. A body its model refuses, or one whose answer only the route shapes, goes on to
the app untouched, its gates passed (the route does not run them again), whose
handlers answer it exactly as before; anything else propagates to the app's error
middleware (a 500 problem naming the request id).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from sandex.api_adapter.auth import Principal
from sandex.api_adapter.middleware.body_guard import body_value
from sandex.api_adapter.operations import LANE, Operation
from sandex.api_adapter.pipeline import authorization_of, run_gates
from sandex.api_adapter.problems import REFUSALS, render
from sandex.api_adapter.responses import send_json
from sandex.api_adapter.writer_bridge import actor_of, submit
from sandex.engine.kernel.commands import Command

# The rows read once into what a request is matched against: whole paths by lookup,
# paths with a parameter by their head and tail.
_EXACT = {(r.method, r.path): r for r in LANE if not r.has_param}
_PARAMETRIC = tuple((r.method, r.head, r.tail, r) for r in LANE if r.has_param)


def lane_of(method: str, path: str) -> tuple[Operation, str] | None:
    """The lane's operation of a request and its path parameter ("" if none), if any. A
    parameter matches as Starlette's `{name}` does: one non-empty segment."""
    exact = _EXACT.get((method, path))
    if exact is not None:
        return exact, ""
    for route_method, head, tail, route in _PARAMETRIC:
        if route_method == method and path.startswith(head) and path.endswith(tail):
            param = path[len(head) : len(path) - len(tail)]
            if param and "/" not in param:
                return route, param
    return None


def route_path(scope: Scope) -> str:
    """The path the app's routes match: a request's path without the `root_path` it was
    mounted under, where the path still holds it (Starlette's mounts); a world's
    dispatcher hands its app the path without it already."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ("", "/"):
        return path[len(root) :]
    return path


class FastLane:
    """Pure ASGI middleware; `state` is the app's state (engine, tokens, clients, limiter)."""

    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        found = lane_of(scope["method"], route_path(scope))
        if found is None:
            await self.app(scope, receive, send)
            return
        op, param = found
        try:
            passage = await run_gates(self.state, scope, op, authorization_of(scope))
            assert passage.principal is not None  # every row of the lane has a scope
            command = _command(scope, op, passage.principal, param)
            if command is not None:
                result = await submit(self.state.engine, command)
        except REFUSALS as exc:
            await render(exc, op.method, scope["path"])(scope, receive, send)
            return
        if command is None:  # the route serves it, its gates passed
            await self.app(scope, receive, send)
            return
        await send_json(send, result)


def _command(scope: Scope, op: Operation, principal: Principal, param: str) -> Command | None:
    """The request's command, when its body is one the lane serves; else None."""
    value = body_value(scope)
    if value is None:
        return None
    assert op.body is not None  # every row of the lane has a body model
    try:
        model = op.body.__pydantic_validator__.validate_python(value, from_attributes=True)
    except ValidationError:
        return None
    if op.route_only(model):
        return None
    client_request_id = scope["state"].get("client_request_id", "") or ""
    return op.command(actor_of(principal, client_request_id), principal, param, model)
