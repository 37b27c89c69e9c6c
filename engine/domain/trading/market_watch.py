"""A market's watch: one timer per market, at the first step where the moving ladder or
last price meets its resting interest (resting orders, untriggered stops).

Between commands nothing decides, so the house's ladder crossing a resting order or
the last price falling to a stop would go unseen; the watch is the deadline at which
it happens (sandex.engine.domain.trading.order_timers handles it when due).
"""

from __future__ import annotations

from sandex.engine.domain.trading.market import Market
from sandex.engine.domain.trading.trading_state import Trading, market_config
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.state import Ctx, State


def arm(ctx: Ctx, tr: Trading, mk: Market, step: int, force: bool = False) -> None:
    """Schedule the market's watch at the first step at or after `step` where the moving
    ladder or last price meets resting interest (or where the scan ends)."""
    if not mk.has_interest():
        return
    thresholds = mk.thresholds()
    armed = mk.armed_step
    if armed is not None and not force:
        w = mk.watched
        if thresholds[0] <= w[0] and thresholds[1] >= w[1] and thresholds[2] <= w[2]:
            return
    cfg = market_config(tr)
    window = mk.window_at(cfg, tr.seed, step)
    k = window.first_cross(step, *thresholds)
    if k is None:
        if cfg.sigma_step == 0.0:
            # A still path meets later only what it meets now; a price set moves it and
            # crosses and re-arms itself, so a watch at the scan's end would fire for
            # nothing (a backtest would advance its clock for each one).
            return
        k = window.end
    mk.watched = thresholds
    if armed is not None and not force and armed <= k:
        return
    mk.armed_step = k
    ctx.state.timers.add(cfg.time_of(k), "market_watch", f"{mk.name}@{k}")


def arm_after_replay(state: State, mk: Market, at: str) -> None:
    """While the log is replayed nothing decides (live, the decision arms the watch), so
    the watch is armed once per market at its first resting interest; its first firing
    after the replay scans the path properly."""
    if mk.armed_step is None:
        mk.armed_step = -1
        state.timers.add(parse_time(at), "market_watch", f"{mk.name}@-1")
