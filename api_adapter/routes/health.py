"""`GET /healthz`: whether this sandex can take writes, for load balancers and test
harnesses. No token: it tells nothing of any tenant, only the writer's liveness, the
store, the clock and the log's position; the default world's adds how many worlds the
server keeps and holds loaded (docs/worlds.md).

200 when the writer thread is alive, its last group commit reached the disk and the
log can be read; otherwise 503, a problem whose `meta` holds the same checks. After a
failed commit it stays 503 until a commit succeeds again. `role` is `writer` here; a
standby (api_adapter/server/standby.py) answers 503 with `role: standby`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from sandex.api_adapter.pipeline import route
from sandex.api_adapter.responses import JSONResponse, problem
from sandex.engine.kernel.clock import format_time

router = APIRouter(tags=["Health"])


@route(
    router,
    "GetHealth",
    summary="Health check",
    responses={
        200: {"description": "Healthy: the sandbox takes writes"},
        503: {"description": "Unhealthy: `meta` holds the checks, as a 200 answer shows them"},
    },
)
async def health(request: Request) -> Response:
    engine = request.app.state.engine
    checks = engine.health()
    logged = request.app.state.queries.log_position()
    position = logged or 0
    readable = logged is not None and checks["log_readable"]
    view: dict[str, Any] = {
        "status": "ok",
        "role": "writer",
        "writer": "running" if checks["writer_alive"] else "stopped",
        "last_commit": "ok" if checks["last_commit_ok"] else "failed",
        "store": "ok" if readable else "unavailable",
        "position": position,
        "clock": {"now": format_time(engine.clock.now()), "mode": engine.clock.mode},
    }
    worlds = request.app.state.worlds  # the default world's alone: worlds know no other
    if worlds is not None:
        view["worlds"] = worlds.counts()
    faults = [
        fault
        for fault, failing in (
            ("the writer is stopped", view["writer"] != "running"),
            ("the last commit failed", view["last_commit"] != "ok"),
            ("the event store cannot be read", view["store"] != "ok"),
        )
        if failing
    ]
    if not faults:
        return JSONResponse(view)
    view["status"] = "unavailable"
    return problem(503, "; ".join(faults), meta=view, headers={"Retry-After": "1"})
