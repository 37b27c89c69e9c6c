"""Cancelling an order by request: an open order of the caller's profile is closed and
its hold released."""

from __future__ import annotations

from typing import Any

from sandex.engine.domain.customers import resolve_profile
from sandex.engine.domain.trading.execution import close_order
from sandex.engine.domain.trading.trading_state import live_trading
from sandex.engine.kernel.commands import CancelOrder
from sandex.engine.kernel.errors import Forbidden, NotFound
from sandex.engine.kernel.state import Ctx


def cancel_order(ctx: Ctx, cmd: CancelOrder) -> dict[str, Any]:
    """Decider of CancelOrder: only an open order of the caller's profile."""
    tr = live_trading(ctx)
    profile = resolve_profile(ctx.state, cmd.actor.customer_id, cmd.profile_id)
    o = tr.orders.get(cmd.order_id)
    if o is None or o.profile_id != profile["id"]:
        raise NotFound(f"order not found with id {cmd.order_id}")
    if not o.open:
        raise Forbidden("order is not in cancellable state")
    close_order(ctx, o, "OrderCancelled", "CANCELLED_BY_USER")
    return {}
