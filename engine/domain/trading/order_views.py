"""An order and an execution as the API shows them, and the cache of the last two
order views (each state's own)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sandex.engine.domain.trading.amount_texts import (
    gross_text,
    order_vwap_text,
    price_text,
    units_text,
)
from sandex.engine.domain.trading.order import SIDE_NAMES, Order
from sandex.engine.kernel.money import MARKETS, format_normal
from sandex.engine.kernel.state import State

CENT = Decimal("0.01")
UNFILLED = "0.00000000"  # `units_text(0)`, and `order_vwap_text` of nothing filled


def order_view(state: State, o: Order) -> dict[str, Any]:
    """The order as the API shows it (a dict of the caller's own); `o` is an order of
    `state`."""
    return dict(shown_view(state, o))


def shown_view(state: State, o: Order) -> dict[str, Any]:
    """`order_view` for a reader that only serializes it (the event feed, the read
    model): the view shared with the cache, without the copy. Never to be changed.

    The cache (`state.caches.views`) holds the last two views built and what they were
    built from, the latest first. A decision shows an order to the feed after each of its
    events and then answers it: the next view of the same order differs only in the
    fields an event changes, or not at all. Two, because a trade between two orders
    shows the taker and the maker in turn. Each entry is one tuple, swapped whole."""
    views = state.caches.views
    last = views[0]
    if last is None or last[0] is not o:
        last = views[1]
        if last is not None and last[0] is not o:
            last = None
        views[1] = views[0]  # the entry of `o` goes first, the other second
    status, modified_at, filled, spent, triggered = (
        o.status,
        o.modified_at,
        o.filled,
        o.spent,
        o.triggered,
    )
    view: dict[str, Any]
    if last is None:
        view = _build_view(o)
    else:
        _, l_status, l_modified, l_filled, l_spent, l_triggered, view = last
        if (
            l_status == status
            and l_modified == modified_at
            and l_filled == filled
            and l_spent == spent
            and l_triggered == triggered
        ):
            views[0] = last
            return view
        # what only events change; the rest of a view is the order as placed
        view = dict(view)
        view["status"] = status
        view["modified_at"] = modified_at
        if l_filled != filled or l_spent != spent:
            view["amount_filled"] = units_text(filled)
            view["volume_weighted_average_price"] = order_vwap_text(o.market, spent, filled)
        view["is_triggered"] = triggered
    views[0] = (o, status, modified_at, filled, spent, triggered, view)
    return view


def _build_view(o: Order) -> dict[str, Any]:
    market = o.market
    filled = o.filled
    # most views are built at placement, before any fill: their texts of 0 are known
    filled_text = units_text(filled) if filled else UNFILLED
    vwap = order_vwap_text(market, o.spent, filled) if filled else UNFILLED
    if (
        o.ref_id is None
        and o.expires is None
        and o.identity_id is None
        and not o.stop_ticks
        and o.recipient is None
    ):
        # none of the optional fields (most orders): one dict display, in the same order
        return {
            "id": o.id,
            "profile_id": o.profile_id,
            "status": o.status,
            "side": SIDE_NAMES[o.side],
            "market": market,
            "type": o.type,
            "base_amount": units_text(o.qty) if o.qty else "0",
            "price": price_text(market, o.ticks) if o.ticks else "0",
            "quote_amount": format(o.quote.quantize(CENT), "f") if o.quote is not None else "",
            "metadata": o.metadata or {},
            "created_at": o.created_at,
            "modified_at": o.modified_at,
            "amount_filled": filled_text,
            "volume_weighted_average_price": vwap,
            "time_in_force": o.tif,
            "is_triggered": o.triggered,
        }
    view: dict[str, Any] = {"id": o.id, "profile_id": o.profile_id}
    if o.ref_id is not None:
        view["ref_id"] = o.ref_id
    view["status"] = o.status
    view["side"] = SIDE_NAMES[o.side]
    view["market"] = market
    view["type"] = o.type
    view["base_amount"] = units_text(o.qty) if o.qty else "0"
    view["price"] = price_text(market, o.ticks) if o.ticks else "0"
    view["quote_amount"] = format(o.quote.quantize(CENT), "f") if o.quote is not None else ""
    view["metadata"] = o.metadata or {}
    view["created_at"] = o.created_at
    view["modified_at"] = o.modified_at
    view["amount_filled"] = filled_text
    view["volume_weighted_average_price"] = vwap
    view["time_in_force"] = o.tif
    if o.expires is not None:
        view["expiration_date"] = o.expires
    if o.identity_id is not None:
        view["identity_id"] = o.identity_id
        view["identity_account_id"] = o.identity_account_id
    if o.stop_ticks:
        view["stop_price"] = price_text(market, o.stop_ticks)
    if o.recipient is not None:
        view["recipient_profile_id"] = o.recipient
    view["is_triggered"] = o.triggered
    return view


def execution_view(
    execution_id: int, record: tuple[Order, str, int, int, Decimal, str]
) -> dict[str, Any]:
    """An execution as the API shows it, from its record in `Trading.executions`."""
    o, at, ticks, units, commission, _ = record
    spec = MARKETS[o.market]
    view = {
        "execution_id": str(execution_id),
        "order_id": o.id,
        "executed_at": at,
        "market": o.market,
        "side": SIDE_NAMES[o.side],
        "amount": units_text(units),
        "price": price_text(o.market, ticks),
        "commission": format_normal(commission),
        "commission_asset": spec.quote,
        "rebate": "0",
        "rebate_asset": spec.quote,
        "gross_trade_amount": gross_text(o.market, ticks, units),
    }
    if o.identity_account_id is not None:
        view["account_id"] = o.identity_account_id
    return view
