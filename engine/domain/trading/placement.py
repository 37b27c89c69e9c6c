"""Placing an order: every rule of the interface checked, the hold taken, the order
carried forward (sandex.engine.domain.trading.execution) unless a submission latency delays it.

What differs between order types (their amount fields, time in force, notional and hold
rules) is read from their row in sandex.engine.domain.trading.order_types.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from sandex.engine.domain import sandbox_triggers
from sandex.engine.domain.customers import active_profile
from sandex.engine.domain.identity.permissions import check_acting
from sandex.engine.domain.ledger import available, trading
from sandex.engine.domain.metadata import check_metadata
from sandex.engine.domain.trading.amount_texts import price_text, price_ticks, ticks_text
from sandex.engine.domain.trading.book import BUY, SELL
from sandex.engine.domain.trading.execution import submit
from sandex.engine.domain.trading.market import Market
from sandex.engine.domain.trading.matching import crosses
from sandex.engine.domain.trading.order import SIDES
from sandex.engine.domain.trading.order_types import (
    ALL_TIF,
    AMOUNT_FIELDS,
    AT_MID,
    AT_STOP,
    HOLD_AT_LIMIT,
    HOLD_QUOTE,
    IMMEDIATE_TIF,
    ORDER_TYPES,
    OrderType,
)
from sandex.engine.domain.trading.order_views import order_view
from sandex.engine.domain.trading.trading_state import Trading, live_trading, market_config
from sandex.engine.kernel.clock import format_time, from_millis, parse_time
from sandex.engine.kernel.commands import CreateOrder
from sandex.engine.kernel.errors import (
    AlreadyExists,
    ExceedPrecision,
    Forbidden,
    InsufficientFunds,
    Invalid,
    MarketConditions,
    NotionalTooLarge,
)
from sandex.engine.kernel.money import ZERO, decimals, format_normal, parse_amount
from sandex.engine.kernel.state import Ctx, State

MAX_AWAIT_MILLIS = 10_000
MIN_GTT = timedelta(seconds=10)
REF_REUSE_AFTER = timedelta(hours=24)
SMP_MAX = 36
TAKER_BAND = Decimal("0.15")
BASE_PLACES = 8
QUOTE_PLACES = 2
_MILLIS = re.compile(r"^[0-9]{13}$")


def _amount(text: str, field: str, asset: str, places: int) -> Decimal:
    value = parse_amount(text, field)
    # Most amounts are written with no more places than allowed, which the text shows;
    # only longer ones are normalized to find their significant places.
    dot = text.find(".")
    if (dot >= 0 and len(text) - dot - 1 > places) and decimals(value) > places:
        raise ExceedPrecision(asset, places, field)
    return value


def _check_fields(cmd: CreateOrder, row: OrderType) -> None:
    """Which amount fields the type needs on this side and which do not belong to it."""
    given = (
        cmd.price is not None,
        cmd.base_amount is not None,
        cmd.quote_amount is not None,
        cmd.stop_price is not None,
    )
    if row.shapes.get(cmd.side) != given:
        # what almost every order sends is its shape; anything else is told what is wrong
        _field_checks(cmd, row, given)


def _field_checks(cmd: CreateOrder, row: OrderType, given: tuple[bool, ...]) -> None:
    """The checks the row's shapes shortcut, one by one, each with its own words."""
    kind = row.name
    needed = row.fields.get(cmd.side)
    if needed is None:
        raise Invalid(f"side invalid: {kind} {row.side_refused}", field="side")
    for name in needed:
        if not given[AMOUNT_FIELDS.index(name)]:
            raise Invalid(f"{name} is required for {row.label(cmd.side)} orders", field=name)
    for name, present in zip(AMOUNT_FIELDS, given, strict=True):
        if present and name not in needed:
            raise Invalid(
                f"{name} invalid: not allowed for {row.label(cmd.side)} orders", field=name
            )


def _better(real: int | None, house: int | None, side: int) -> int | None:
    """`best_price` of a real best price and the house's best (`Market.ladder_top`)."""
    if real is None:
        return house
    if house is None:
        return real
    return max(real, house) if side == BUY else min(real, house)


def _mid(tr: Trading, mk: Market, step: int) -> Decimal:
    cfg = market_config(tr)
    bid = _better(mk.book.best_bid(), mk.ladder_top(cfg, tr.seed, step, BUY), BUY)
    ask = _better(mk.book.best_ask(), mk.ladder_top(cfg, tr.seed, step, SELL), SELL)
    if bid is None or ask is None:
        ref = mk.last_price(cfg, tr.seed, step)
        return mk.tick * ref
    return mk.tick * (bid + ask) / 2


def create_order(ctx: Ctx, cmd: CreateOrder) -> dict[str, Any]:
    """Decider of CreateOrder: checks in the documented order, then the hold and the
    order's first steps; answers the order's view."""
    tr = live_trading(ctx)
    cfg = tr.cfg
    assert cfg is not None
    state = ctx.state
    profile = active_profile(state, cmd.actor.customer_id, cmd.profile_id)
    if cmd.side not in SIDES:
        raise Invalid(f"side invalid: unknown side '{cmd.side}'", field="side")
    mk = tr.markets.get(cmd.market)
    if mk is None:
        raise Invalid(f"market invalid: unknown market '{cmd.market}'", field="market")
    row = ORDER_TYPES.get(cmd.type)
    if row is None:
        raise Invalid(f"type invalid: unknown order type '{cmd.type}'", field="type")
    _check_fields(cmd, row)
    kind = row.name
    tif = cmd.time_in_force or row.default_tif
    if tif not in ALL_TIF:
        raise Invalid(f"time_in_force invalid: unknown value '{tif}'", field="time_in_force")
    if tif not in row.tifs:
        raise Invalid(
            f"time_in_force invalid: {tif} is not allowed for {kind} orders", field="time_in_force"
        )
    expires: datetime | None = None
    if tif == "GTT":
        if cmd.expiration_date is None:
            raise Invalid(
                "expiration_date is required when time_in_force is GTT", field="expiration_date"
            )
        if not _MILLIS.match(cmd.expiration_date):
            raise Invalid(
                "expiration_date invalid: a unix time in milliseconds, 13 digits",
                field="expiration_date",
            )
        expires = from_millis(int(cmd.expiration_date))
        if expires - ctx.now <= MIN_GTT:
            raise Invalid(
                "expiration_date invalid: a GTT order must expire more than 10 seconds after it"
                f" is placed (now {ctx.now_text})",
                field="expiration_date",
            )
    elif cmd.expiration_date is not None:
        raise Invalid(
            f"expiration_date invalid: only allowed when time_in_force is GTT, not {tif}",
            field="expiration_date",
        )
    if (cmd.identity_id is None) != (cmd.identity_account_id is None):
        missing = "identity_account_id" if cmd.identity_account_id is None else "identity_id"
        raise Invalid("identity_id and identity_account_id must be sent together", field=missing)
    check_acting(
        state,
        cmd.actor.customer_id,
        cmd.identity_id,
        cmd.identity_account_id,
        action="trade",
        account_field="identity_account_id",
    )
    metadata = check_metadata(cmd.metadata) if cmd.metadata is not None else None
    if sandbox_triggers.holds_order(metadata) and (kind != "LIMIT" or tif in IMMEDIATE_TIF):
        raise Invalid(
            f"metadata invalid: '{sandbox_triggers.HOLD}' holds only a LIMIT order that rests"
            f" (time_in_force GTC or GTT), not {tif} {kind}",
            field="metadata",
        )
    if cmd.await_fill_millis is not None and not 0 <= cmd.await_fill_millis <= MAX_AWAIT_MILLIS:
        raise Invalid(
            f"await_fill_millis invalid: must be between 0 and {MAX_AWAIT_MILLIS}",
            field="await_fill_millis",
        )
    smp = cmd.self_match_prevention_id
    if smp is not None:
        if not smp or len(smp) > SMP_MAX:
            raise Invalid(
                f"self_match_prevention_id invalid: 1 to {SMP_MAX} characters",
                field="self_match_prevention_id",
            )
        if not cmd.may_prevent_self_match:
            raise Forbidden(
                "self_match_prevention_id needs the exchange:self_match_prevention permission,"
                " which this client lacks"
            )
    spec = mk.spec
    side = SIDES[cmd.side]
    ticks = price_ticks(cmd.price, "price", mk.tick) if cmd.price is not None else 0
    stop_ticks = (
        price_ticks(cmd.stop_price, "stop_price", mk.tick) if cmd.stop_price is not None else 0
    )
    base = (
        _amount(cmd.base_amount, "base_amount", spec.base, BASE_PLACES)
        if cmd.base_amount is not None
        else None
    )
    quote = (
        _amount(cmd.quote_amount, "quote_amount", spec.quote, QUOTE_PLACES)
        if cmd.quote_amount is not None
        else None
    )
    recipient = None
    if cmd.recipient_profile_id is not None:
        recipient = active_profile(
            state, cmd.actor.customer_id, cmd.recipient_profile_id, "recipient_profile_id"
        )["id"]
    if cmd.ref_id is not None:
        _check_ref(ctx.state, tr, profile["id"], cmd.ref_id, ctx.now)
    step = cfg.step_of(ctx.now)
    _check_notional(tr, mk, row, base, quote, ticks, stop_ticks, step)
    crossing = None  # whether a limit order crosses: asked once, here or when it takes
    if row.taker_band:
        crossing = crosses(mk.book, side, ticks, mk.ladder_top(cfg, tr.seed, step, 1 - side))
    if crossing:
        mid = _mid(tr, mk, step)
        if abs(mk.tick * ticks - mid) >= mid * TAKER_BAND:
            raise MarketConditions(
                f"price invalid: a taker order priced 15% or more away from the mid price"
                f" ({format_normal(mid)}) is refused",
                field="price",
            )
    # The hold (the type's rule for this side): a buy holds quote (price x amount, or
    # quote_amount) plus the most fee it can owe; a sell holds its base amount.
    hold = row.holds[cmd.side]
    if hold == HOLD_QUOTE:
        asset = spec.quote
        rate = cfg.taker_fee
        assert quote is not None
        needed = quote * (1 + rate)
    elif hold == HOLD_AT_LIMIT:
        asset = spec.quote
        assert base is not None
        rate = max(cfg.maker_fee, cfg.taker_fee)
        needed = mk.tick * ticks * base * (1 + rate)
    else:
        asset = spec.base
        rate = ZERO
        assert base is not None
        needed = base
    pid = profile["id"]
    funds = available(pid)
    have = state.ledger.balances.get((funds, asset), ZERO)  # `Ledger.balance`
    if needed > have:
        raise InsufficientFunds(pid, asset, format_normal(have), format_normal(needed))
    order_id = ctx.ids.uuid()
    latency = cfg.latency_us
    hold_text = format(needed, "f")  # decimal_text, as every amount below
    record: dict[str, Any] = {
        "id": order_id,
        "profile_id": pid,
        "customer_id": profile["customer_id"],
        "market": mk.name,
        "side": cmd.side,
        "type": kind,
        "time_in_force": tif,
        "status": "PENDING_SUBMISSION" if latency else "SUBMITTED",
        "hold": hold_text,
        "hold_asset": asset,
        "hold_rate": format(rate, "f"),
    }
    if ticks:
        record["price"] = price_text(mk.name, ticks)
    if base is not None:
        record["base_amount"] = format(base, "f")
    if quote is not None:
        record["quote_amount"] = format(quote, "f")
    if stop_ticks:
        record["stop_price"] = ticks_text(mk, stop_ticks)
    if expires is not None:
        record["expiration_date"] = format_time(expires)
    if cmd.ref_id is not None:
        record["ref_id"] = cmd.ref_id
    if metadata:
        record["metadata"] = metadata
    if cmd.identity_id is not None:
        record["identity_id"] = cmd.identity_id
        record["identity_account_id"] = cmd.identity_account_id
    if recipient is not None:
        record["recipient_profile_id"] = recipient
    if smp is not None:
        record["self_match_prevention_id"] = smp
    if latency:
        record["submit_at"] = format_time(ctx.now + timedelta(microseconds=latency))
    postings = [[funds, trading(pid), asset, hold_text]] if needed > ZERO else []
    ctx.emit("OrderPlaced", f"order-{order_id}", {"order": record, "postings": postings})
    order = tr.orders[order_id]
    if not latency:
        submit(ctx, tr, mk, order, step, crossing)
    return order_view(ctx.state, order)


def _check_ref(state: State, tr: Trading, profile_id: str, ref_id: str, now: datetime) -> None:
    existing_id = tr.refs.get((profile_id, ref_id))
    if existing_id is None:
        return
    existing = tr.orders[existing_id]
    if existing.closed_at is not None and now - parse_time(existing.closed_at) > REF_REUSE_AFTER:
        return
    raise AlreadyExists(f"order already exists with ref_id '{ref_id}'", order_view(state, existing))


def _check_notional(
    tr: Trading,
    mk: Market,
    row: OrderType,
    base: Decimal | None,
    quote: Decimal | None,
    ticks: int,
    stop_ticks: int,
    step: int,
) -> None:
    """The order's notional value (its quote amount, or its base amount at the price its
    type is valued at) against the market's maximum for its type."""
    spec = mk.spec
    kind = row.name
    limit = spec.max_market_notional if row.market_notional else spec.max_limit_notional
    if quote is not None:
        value = quote
    else:
        assert base is not None
        if row.notional_at == AT_STOP:
            value = base * mk.tick * stop_ticks
        elif row.notional_at == AT_MID:
            value = base * _mid(tr, mk, step)
        else:
            value = base * mk.tick * ticks
    if value > limit:
        shown = format(value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP), "f")
        raise NotionalTooLarge(
            f"notional value too large for {mk.name} {kind} order: order had notional value"
            f" {shown}, but maximum allowed notional value is {format_normal(limit)}",
            meta={
                "market": mk.name,
                "order_type": kind,
                "order_notional_value": shown,
                "max_notional_value": format_normal(limit),
            },
        )
