"""Plain definitions of what the order path's shortcuts compute: exact Decimal and
Fraction arithmetic and `format(…, "f")`, slow and obviously right, for the
equivalence tests to hold the fast code to."""

from __future__ import annotations

import math
from decimal import Context, Decimal
from fractions import Fraction
from typing import Any

from sandex.engine.kernel.money import MARKETS

# Enough digits for any product these tests make: Decimal arithmetic here is exact.
EXACT = Context(prec=1000)
CENT = Decimal("0.01")


def units_text(units: int) -> str:
    """A base amount in units of 1e-8, with its 8 decimals."""
    return format(Decimal(f"{units}E-8"), "f")


def price_text(tick: Decimal, ticks: int) -> str:
    """A price of `ticks` ticks, with the places of the tick size."""
    return format(EXACT.multiply(tick, Decimal(ticks)), "f")


def vwap_text(tick: Decimal, spent: int, filled: int) -> str:
    """spent (in ticks x units) x tick / filled units, rounded half up to 8 places;
    zero when nothing was filled."""
    if filled == 0:
        return "0.00000000"
    exact = Fraction(spent) * Fraction(tick) / filled
    scaled = exact * 10**8
    magnitude = math.floor(abs(scaled) + Fraction(1, 2))
    q = magnitude if scaled >= 0 else -magnitude
    return format(Decimal(f"{q}E-8"), "f")


def order_view(o: Any) -> dict[str, Any]:
    """An order as the API shows it, field by field in the documented order, the
    optional fields only when the order has them."""
    tick = MARKETS[o.market].tick
    view: dict[str, Any] = {"id": o.id, "profile_id": o.profile_id}
    if o.ref_id is not None:
        view["ref_id"] = o.ref_id
    view["status"] = o.status
    view["side"] = ("BUY", "SELL")[o.side]
    view["market"] = o.market
    view["type"] = o.type
    view["base_amount"] = units_text(o.qty) if o.qty else "0"
    view["price"] = price_text(tick, o.ticks) if o.ticks else "0"
    view["quote_amount"] = format(o.quote.quantize(CENT), "f") if o.quote is not None else ""
    view["metadata"] = o.metadata or {}
    view["created_at"] = o.created_at
    view["modified_at"] = o.modified_at
    view["amount_filled"] = units_text(o.filled)
    view["volume_weighted_average_price"] = vwap_text(tick, o.spent, o.filled)
    view["time_in_force"] = o.tif
    if o.expires is not None:
        view["expiration_date"] = o.expires
    if o.identity_id is not None:
        view["identity_id"] = o.identity_id
        view["identity_account_id"] = o.identity_account_id
    if o.stop_ticks:
        view["stop_price"] = price_text(tick, o.stop_ticks)
    if o.recipient is not None:
        view["recipient_profile_id"] = o.recipient
    view["is_triggered"] = o.triggered
    return view


def transfer_view(record: dict[str, Any]) -> dict[str, Any]:
    """A transfer as the API shows it: every field of the record but its nulls and its
    log position (`seq`), in the record's order."""
    return {k: v for k, v in record.items() if v is not None and k != "seq"}
