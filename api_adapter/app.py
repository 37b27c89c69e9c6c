"""The FastAPI application: thin. It authenticates, turns requests into commands or
queries, and turns results and domain errors into responses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from api_adapter import auth, problems
from api_adapter.logging import RequestLog
from api_adapter.responses import JSONResponse
from api_adapter.routes import (
    executions,
    funding,
    internal_transfers,
    markets,
    orders,
    profiles,
    sandbox,
    transfers,
    withdrawals,
)
from engine import Engine
from engine.queries import Queries

ROUTERS = [auth.router, profiles.router, funding.router, transfers.router, sandbox.router]
ROUTERS += [withdrawals.router, internal_transfers.router]
ROUTERS += [orders.router, executions.router, markets.router]


def create_app(engine: Engine, *, scheduler: Any = None) -> FastAPI:
    """An app serving `engine`, which must be started; `scheduler` runs with the app."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if scheduler is not None:
            scheduler.start()
        try:
            yield
        finally:
            if scheduler is not None:
                scheduler.stop()

    app = FastAPI(
        title="sandex",
        version="0.1.0",
        summary="A stateful, event-sourced sandbox of a crypto trading and transfer v2 API",
        default_response_class=JSONResponse,
        lifespan=lifespan,
    )
    secret = engine.store.get_meta("signing_secret")
    assert secret is not None
    app.state.engine = engine
    app.state.queries = Queries(engine.db_path)
    app.state.tokens = auth.Tokens(secret, engine.settings.token_ttl_seconds)
    problems.install(app)
    for router in ROUTERS:
        app.include_router(router)
    app.add_middleware(RequestLog)
    return app
