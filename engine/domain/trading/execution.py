"""Carrying an order forward: a submitted order waits as a stop or takes liquidity, its
trades are recorded with their fees and postings, the stops they trigger follow, and
the house takes resting orders its moving ladder crosses.

How an order takes liquidity (at any price, up to its price, never) and whether it
waits for a stop is its type's rule (sandex.engine.domain.trading.order_types).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sandex.engine.domain import sandbox_triggers
from sandex.engine.domain.ledger import FEES, HOUSE, available, trading
from sandex.engine.domain.trading.amount_texts import UNIT, decimal_text, price_text, units_text
from sandex.engine.domain.trading.book import BUY, SELL
from sandex.engine.domain.trading.market import Market
from sandex.engine.domain.trading.market_watch import arm
from sandex.engine.domain.trading.matching import crosses, house_plan, plan
from sandex.engine.domain.trading.order import Order
from sandex.engine.domain.trading.order_types import (
    IMMEDIATE_TIF,
    NEVER_TAKES,
    ORDER_TYPES,
    TAKES_AT_ANY_PRICE,
)
from sandex.engine.domain.trading.trading_state import Trading, market_config
from sandex.engine.kernel.money import ZERO
from sandex.engine.kernel.state import Ctx


def carry_forward(
    ctx: Ctx, tr: Trading, mk: Market, order: Order, step: int, crossing: bool | None = None
) -> None:
    """A SUBMITTED order: wait as a stop, or take liquidity; then the cascade of stops
    its trades may trigger, and the market's watch. `crossing`: whether the order, a
    limit order that is no stop, crosses the book or the house's ladder, when its
    placement has just asked (nothing placing it changes either: not asked twice)."""
    cfg = tr.cfg
    assert cfg is not None
    if ORDER_TYPES[order.type].stop and not order.triggered:
        if mk.last_price(cfg, tr.seed, step) <= order.stop_ticks:
            ctx.emit("OrderTriggered", f"order-{order.id}", {"order_id": order.id})
            _take(ctx, tr, mk, order, step)
        else:
            ctx.emit("OrderOpened", f"order-{order.id}", {"order_id": order.id})
    else:
        _take(ctx, tr, mk, order, step, crossing)
    if mk.stops:
        _cascade(ctx, tr, mk, step)
    arm(ctx, tr, mk, step + 1)


def submit(
    ctx: Ctx, tr: Trading, mk: Market, order: Order, step: int, crossing: bool | None = None
) -> None:
    """An order reaching the market: REJECTED, or OPEN but held out of the book, when its
    metadata asks for it (sandex.engine.domain.sandbox_triggers), else carried forward."""
    if order.metadata:
        reason = sandbox_triggers.order_rejection(order.metadata)
        if reason is not None:
            close_order(ctx, order, "OrderRejected", reason)
            return
        if sandbox_triggers.holds_order(order.metadata):
            ctx.emit("OrderOpened", f"order-{order.id}", {"order_id": order.id, "held": True})
            return
    carry_forward(ctx, tr, mk, order, step, crossing)


def close_order(ctx: Ctx, o: Order, kind: str, reason: str | None = None) -> None:
    """Close `o` with event `kind` (filled, cancelled, rejected); what it still holds goes
    back to available."""
    data: dict[str, Any] = {"order_id": o.id}
    if reason is not None:
        data["reason"] = reason
    if o.hold > ZERO:
        amount = decimal_text(o.hold)
        data["release"] = amount
        data["postings"] = [[trading(o.profile_id), available(o.profile_id), o.hold_asset, amount]]
    ctx.emit(kind, f"order-{o.id}", data)


def _take(
    ctx: Ctx, tr: Trading, mk: Market, o: Order, step: int, crossing: bool | None = None
) -> None:
    """`o` meets the book and the house's ladder as the taker (`crossing`: see
    `carry_forward`)."""
    cfg = tr.cfg
    assert cfg is not None
    opposite = SELL if o.side == BUY else BUY
    taking = ORDER_TYPES[o.type].taking
    acts_as_market = taking == TAKES_AT_ANY_PRICE
    if taking == NEVER_TAKES:
        if crosses(mk.book, o.side, o.ticks, mk.ladder_top(cfg, tr.seed, step, opposite)):
            close_order(ctx, o, "OrderRejected", "POST_ONLY_WOULD_TAKE_LIQUIDITY")
        elif o.tif in IMMEDIATE_TIF:
            close_order(ctx, o, "OrderCancelled", "NOT_FILLED_IMMEDIATELY")
        else:
            ctx.emit("OrderOpened", f"order-{o.id}", {"order_id": o.id})
        return
    if crossing is None and not acts_as_market:
        crossing = crosses(mk.book, o.side, o.ticks, mk.ladder_top(cfg, tr.seed, step, opposite))
    if not acts_as_market and not crossing:
        if o.tif in IMMEDIATE_TIF:
            close_order(ctx, o, "OrderCancelled", "NOT_FILLED_IMMEDIATELY")
        else:
            ctx.emit("OrderOpened", f"order-{o.id}", {"order_id": o.id})
        return
    ladder = mk.ladder_side(cfg, tr.seed, step, opposite)
    if o.quote is not None:
        p = plan(mk.book, o.side, None, None, o.budget - o.spent, ladder, o.customer_id, o.smp_id)
    else:
        left = o.qty - o.filled
        limit = None if acts_as_market else o.ticks
        p = plan(mk.book, o.side, limit, left, None, ladder, o.customer_id, o.smp_id)
        if o.tif == "FOK" and p.filled < left:
            close_order(ctx, o, "OrderCancelled", "FILL_OR_KILL_NOT_FILLED")
            return
    for resting, ticks, units in p.steps:
        maker: Order | None = resting  # type: ignore[assignment]
        if maker is not None and units == 0:
            close_order(ctx, maker, "OrderCancelled", "SELF_MATCH_PREVENTED")
            continue
        if o.side == BUY:
            _trade(ctx, tr, mk, step, ticks, units, o, maker, BUY)
        else:
            _trade(ctx, tr, mk, step, ticks, units, maker, o, SELL)
        if maker is not None and maker.filled == maker.qty:
            close_order(ctx, maker, "OrderFilled")
    if o.quote is None:
        complete = o.filled == o.qty
    else:
        # What a market buy could not spend is its remainder: below the smallest market
        # buy (the quote's minimum) or the price of one more base unit where it last
        # traded, nothing more could be ordered, and the order is FILLED; a remainder
        # that could buy more, left when the liquidity ran out, is an IOC remainder.
        left = o.budget - o.spent
        traded = [ticks for _, ticks, units in p.steps if units]
        dust = left * mk.unit < mk.spec.min_quote or (bool(traded) and left < traded[-1])
        complete = p.exhausted or (o.filled > 0 and dust)
    if complete:
        close_order(ctx, o, "OrderFilled")
    elif acts_as_market or o.tif in IMMEDIATE_TIF:
        close_order(ctx, o, "OrderCancelled", "IMMEDIATE_OR_CANCEL_REMAINDER")
    else:
        ctx.emit("OrderOpened", f"order-{o.id}", {"order_id": o.id})


def _trade(
    ctx: Ctx,
    tr: Trading,
    mk: Market,
    step: int,
    ticks: int,
    units: int,
    buy: Order | None,
    sell: Order | None,
    aggressor: int | None,
    house: list[list[int]] | None = None,
) -> None:
    """Record one trade at `ticks` for `units` between two orders, or an order and the
    house (None); `aggressor` is the side that took liquidity (None: the house did, and
    `house` lists the ladder levels it used, which may be better than `ticks`)."""
    cfg = tr.cfg
    assert cfg is not None
    spec = mk.spec
    notional = Decimal(ticks * units) * mk.unit
    base_amount = Decimal(units) * UNIT
    postings: list[list[str]] = []
    amount_text = units_text(units)  # the text of base_amount
    data: dict[str, Any] = {
        "market": mk.name,
        "step": step,
        "trade": tr.next_trade,
        "price": price_text(mk.name, ticks),
        "amount": amount_text,
    }
    execution = tr.next_execution
    fee_buy = fee_sell = ZERO
    if buy is not None:
        # never more than the rate its hold covers (the schedule may change while it rests)
        rate = cfg.taker_fee if aggressor == BUY else cfg.maker_fee
        fee_buy = notional * min(rate, buy.hold_rate)
        if buy.quote is not None:
            held = notional + fee_buy
        else:
            held = mk.tick * buy.ticks * base_amount * (1 + buy.hold_rate)
        data["buy"] = {
            "order_id": buy.id,
            "execution_id": execution,
            "commission": format(fee_buy, "f"),
            "held": format(held, "f"),
            "liquidity": "TAKER" if aggressor == BUY else "MAKER",
        }
        execution += 1
    if sell is not None:
        fee_sell = notional * (cfg.taker_fee if aggressor == SELL else cfg.maker_fee)
        data["sell"] = {
            "order_id": sell.id,
            "execution_id": execution,
            "commission": format(fee_sell, "f"),
            "held": amount_text,
            "liquidity": "TAKER" if aggressor == SELL else "MAKER",
        }
    payer = trading(buy.profile_id) if buy is not None else HOUSE
    postings.append(
        [
            trading(sell.profile_id) if sell is not None else HOUSE,
            available(buy.recipient or buy.profile_id) if buy is not None else HOUSE,
            spec.base,
            amount_text,
        ]
    )
    proceeds = notional - fee_sell
    if proceeds > ZERO:
        seller = available(sell.recipient or sell.profile_id) if sell is not None else HOUSE
        postings.append([payer, seller, spec.quote, format(proceeds, "f")])
    fees = fee_buy + fee_sell
    if fees > ZERO:
        postings.append([payer, FEES, spec.quote, format(fees, "f")])
    if buy is not None:
        release = held - notional - fee_buy  # `held` as its text says: format is exact
        if release > ZERO:
            postings.append([payer, available(buy.profile_id), spec.quote, format(release, "f")])
    if buy is None or sell is None:
        data["house"] = house or [[ticks, units]]
    data["postings"] = postings
    stream = buy if aggressor == BUY else sell if aggressor == SELL else buy or sell
    assert stream is not None
    ctx.emit("TradeExecuted", f"order-{stream.id}", data)


def _cascade(ctx: Ctx, tr: Trading, mk: Market, step: int) -> None:
    """Trigger every stop whose condition the last price now meets, highest stop first;
    each triggered stop trades, which may move the last price and trigger more."""
    cfg = tr.cfg
    assert cfg is not None
    while mk.stops:
        last = mk.last_price(cfg, tr.seed, step)
        due = [o for o in mk.stops.values() if o.stop_ticks >= last]
        if not due:
            return
        o = max(due, key=lambda s: (s.stop_ticks, -s.seq))
        ctx.emit("OrderTriggered", f"order-{o.id}", {"order_id": o.id})
        _take(ctx, tr, mk, o, step)


def house_crossing(ctx: Ctx, tr: Trading, mk: Market, step: int, jump: bool = False) -> None:
    """The house takes the resting orders its ladder crosses at `step`.

    As the path moves step by step the house meets an order at the order's price. A
    `jump` (a price set by request: a gap) brings the house's ladder past the order at
    once, and the order trades at each ladder level it takes, its own price or better,
    as a resting order does in an opening auction."""
    cfg = market_config(tr)
    for side in (BUY, SELL):
        best = mk.book.best_bid() if side == BUY else mk.book.best_ask()
        if best is None:
            continue
        top = mk.ladder_top(cfg, tr.seed, step, SELL if side == BUY else BUY)
        if top is None or (top > best if side == BUY else top < best):
            continue
        ladder = mk.ladder_side(cfg, tr.seed, step, SELL if side == BUY else BUY)
        for order, units, taken in house_plan(mk.book, side, ladder):
            o: Order = order  # type: ignore[assignment]
            buy, sell = (o, None) if side == BUY else (None, o)
            if not jump:
                _trade(ctx, tr, mk, step, o.ticks, units, buy, sell, None, taken)
            else:
                for ticks, part in taken:
                    _trade(ctx, tr, mk, step, ticks, part, buy, sell, None, [[ticks, part]])
            if o.filled == o.qty:
                close_order(ctx, o, "OrderFilled")
    _cascade(ctx, tr, mk, step)
