"""The trading state: every order, market and execution, as one projection of the log
inside `State.ext["trading"]`."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from sandex.engine.config.settings import Settings
from sandex.engine.domain.trading.market import Market, MarketConfig, new_markets
from sandex.engine.domain.trading.order import Order
from sandex.engine.kernel.state import Ctx, State


@dataclass
class Trading:
    """The trading state inside `State.ext["trading"]`."""

    orders: dict[str, Order] = field(default_factory=dict)
    markets: dict[str, Market] = field(default_factory=new_markets)
    # (profile_id, ref_id) -> order id
    refs: dict[tuple[str, str], str] = field(default_factory=dict)
    # execution id -> (order, executed_at, ticks, units, commission, liquidity)
    executions: dict[int, tuple[Order, str, int, int, Decimal, str]] = field(default_factory=dict)
    # ids of the OPEN orders held out of the book by `sandbox:hold` until released
    held: set[str] = field(default_factory=set)
    next_execution: int = 1
    next_trade: int = 1
    cfg: MarketConfig | None = None
    settings: Settings | None = None
    seed: int = 0


def trading_state(state: State) -> Trading:
    """The trading state of `state`, made empty on first use."""
    tr = state.ext.get("trading")
    if tr is None:
        tr = state.ext["trading"] = Trading()
    return tr  # type: ignore[no-any-return]


def live_trading(ctx: Ctx) -> Trading:
    """The trading state for a decision, its market settings made from the decision's."""
    tr = ctx.state.ext.get("trading")
    if tr is None:
        tr = trading_state(ctx.state)
    if tr.settings is not ctx.settings:
        tr.cfg = MarketConfig.of(ctx.settings)
        tr.settings = ctx.settings
        tr.seed = ctx.ids.seed
    return tr


def trading_for(state: State, settings: Settings, seed: int) -> Trading:
    """The trading state of `state` with its market settings made from `settings`: for a
    reader on the writer's thread outside a decision (the market data feed)."""
    tr = trading_state(state)
    if tr.settings is not settings:
        tr.cfg = MarketConfig.of(settings)
        tr.settings = settings
        tr.seed = seed
    return tr


def market_config(tr: Trading) -> MarketConfig:
    """The market settings of a state a decision has seen (`live_trading`)."""
    assert tr.cfg is not None
    return tr.cfg
