"""The FastAPI application: thin. It authenticates, turns requests into commands or
queries, and turns results and domain errors into responses."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from sandex.api_adapter import auth, faults, openapi, problems
from sandex.api_adapter.console import ConsoleFront
from sandex.api_adapter.logging import RequestLog
from sandex.api_adapter.middleware.body_guard import BodyGuard
from sandex.api_adapter.middleware.fast_lane import FastLane
from sandex.api_adapter.rate_limits import RateLimiter
from sandex.api_adapter.recent_requests import RecentRequests
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.routes import (
    accounts,
    conversions,
    deposit_addresses,
    events,
    executions,
    fault_rules,
    fiat_accounts,
    funding,
    health,
    identities,
    internal_transfers,
    market_stream,
    markets,
    orders,
    prices,
    profiles,
    quotes,
    sandbox,
    sandbox_requests,
    snapshots,
    token,
    transfer_limits,
    transfers,
    webhooks,
    withdrawals,
)
from sandex.api_adapter.version import installed_version
from sandex.api_adapter.webhook_delivery import Deliverer
from sandex.api_adapter.wire_faults import WireFaults
from sandex.api_adapter.worlds import routes as worlds
from sandex.engine import Engine
from sandex.engine.read.cursors import Cursors
from sandex.engine.read.queries import Queries

ROUTERS = [token.router, profiles.router, funding.router, transfers.router, sandbox.router]
ROUTERS += [withdrawals.router, internal_transfers.router]
ROUTERS += [deposit_addresses.router]
ROUTERS += [orders.router, executions.router, markets.router]
ROUTERS += [events.router, snapshots.router, webhooks.router, health.router]
ROUTERS += [fault_rules.router]
ROUTERS += [conversions.router]
ROUTERS += [transfer_limits.router]
ROUTERS += [identities.router, accounts.router]
ROUTERS += [quotes.router, prices.router]
ROUTERS += [fiat_accounts.router]
ROUTERS += [sandbox_requests.router]
ROUTERS += [worlds.router]


def _options() -> dict[str, Any]:
    """Every app's FastAPI options but its lifespan."""
    # /docs loads Swagger UI from files installed with sandex (fastapi-offline bundles
    # them), never from a CDN: it works on an air-gapped machine. No /redoc: ReDoc's page
    # loads its logo from its vendor's host.
    return {
        "redoc_url": None,
        "title": "sandex",
        "version": installed_version(),
        "summary": "A stateful, event-sourced sandbox of a crypto trading and transfer v2 API",
        "default_response_class": JSONResponse,
        # sandex logs each request itself (structlog); FastAPI's OpenTelemetry hooks
        # looked up the global providers on every request to learn they are unset.
        "telemetry": {"tracing": False, "metrics": False, "logs": False},
        # no badge image from the public validator service
        "swagger_ui_parameters": {"validatorUrl": None},
    }


_ROUTES_LOCK = threading.Lock()
_ROUTES: list[BaseRoute] = []
_DOCS_ROUTES: list[BaseRoute] = []


def _docs_routes() -> list[BaseRoute]:
    """FastAPIOffline's pages (/docs, its OAuth2 redirect, the static files they load),
    built once for every app to serve: they hold nothing of an app's state (the page
    reads its world's prefix from the request's root path). Not the OpenAPI document's
    route, which each app makes itself: its handler keeps the servers it was asked from
    on its app."""
    _api_routes()
    return _DOCS_ROUTES


def _api_routes() -> list[BaseRoute]:
    """`ROUTERS` as included once in this process, for every app to serve: FastAPI
    analyses an included router's operations (their dependencies, parameters and
    bodies) when the inclusion first matches a request, and keeps the analysis on the
    inclusion. Included anew in each world's app, every world paid that analysis again
    on its first request, far more CPU than the rest of its assembly; it depends on the
    routes alone, so the worlds share the inclusions and the first request pays it once.
    Their parent is an app that is never served."""
    with _ROUTES_LOCK:
        if not _ROUTES:
            plain = len(FastAPI(**{**_options(), "docs_url": None}).router.routes)
            parent = FastAPIOffline(**_options())
            first = len(parent.router.routes)
            for route in parent.router.routes[plain:first]:
                if isinstance(route, Mount) and route.name == "static-offline-docs":
                    route.app = _WholePath(route.app)
                _DOCS_ROUTES.append(route)
            for router in ROUTERS:
                parent.include_router(router)
            _ROUTES.extend(parent.router.routes[first:])
        return _ROUTES


class _WholePath:
    """The docs' files (a Mount of StaticFiles) under a world's prefix. WorldDispatch
    hands a world's app its path without the prefix, which `root_path` holds; StaticFiles
    strips its mount's root_path (the prefix and the mount's path) from the path, so it
    is given the whole path back, or it looks for the mount's own name among its files."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        prefix = scope.get("app_root_path", "")
        if prefix and not scope["path"].startswith(prefix):
            scope = {**scope, "path": prefix + scope["path"]}
        await self.app(scope, receive, send)


def create_app(
    engine: Engine,
    *,
    fast_lane: bool = True,
    webhooks_on_lifespan: bool = True,
    fault_gate: bool = True,
) -> FastAPI:
    """An app serving `engine`, which must be started. `fast_lane=False` serves every
    request through FastAPI's routes (the tests hold the fast lane's answers to theirs).
    `fault_gate=False` leaves the fault gate and layer out (rules are kept, none fires):
    the baseline that bench_faults measures the gate against, nothing a user sets.
    The app's lifespan starts and stops its webhook deliverer when it is served on its
    own (a test's client used as a context manager); `webhooks_on_lifespan=False` leaves
    that to its `World`, whose app may be served mounted, with no lifespan of its own."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if not webhooks_on_lifespan:
            yield
            return
        app.state.webhooks.start()
        try:
            yield
        finally:
            app.state.webhooks.stop()

    app = FastAPI(lifespan=lifespan, **{**_options(), "docs_url": None})
    app.router.routes.extend(_docs_routes())
    app.state.engine = engine
    # Paging cursors are sealed with a key derived from the key file's sealing key
    # (`sandex.engine.read.cursors` separates the uses): it is never rotated, so a cursor opens in
    # every process serving this database, across restarts and signing-key rotations.
    app.state.queries = Queries(engine.db_path, cursors=Cursors(engine.keys.current().sealing))
    app.state.clients = auth.Clients(app.state.queries)
    app.state.tokens = auth.Tokens(engine.keys, engine.settings.token_ttl_seconds)
    # Webhook delivery runs with the served app (started by its `World`, or by the
    # lifespan); a test may replace it with a faster-polling one before that.
    settings = engine.settings
    app.state.webhooks = Deliverer(
        engine.db_path, allowed_hosts=settings.webhook_allowed_hosts, engine=engine
    )
    app.state.limiter = RateLimiter(settings.rate_limits) if settings.rate_limits_enabled else None
    # The world's fault rules, loaded from the read model (kept in step by sandex.api_adapter.faults
    # and the fault and snapshot routes), and the request pipeline's gates after the rate
    # limit and the bearer check (pipeline.py).
    app.state.faults = faults.FaultIndex()
    faults.reload(app.state)
    # the thread that builds the app reads nothing else of it: no connection kept for that
    app.state.queries.close_own()
    app.state.gates = (faults.FaultGate(app.state),) if fault_gate else ()
    # The world's recent requests (GET /v2/sandbox/requests), kept by the access log.
    app.state.requests = RecentRequests(
        settings.request_log_size, engine.clock, partial(_identify, app.state)
    )
    # The server's other worlds, kept by the default world's `World` (api_adapter/worlds);
    # none in a world's own app, where the worlds operations are 404.
    app.state.worlds = None
    problems.install(app)
    app.router.routes.extend(_api_routes())
    # The WebSocket feeds at the service's own paths (outside /v2, no token, no rate
    # limit dependency): plain Starlette routes, not FastAPI's.
    app.router.routes.extend(market_stream.ROUTES)
    openapi.install(app)
    # Outermost last: request log, body guard, the fault layer (after-commit faults), then
    # the fast lane of the busiest writes.
    if fast_lane:
        app.add_middleware(FastLane, state=app.state)
    if fault_gate:
        app.add_middleware(faults.FaultLayer, state=app.state)
    app.add_middleware(
        BodyGuard, max_body_bytes=settings.max_body_bytes, strict_fields=settings.strict_fields
    )
    app.add_middleware(RequestLog, recent=app.state.requests)
    # Outside even Starlette's error middleware: an in-process wire fault's exception
    # reaches the client's transport, not the app's 500 handler (wire_faults.WireFaults).
    # The console (sandex.api_adapter.console) in front of it all: its pages are not API
    # requests; its actions are, sent back through this whole stack.
    app.state.console = True
    build = app.build_middleware_stack
    app.build_middleware_stack = lambda: ConsoleFront(WireFaults(build()), app)  # type: ignore[method-assign]
    return app


def _identify(app_state: Any, authorization: str) -> tuple[str, str] | None:
    """The caller (customer id, client id) of a valid bearer token, else None."""
    try:
        who = auth.principal_of(app_state.tokens, app_state.clients, authorization)
    except problems.AuthError:
        return None
    return who.customer_id, who.client_id
