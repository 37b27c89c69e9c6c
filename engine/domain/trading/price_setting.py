"""Setting a market's reference price by request (`MarketPriceSet`): the path is
anchored at the new price, the house takes the resting orders it now crosses (at their
prices, or on a gap at the ladder's: `SetMarketPrice.gap`), and the
market's watch is armed again."""

from __future__ import annotations

from typing import Any

from sandex.engine.domain.trading.amount_texts import price_ticks, ticks_text
from sandex.engine.domain.trading.execution import house_crossing
from sandex.engine.domain.trading.market_views import price_view
from sandex.engine.domain.trading.market_watch import arm
from sandex.engine.domain.trading.trading_state import live_trading, market_config
from sandex.engine.kernel.commands import SetMarketPrice
from sandex.engine.kernel.errors import NotFound
from sandex.engine.kernel.state import Ctx


def set_market_price(ctx: Ctx, cmd: SetMarketPrice) -> dict[str, Any] | None:
    """Decider of SetMarketPrice: answers the price view after the crossing (unless the
    command asks for no answer)."""
    tr = live_trading(ctx)
    mk = tr.markets.get(cmd.market)
    if mk is None:
        raise NotFound(f"market not found: {cmd.market}")
    ticks = price_ticks(cmd.price, "price", mk.tick)
    cfg = market_config(tr)
    step = cfg.step_of(ctx.now)
    data: dict[str, Any] = {"market": mk.name, "price": ticks_text(mk, ticks), "step": step}
    if cmd.gap:
        data["gap"] = True
    ctx.emit("MarketPriceSet", f"market-{mk.name}", data)
    house_crossing(ctx, tr, mk, step, jump=cmd.gap)
    arm(ctx, tr, mk, step + 1, force=True)
    return price_view(ctx, tr, mk, step) if cmd.answer else None
