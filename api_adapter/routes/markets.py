"""Market data (no token needed) and sandex's own sandbox price control.

Market data is answered by the engine's writer from its in-memory state, not from the
read-model tables: the synthetic ladder moves with engine time, so only the writer
knows the book "now". It costs one hop through the writer's queue, and is exact."""

from __future__ import annotations

from fastapi import APIRouter, Request

from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.request_bodies import MarketPriceRequest
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.kernel.commands import ReadMarket, SetMarketPrice
from sandex.engine.kernel.money import MARKETS, format_amount

router = APIRouter(prefix="/v2", tags=["Market Data"])

_MARKETS = {
    "markets": [
        {
            "market": spec.market,
            "base_asset": spec.base,
            "quote_asset": spec.quote,
            "tick_rate": format_amount(spec.tick),
        }
        for spec in MARKETS.values()
    ]
}


async def _read(request: Request, view: str, market: str = "") -> JSONResponse:
    return JSONResponse(await run(request, ReadMarket(view=view, market=market)))


@route(router, "ListMarkets")
async def list_markets() -> JSONResponse:
    return JSONResponse(_MARKETS)


@route(router, "GetOrderBook")
async def order_book(request: Request, market: str) -> JSONResponse:
    return await _read(request, "book", market)


@route(router, "GetTicker")
async def ticker(request: Request, market: str) -> JSONResponse:
    return await _read(request, "ticker", market)


@route(router, "ListRecentExecutions")
async def recent_executions(request: Request, market: str) -> JSONResponse:
    return await _read(request, "recent", market)


@route(router, "ListTickers")
async def all_tickers(request: Request) -> JSONResponse:
    return await _read(request, "tickers")


@route(router, "GetSandboxMarketPrice", tags=["Sandbox"])
async def get_price(request: Request, market: str) -> JSONResponse:
    return await _read(request, "price", market)


@route(router, "SetSandboxMarketPrice", tags=["Sandbox"])
async def set_price(
    request: Request,
    who: Caller,
    market: str,
    body: MarketPriceRequest,
) -> JSONResponse:
    command = SetMarketPrice(
        actor=actor(request, who), market=market, price=body.price, gap=body.gap
    )
    return JSONResponse(await run(request, command))
