"""Market data (no token needed) and sandex's own sandbox price control.

Market data is answered by the engine's writer from its in-memory state, not from the
read-model tables: the synthetic ladder moves with engine time, so only the writer
knows the book "now". It costs one hop through the writer's queue, and is exact."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from api_adapter import response_shapes
from api_adapter.auth import Principal, require
from api_adapter.request_bodies import MarketPriceRequest
from api_adapter.responses import JSONResponse
from api_adapter.writer_bridge import actor, run
from engine.kernel.commands import ReadMarket, SetMarketPrice
from engine.kernel.money import MARKETS, format_amount

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


@router.get(
    "/markets",
    operation_id="ListMarkets",
    responses=response_shapes.ok(response_shapes.ListMarketsResponse),
)
async def list_markets() -> JSONResponse:
    return JSONResponse(_MARKETS)


@router.get(
    "/markets/{market}/order-book",
    operation_id="GetOrderBook",
    responses=response_shapes.ok(response_shapes.GetOrderBookResponse),
)
async def order_book(request: Request, market: str) -> JSONResponse:
    return await _read(request, "book", market)


@router.get(
    "/markets/{market}/ticker",
    operation_id="GetTicker",
    responses=response_shapes.ok(response_shapes.TickerRecord),
)
async def ticker(request: Request, market: str) -> JSONResponse:
    return await _read(request, "ticker", market)


@router.get(
    "/markets/{market}/recent-executions",
    operation_id="ListRecentExecutions",
    responses=response_shapes.ok(response_shapes.ListRecentExecutionsResponse),
)
async def recent_executions(request: Request, market: str) -> JSONResponse:
    return await _read(request, "recent", market)


@router.get(
    "/all-markets/ticker",
    operation_id="ListTickers",
    responses=response_shapes.ok(response_shapes.ListTickersResponse),
)
async def all_tickers(request: Request) -> JSONResponse:
    return await _read(request, "tickers")


@router.get(
    "/sandbox/markets/{market}/price",
    operation_id="GetSandboxMarketPrice",
    responses=response_shapes.ok(response_shapes.SandboxMarketPrice),
    tags=["Sandbox"],
)
async def get_price(request: Request, market: str) -> JSONResponse:
    return await _read(request, "price", market)


@router.post(
    "/sandbox/markets/{market}/price",
    operation_id="SetSandboxMarketPrice",
    responses=response_shapes.ok(response_shapes.SandboxMarketPrice),
    tags=["Sandbox"],
)
async def set_price(
    request: Request,
    who: Annotated[Principal, Depends(require("sandbox:write_customer"))],
    market: str,
    body: MarketPriceRequest,
) -> JSONResponse:
    command = SetMarketPrice(
        actor=actor(request, who), market=market, price=body.price, gap=body.gap
    )
    return JSONResponse(await run(request, command))
