"""Trading: orders, their types, placement and execution, the book, matching, markets.

One module per concept: the order (`order`), its types' rules (`order_types`), texts of
amounts (`amount_texts`), views (`order_views`), placement, cancellation, release (of a held order), execution,
the deadlines (`order_timers`), a market and its reference price path, synthetic ladder
and watch, market data (`market_views`), the appliers, invariants and read-model rows.
This package is their public face; its `REGISTRATION` declares the read models, the
invariant and the USD price source (importing it registers nothing).
"""

from sandex.engine.domain.trading import order_rows, trading_invariants, usd_prices
from sandex.engine.domain.trading.appliers import APPLIERS
from sandex.engine.domain.trading.cancellation import cancel_order
from sandex.engine.domain.trading.ladder import NO_ASK, NO_BID
from sandex.engine.domain.trading.market_views import read_market
from sandex.engine.domain.trading.order import Order
from sandex.engine.domain.trading.order_timers import TIMERS
from sandex.engine.domain.trading.order_types import ORDER_TYPES, OrderType
from sandex.engine.domain.trading.order_views import execution_view, order_view, shown_view
from sandex.engine.domain.trading.placement import create_order
from sandex.engine.domain.trading.price_setting import set_market_price
from sandex.engine.domain.trading.release import release_order
from sandex.engine.domain.trading.trading_state import Trading, trading_state
from sandex.engine.kernel.commands import (
    CancelOrder,
    CreateOrder,
    ReadMarket,
    ReleaseOrder,
    SetMarketPrice,
)
from sandex.engine.kernel.registry import Registration

DECIDERS = {
    CreateOrder: create_order,
    CancelOrder: cancel_order,
    ReleaseOrder: release_order,
    SetMarketPrice: set_market_price,
    ReadMarket: read_market,
}

REGISTRATION = Registration(
    DECIDERS,
    APPLIERS,
    TIMERS,
    tables=order_rows.TABLES,
    checks=(trading_invariants.check_trading,),
    price_sources=(usd_prices.usd_price,),
)

__all__ = [
    "APPLIERS",
    "DECIDERS",
    "NO_ASK",
    "NO_BID",
    "ORDER_TYPES",
    "REGISTRATION",
    "TIMERS",
    "Order",
    "OrderType",
    "Trading",
    "execution_view",
    "order_rows",
    "order_view",
    "shown_view",
    "trading_state",
    "trading_invariants",
    "usd_prices",
]
