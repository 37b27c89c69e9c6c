"""Prices now and in the past (engine/domain/trading/price_history.py), answered by the
writer like the rest of market data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from fastapi import APIRouter, Query, Request

from sandex.api_adapter.paging import page_limit, strict_int
from sandex.api_adapter.pipeline import Caller, route
from sandex.api_adapter.responses import JSONResponse
from sandex.api_adapter.writer_bridge import actor, run
from sandex.engine.domain.trading.market_views import TICKER_MARKETS
from sandex.engine.domain.trading.price_history import INCREMENTS, MAX_LIMIT
from sandex.engine.kernel.commands import ListHistoricalPrices, ListPrices

router = APIRouter(prefix="/v2", tags=["Pricing"])

if TYPE_CHECKING:  # a Literal built from a tuple is no type to mypy
    PriceMarket = str
    Increment = str
else:
    PriceMarket = Literal[TICKER_MARKETS]
    Increment = Literal[tuple(INCREMENTS)]
_BIG = 2**62


@route(router, "ListPrices")
async def list_prices(
    request: Request, markets: Annotated[list[PriceMarket] | None, Query()] = None
) -> JSONResponse:
    """Public, as the reference has it: no token. Every market when none is named."""
    return JSONResponse(await run(request, ListPrices(markets=tuple(markets or ()))))


@route(router, "ListHistoricalPrices")
async def list_historical_prices(
    request: Request,
    who: Caller,
    market: str,
    increment: Increment | None = None,
    max_data_points: Annotated[int | None, strict_int(1, _BIG), Query(ge=1)] = None,
    begin: Annotated[str | None, Query(alias="range.begin")] = None,
    end: Annotated[str | None, Query(alias="range.end")] = None,
    limit: Annotated[
        int | None,
        page_limit(MAX_LIMIT),
        Query(
            alias="pagination.limit",
            description=f"page size, 1 to {MAX_LIMIT}; 0 is the same as none",
        ),
    ] = None,
    offset: Annotated[
        int | None, strict_int(0, _BIG), Query(alias="pagination.offset", ge=0)
    ] = None,
) -> JSONResponse:
    command = ListHistoricalPrices(
        actor=actor(request, who),
        market=market,
        increment=increment,
        max_data_points=max_data_points,
        begin=begin,
        end=end,
        limit=limit,
        offset=offset,
    )
    return JSONResponse(await run(request, command))
