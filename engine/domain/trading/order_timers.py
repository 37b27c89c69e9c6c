"""The trading deadlines: an order's submission latency over, a GTT order's expiry, a
market's watch (sandex.engine.domain.trading.market_watch) due."""

from __future__ import annotations

from sandex.engine.domain.trading.execution import close_order, house_crossing, submit
from sandex.engine.domain.trading.market_watch import arm
from sandex.engine.domain.trading.trading_state import live_trading, market_config
from sandex.engine.kernel.state import Ctx


def submit_due(ctx: Ctx, order_id: str) -> None:
    """Timer: a PENDING_SUBMISSION order reaches the market."""
    tr = live_trading(ctx)
    o = tr.orders.get(order_id)
    if o is None or o.status != "PENDING_SUBMISSION":
        return
    ctx.emit("OrderSubmitted", f"order-{o.id}", {"order_id": o.id})
    mk = tr.markets[o.market]
    submit(ctx, tr, mk, o, market_config(tr).step_of(ctx.now))


def expire_due(ctx: Ctx, order_id: str) -> None:
    """Timer: a GTT order still open at its expiration is cancelled at that time."""
    tr = live_trading(ctx)
    o = tr.orders.get(order_id)
    if o is None or not o.open:
        return
    close_order(ctx, o, "OrderCancelled", "EXPIRED")


def watch_due(ctx: Ctx, key: str) -> None:
    """Timer: the path may cross this market's resting interest now."""
    tr = live_trading(ctx)
    name, _, at = key.rpartition("@")
    mk = tr.markets[name]
    if mk.armed_step != int(at):
        return
    mk.armed_step = None
    step = market_config(tr).step_of(ctx.now)
    house_crossing(ctx, tr, mk, step)
    arm(ctx, tr, mk, step + 1, force=True)


TIMERS = {
    "order_submit": submit_due,
    "order_expire": expire_due,
    "market_watch": watch_due,
}
