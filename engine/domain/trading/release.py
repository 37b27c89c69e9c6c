"""Releasing an order held by its `sandbox:hold` metadata (sandex.engine.domain.sandbox_triggers):
it has rested OPEN outside the book, where neither the house's ladder nor another order
could trade with it; released, it meets the market as an order submitted at that moment
would (the engine's time, the ladder and book then)."""

from __future__ import annotations

from typing import Any

from sandex.engine.domain import sandbox_triggers
from sandex.engine.domain.trading.execution import carry_forward
from sandex.engine.domain.trading.order_views import order_view
from sandex.engine.domain.trading.trading_state import live_trading, market_config
from sandex.engine.kernel.commands import ReleaseOrder
from sandex.engine.kernel.errors import Conflict, NotFound
from sandex.engine.kernel.state import Ctx


def release_order(ctx: Ctx, cmd: ReleaseOrder) -> dict[str, Any]:
    """Decider of ReleaseOrder: a held order of the caller's own; answers its view after
    it met the market (an `OrderReleased` event, then its trades or its opening)."""
    tr = live_trading(ctx)
    o = tr.orders.get(cmd.order_id)
    if o is None or o.customer_id != cmd.actor.customer_id:
        raise NotFound(f"order not found with id {cmd.order_id}")
    if o.id not in tr.held:
        raise Conflict(
            f"order {o.id} is {o.status} and not held: only an OPEN order placed with the"
            f" metadata value '{sandbox_triggers.HOLD}' and not yet released can be released",
            meta={"status": o.status},
        )
    ctx.emit("OrderReleased", f"order-{o.id}", {"order_id": o.id})
    mk = tr.markets[o.market]
    carry_forward(ctx, tr, mk, o, market_config(tr).step_of(ctx.now))
    return order_view(ctx.state, o)
