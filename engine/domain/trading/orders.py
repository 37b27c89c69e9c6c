"""Orders: creation with every rule of the interface, matching, stops, expiry, cancel.

The lifecycle is a stream of events per order (`order-<id>`):

    OrderPlaced     the order and its hold (available -> trading); status
                    PENDING_SUBMISSION when a submission latency is set, else SUBMITTED
    OrderSubmitted  PENDING_SUBMISSION -> SUBMITTED, by the scheduler
    OrderOpened     it rests in the book (or, a stop, waits for its trigger): OPEN
    OrderTriggered  a stop's last-price condition was met (is_triggered)
    TradeExecuted   one trade: both sides' executions, fees and postings; a side may
                    be the house (synthetic liquidity)
    OrderFilled / OrderCancelled / OrderRejected   closed; what is left of the hold
                    goes back to available
    MarketPriceSet  (stream `market-<name>`) the reference price moved by request

Books, order states, the house's consumed liquidity and market statistics are all
projections of these events. Decisions read the state, validate, then emit; every
amount in the hot path is an integer (ticks, base units of 1e-8, notional units of
tick x base unit) and becomes a `Decimal` only at the edges (events, views, ledger).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, localcontext
from sys import intern
from typing import Any

import orjson

from engine.config.settings import Settings
from engine.domain.customers import resolve_profile
from engine.domain.ledger import FEES, HOUSE, available, trading
from engine.domain.metadata import check_metadata
from engine.domain.trading.book import BUY, SELL
from engine.domain.trading.market import NO_ASK, NO_BID, UNIT, Market, MarketConfig, new_markets
from engine.domain.trading.matching import crosses, house_plan, plan
from engine.domain.transfers.transfer_records import post
from engine.kernel.clock import format_time, from_millis, parse_time
from engine.kernel.commands import CancelOrder, CreateOrder, ReadMarket, SetMarketPrice
from engine.kernel.errors import (
    AlreadyExists,
    ExceedPrecision,
    Forbidden,
    InsufficientFunds,
    Invalid,
    NotFound,
    NotionalTooLarge,
)
from engine.kernel.events import Event
from engine.kernel.money import MARKETS, ZERO, check_step, decimals, format_normal, parse_amount
from engine.kernel.read_model_spec import ReadModelTable
from engine.kernel.registry import Registration
from engine.kernel.state import Ctx, State

SIDES = {"BUY": BUY, "SELL": SELL}
SIDE_NAMES = ("BUY", "SELL")
OPEN_STATES = frozenset({"PENDING_SUBMISSION", "SUBMITTED", "OPEN"})
LIMIT_TYPES = frozenset({"LIMIT", "POST_ONLY_LIMIT", "STOP_LIMIT"})
STOP_TYPES = frozenset({"STOP_MARKET", "STOP_LIMIT"})
# Time in force per order type: (default, allowed), table 2.3 of the interface.
TIME_IN_FORCE: dict[str, tuple[str, frozenset[str]]] = {
    "MARKET": ("IOC", frozenset({"IOC"})),
    "LIMIT": ("GTC", frozenset({"IOC", "GTC", "GTT", "FOK"})),
    "POST_ONLY_LIMIT": ("GTC", frozenset({"IOC", "GTC", "GTT", "FOK"})),
    "STOP_MARKET": ("GTC", frozenset({"GTC", "GTT"})),
    "STOP_LIMIT": ("GTC", frozenset({"GTC", "GTT"})),
}
ALL_TIF = ("GTC", "FOK", "IOC", "GTT")
MAX_AWAIT_MILLIS = 10_000
MIN_GTT = timedelta(seconds=10)
REF_REUSE_AFTER = timedelta(hours=24)
SMP_MAX = 36
TAKER_BAND = Decimal("0.15")
BASE_PLACES = 8
QUOTE_PLACES = 2
EIGHT = Decimal("0.00000001")
CENT = Decimal("0.01")
_MILLIS = re.compile(r"^[0-9]{13}$")
# The markets the reference's pricing operations know (its PricePriceMarket enum).
TICKER_MARKETS = tuple(m for m in MARKETS if m.endswith("USD"))


class Order:
    """One order: what the client asked, where it stands, and what it still holds."""

    __slots__ = (
        "id",
        "profile_id",
        "customer_id",
        "market",
        "side",
        "type",
        "tif",
        "status",
        "ticks",
        "qty",
        "quote",
        "budget",
        "stop_ticks",
        "triggered",
        "expires",
        "ref_id",
        "metadata",
        "identity_id",
        "identity_account_id",
        "recipient",
        "smp_id",
        "created_at",
        "modified_at",
        "closed_at",
        "filled",
        "spent",
        "commission",
        "hold",
        "hold_asset",
        "hold_rate",
        "remaining",
        "live",
        "seq",
    )

    id: str
    profile_id: str
    customer_id: str
    market: str
    side: int
    type: str
    tif: str
    status: str
    ticks: int  # limit price in ticks; 0 when the order has none
    qty: int  # base amount in units; 0 for a market buy
    quote: Decimal | None  # a market buy's quote amount
    budget: int  # that quote amount in notional units (ticks x base units)
    stop_ticks: int
    triggered: bool
    expires: str | None
    ref_id: str | None
    metadata: dict[str, str] | None
    identity_id: str | None
    identity_account_id: str | None
    recipient: str | None
    smp_id: str | None
    created_at: str
    modified_at: str
    closed_at: str | None
    filled: int  # base units
    spent: int  # notional units
    commission: Decimal
    hold: Decimal  # what the order still holds in `trading`, in hold_asset
    hold_asset: str
    hold_rate: Decimal  # the fee rate a limit buy's hold covers
    remaining: int  # units resting in the book
    live: bool  # in the book now
    seq: int

    def __init__(self) -> None:
        self.live = False
        self.remaining = 0
        self.filled = 0
        self.spent = 0
        self.commission = ZERO
        self.triggered = False
        self.closed_at: str | None = None

    @property
    def open(self) -> bool:
        return self.status in OPEN_STATES


@dataclass
class Trading:
    """The trading state inside `State.ext["trading"]`."""

    orders: dict[str, Order] = field(default_factory=dict)
    markets: dict[str, Market] = field(default_factory=new_markets)
    # (profile_id, ref_id) -> order id
    refs: dict[tuple[str, str], str] = field(default_factory=dict)
    # execution id -> (order, executed_at, ticks, units, commission, liquidity)
    executions: dict[int, tuple[Order, str, int, int, Decimal, str]] = field(default_factory=dict)
    next_execution: int = 1
    next_trade: int = 1
    cfg: MarketConfig | None = None
    settings: Settings | None = None
    seed: int = 0


def trading_state(state: State) -> Trading:
    tr = state.ext.get("trading")
    if tr is None:
        tr = state.ext["trading"] = Trading()
    return tr  # type: ignore[no-any-return]


def _live(ctx: Ctx) -> Trading:
    tr = trading_state(ctx.state)
    if tr.settings is not ctx.settings:
        tr.cfg = MarketConfig.of(ctx.settings)
        tr.settings = ctx.settings
        tr.seed = ctx.ids.seed
    return tr


def _cfg(tr: Trading) -> MarketConfig:
    assert tr.cfg is not None
    return tr.cfg


# -- text of amounts -----------------------------------------------------------------
#
# Views and events show amounts as `format(Decimal, "f")` does; these give the same text
# from the integers the hot path holds, without building a Decimal per amount (a view
# is built for every feed item and read-model row of an order).


def _tick_text(tick: Decimal) -> tuple[int, int, int, str]:
    """A tick size as (integer steps per tick, decimal places, 10**places, the template
    of a price's text)."""
    _, digits, exponent = tick.as_tuple()
    assert isinstance(exponent, int)
    n = int("".join(map(str, digits)))
    if exponent >= 0:
        return n * 10**exponent, 0, 1, "%d"
    places = -exponent
    return n, places, 10**places, f"%d.%0{places}d"


_TICKS = {name: _tick_text(spec.tick) for name, spec in MARKETS.items()}


def units_text(units: int) -> str:
    """Base units as the API shows base amounts: always 8 decimals."""
    if units < 0:
        return format(Decimal(units) * UNIT, "f")
    return "%d.%08d" % divmod(units, 100_000_000)  # noqa: UP031 - faster than format()


def price_text(market: str, ticks: int) -> str:
    """A price in ticks of `market`, with the places of its tick size."""
    n, places, scale, template = _TICKS[market]
    if ticks < 0 or not places:
        return format(MARKETS[market].tick * ticks, "f")
    return template % divmod(ticks * n, scale)


def ticks_text(mk: Market, ticks: int) -> str:
    return price_text(mk.name, ticks)


def _dec(value: Decimal) -> str:
    return format(value, "f")


def _vwap(market: str, spent: int, filled: int) -> str:
    """spent x tick / filled, rounded half up to 8 places, in integers: exact, so the same
    as the 60-digit Decimal division and quantize it replaces (a quotient's expansion
    cannot hold 37 nines in a row before its 60th digit with a denominator this small)."""
    if filled == 0:
        return "0.00000000"
    n, _, scale, _ = _TICKS[market]
    den = filled * scale
    q, r = divmod(spent * n * 100_000_000, den)
    if 2 * r >= den:
        q += 1
    return "%d.%08d" % divmod(q, 100_000_000)  # noqa: UP031


def vwap_text(mk: Market, spent: int, filled: int) -> str:
    if spent < 0 or filled < 0:
        with localcontext() as c:
            c.prec = 60
            value = Decimal(spent) * mk.tick / Decimal(filled)
            return format(value.quantize(EIGHT, rounding=ROUND_HALF_UP), "f")
    return _vwap(mk.name, spent, filled)


def _gross_text(market: str, ticks: int, units: int) -> str:
    """`format_normal` of price x amount, from the integers: the exact quotient of
    ticks x units x steps by 10**(places + 8), without its trailing zeros. Two Decimal
    products and a normalize cost several times as much, for every execution view."""
    n, places, _, _ = _TICKS[market]
    value = ticks * units * n
    if value < 0 or value >= _EXACT:
        return format_normal(Decimal(ticks * units) * MARKETS[market].tick * UNIT)
    digits = places + 8
    whole, fraction = divmod(value, 10**digits)
    if not fraction:
        return str(whole)
    return ("%d.%0*d" % (whole, digits, fraction)).rstrip("0")  # noqa: UP031


# Below this, a product of ticks, units and steps has at most 27 digits: the Decimal
# product it stands for is exact in any context of 28 digits or more, as is the text.
_EXACT = 10**27


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
            view["volume_weighted_average_price"] = _vwap(o.market, spent, filled)
        view["is_triggered"] = triggered
    views[0] = (o, status, modified_at, filled, spent, triggered, view)
    return view


def _build_view(o: Order) -> dict[str, Any]:
    market = o.market
    filled = o.filled
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
            "amount_filled": units_text(filled),
            "volume_weighted_average_price": _vwap(market, o.spent, filled),
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
    view["amount_filled"] = units_text(filled)
    view["volume_weighted_average_price"] = _vwap(market, o.spent, filled)
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
        "gross_trade_amount": _gross_text(o.market, ticks, units),
    }
    if o.identity_account_id is not None:
        view["account_id"] = o.identity_account_id
    return view


# -- creating an order ---------------------------------------------------------------


def _amount(text: str, field: str, asset: str, places: int) -> Decimal:
    value = parse_amount(text, field)
    # Most amounts are written with no more places than allowed, which the text shows;
    # only longer ones are normalized to find their significant places.
    dot = text.find(".")
    if (dot >= 0 and len(text) - dot - 1 > places) and decimals(value) > places:
        raise ExceedPrecision(asset, places, field)
    return value


def _price(text: str, field: str, mk: Market) -> int:
    value = parse_amount(text, field)
    ticks, off = divmod(value, mk.tick)
    if off:
        check_step(value, mk.tick, field, "tick size")  # raises, with the usual words
    return int(ticks)


# (type, side) -> which of price, base_amount, quote_amount, stop_price it takes.
_SHAPES = {
    ("LIMIT", "BUY"): (True, True, False, False),
    ("LIMIT", "SELL"): (True, True, False, False),
    ("POST_ONLY_LIMIT", "BUY"): (True, True, False, False),
    ("POST_ONLY_LIMIT", "SELL"): (True, True, False, False),
    ("MARKET", "BUY"): (False, False, True, False),
    ("MARKET", "SELL"): (False, True, False, False),
    ("STOP_MARKET", "SELL"): (False, True, False, True),
    ("STOP_LIMIT", "SELL"): (True, True, False, True),
}


def _check_fields(cmd: CreateOrder) -> None:
    """Which fields each type needs and which do not belong to it."""
    kind = cmd.type
    shape = _SHAPES.get((kind, cmd.side))
    if shape is not None and shape == (
        cmd.price is not None,
        cmd.base_amount is not None,
        cmd.quote_amount is not None,
        cmd.stop_price is not None,
    ):
        return  # what almost every order sends; anything else is told what is wrong
    given = {
        "price": cmd.price is not None,
        "base_amount": cmd.base_amount is not None,
        "quote_amount": cmd.quote_amount is not None,
        "stop_price": cmd.stop_price is not None,
    }
    if kind in STOP_TYPES and cmd.side != "SELL":
        raise Invalid(
            f"side invalid: {kind} orders are sell stop-losses; a BUY stop order is not supported",
            field="side",
        )
    needed: tuple[str, ...]
    if kind in ("LIMIT", "POST_ONLY_LIMIT"):
        needed = ("price", "base_amount")
    elif kind == "MARKET":
        needed = ("quote_amount",) if cmd.side == "BUY" else ("base_amount",)
    elif kind == "STOP_MARKET":
        needed = ("stop_price", "base_amount")
    else:
        needed = ("stop_price", "price", "base_amount")
    for name in needed:
        if not given[name]:
            what = f"{cmd.side} {kind}" if kind == "MARKET" else kind
            raise Invalid(f"{name} is required for {what} orders", field=name)
    for name, present in given.items():
        if present and name not in needed:
            what = f"{cmd.side} {kind}" if kind == "MARKET" else kind
            raise Invalid(f"{name} invalid: not allowed for {what} orders", field=name)


def _mid(tr: Trading, mk: Market, step: int) -> Decimal:
    cfg = _cfg(tr)
    bid = _best(mk.book.best_bid(), mk.ladder_side(cfg, tr.seed, step, BUY), BUY)
    ask = _best(mk.book.best_ask(), mk.ladder_side(cfg, tr.seed, step, SELL), SELL)
    if bid is None or ask is None:
        ref = mk.last_price(cfg, tr.seed, step)
        return mk.tick * ref
    return mk.tick * (bid + ask) / 2


def _best(real: int | None, ladder: list[list[int]], side: int) -> int | None:
    synth = None
    for t, u in ladder:
        if u > 0:
            synth = t
            break
    if real is None:
        return synth
    if synth is None:
        return real
    return max(real, synth) if side == BUY else min(real, synth)


def create_order(ctx: Ctx, cmd: CreateOrder) -> dict[str, Any]:
    tr = _live(ctx)
    cfg = _cfg(tr)
    state = ctx.state
    profile = resolve_profile(state, cmd.actor.customer_id, cmd.profile_id)
    if cmd.side not in SIDES:
        raise Invalid(f"side invalid: unknown side '{cmd.side}'", field="side")
    mk = tr.markets.get(cmd.market)
    if mk is None:
        raise Invalid(f"market invalid: unknown market '{cmd.market}'", field="market")
    if cmd.type not in TIME_IN_FORCE:
        raise Invalid(f"type invalid: unknown order type '{cmd.type}'", field="type")
    _check_fields(cmd)
    kind = cmd.type
    default_tif, allowed = TIME_IN_FORCE[kind]
    tif = cmd.time_in_force or default_tif
    if tif not in ALL_TIF:
        raise Invalid(f"time_in_force invalid: unknown value '{tif}'", field="time_in_force")
    if tif not in allowed:
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
    metadata = check_metadata(cmd.metadata)
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
    ticks = _price(cmd.price, "price", mk) if cmd.price is not None else 0
    stop_ticks = _price(cmd.stop_price, "stop_price", mk) if cmd.stop_price is not None else 0
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
        recipient = resolve_profile(state, cmd.actor.customer_id, cmd.recipient_profile_id)["id"]
    if cmd.ref_id is not None:
        _check_ref(ctx.state, tr, profile["id"], cmd.ref_id, ctx.now)
    step = cfg.step_of(ctx.now)
    _check_notional(tr, mk, kind, side, base, quote, ticks, stop_ticks, step)
    if kind == "LIMIT" and crosses(
        mk.book,
        side,
        ticks,
        _best(None, mk.ladder_side(cfg, tr.seed, step, SELL if side == BUY else BUY), 1 - side),
    ):
        mid = _mid(tr, mk, step)
        if abs(mk.tick * ticks - mid) >= mid * TAKER_BAND:
            raise Invalid(
                f"price invalid: a taker order priced 15% or more away from the mid price"
                f" ({format_normal(mid)}) is refused",
                field="price",
            )
    # The hold: a buy holds quote (price x amount, or quote_amount) plus the most fee it
    # can owe; a sell holds its base amount.
    if side == BUY:
        asset = spec.quote
        if quote is not None:
            rate = cfg.taker_fee
            needed = quote * (1 + rate)
        else:
            assert base is not None
            rate = max(cfg.maker_fee, cfg.taker_fee)
            needed = mk.tick * ticks * base * (1 + rate)
    else:
        asset = spec.base
        rate = ZERO
        assert base is not None
        needed = base
    pid = profile["id"]
    have = state.ledger.balance(available(pid), asset)
    if needed > have:
        raise InsufficientFunds(pid, asset, format_normal(have), format_normal(needed))
    order_id = ctx.ids.uuid()
    latency = cfg.latency_us
    hold_text = _dec(needed)
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
        "hold_rate": _dec(rate),
    }
    if ticks:
        record["price"] = ticks_text(mk, ticks)
    if base is not None:
        record["base_amount"] = _dec(base)
    if quote is not None:
        record["quote_amount"] = _dec(quote)
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
    postings = [[available(pid), trading(pid), asset, hold_text]] if needed > ZERO else []
    ctx.emit("OrderPlaced", f"order-{order_id}", {"order": record, "postings": postings})
    order = tr.orders[order_id]
    if not latency:
        _run(ctx, tr, mk, order, step)
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
    kind: str,
    side: int,
    base: Decimal | None,
    quote: Decimal | None,
    ticks: int,
    stop_ticks: int,
    step: int,
) -> None:
    spec = mk.spec
    if kind in ("MARKET", "STOP_MARKET"):
        limit = spec.max_market_notional
        label = "MARKET" if kind == "MARKET" else kind
        if quote is not None:
            value = quote
        elif kind == "STOP_MARKET":
            assert base is not None
            value = base * mk.tick * stop_ticks
        else:
            assert base is not None
            value = base * _mid(tr, mk, step)
    else:
        limit = spec.max_limit_notional
        label = kind
        assert base is not None
        value = base * mk.tick * ticks
    if value > limit:
        shown = format(value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP), "f")
        raise NotionalTooLarge(
            f"notional value too large for {mk.name} {label} order: order had notional value"
            f" {shown}, but maximum allowed notional value is {format_normal(limit)}",
            meta={
                "market": mk.name,
                "order_type": kind,
                "order_notional_value": shown,
                "max_notional_value": format_normal(limit),
            },
        )


# -- carrying an order forward ---------------------------------------------------------


def _run(ctx: Ctx, tr: Trading, mk: Market, order: Order, step: int) -> None:
    """A SUBMITTED order: wait as a stop, or take liquidity; then the cascade of stops
    its trades may trigger, and the market's watch."""
    if order.type in STOP_TYPES and not order.triggered:
        if mk.last_price(_cfg(tr), tr.seed, step) <= order.stop_ticks:
            ctx.emit("OrderTriggered", f"order-{order.id}", {"order_id": order.id})
            _take(ctx, tr, mk, order, step)
        else:
            ctx.emit("OrderOpened", f"order-{order.id}", {"order_id": order.id})
    else:
        _take(ctx, tr, mk, order, step)
    _cascade(ctx, tr, mk, step)
    _arm(ctx, tr, mk, step + 1)


def _close(ctx: Ctx, o: Order, kind: str, reason: str | None = None) -> None:
    data: dict[str, Any] = {"order_id": o.id}
    if reason is not None:
        data["reason"] = reason
    if o.hold > ZERO:
        amount = _dec(o.hold)
        data["release"] = amount
        data["postings"] = [[trading(o.profile_id), available(o.profile_id), o.hold_asset, amount]]
    ctx.emit(kind, f"order-{o.id}", data)


def _take(ctx: Ctx, tr: Trading, mk: Market, o: Order, step: int) -> None:
    """`o` meets the book and the house's ladder as the taker."""
    cfg = _cfg(tr)
    opposite = SELL if o.side == BUY else BUY
    ladder = mk.ladder_side(cfg, tr.seed, step, opposite)
    acts_as_market = o.type == "MARKET" or o.type == "STOP_MARKET"
    if o.type == "POST_ONLY_LIMIT":
        if crosses(mk.book, o.side, o.ticks, _best(None, ladder, opposite)):
            _close(ctx, o, "OrderRejected", "POST_ONLY_WOULD_TAKE_LIQUIDITY")
        elif o.tif in ("IOC", "FOK"):
            _close(ctx, o, "OrderCancelled", "NOT_FILLED_IMMEDIATELY")
        else:
            ctx.emit("OrderOpened", f"order-{o.id}", {"order_id": o.id})
        return
    if not acts_as_market and not crosses(mk.book, o.side, o.ticks, _best(None, ladder, opposite)):
        if o.tif in ("IOC", "FOK"):
            _close(ctx, o, "OrderCancelled", "NOT_FILLED_IMMEDIATELY")
        else:
            ctx.emit("OrderOpened", f"order-{o.id}", {"order_id": o.id})
        return
    if o.quote is not None:
        p = plan(mk.book, o.side, None, None, o.budget - o.spent, ladder, o.customer_id, o.smp_id)
    else:
        left = o.qty - o.filled
        limit = None if acts_as_market else o.ticks
        p = plan(mk.book, o.side, limit, left, None, ladder, o.customer_id, o.smp_id)
        if o.tif == "FOK" and p.filled < left:
            _close(ctx, o, "OrderCancelled", "FILL_OR_KILL_NOT_FILLED")
            return
    for resting, ticks, units in p.steps:
        maker: Order | None = resting  # type: ignore[assignment]
        if maker is not None and units == 0:
            _close(ctx, maker, "OrderCancelled", "SELF_MATCH_PREVENTED")
            continue
        if o.side == BUY:
            _trade(ctx, tr, mk, step, ticks, units, o, maker, BUY)
        else:
            _trade(ctx, tr, mk, step, ticks, units, maker, o, SELL)
        if maker is not None and maker.filled == maker.qty:
            _close(ctx, maker, "OrderFilled")
    complete = p.exhausted if o.quote is not None else o.filled == o.qty
    if complete:
        _close(ctx, o, "OrderFilled")
    elif acts_as_market or o.tif in ("IOC", "FOK"):
        _close(ctx, o, "OrderCancelled", "IMMEDIATE_OR_CANCEL_REMAINDER")
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
    cfg = _cfg(tr)
    spec = mk.spec
    notional = Decimal(ticks * units) * mk.unit
    base_amount = Decimal(units) * UNIT
    postings: list[list[str]] = []
    amount_text = units_text(units)  # the text of base_amount
    data: dict[str, Any] = {
        "market": mk.name,
        "step": step,
        "trade": tr.next_trade,
        "price": ticks_text(mk, ticks),
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
            "commission": _dec(fee_buy),
            "held": _dec(held),
            "liquidity": "TAKER" if aggressor == BUY else "MAKER",
        }
        execution += 1
    if sell is not None:
        fee_sell = notional * (cfg.taker_fee if aggressor == SELL else cfg.maker_fee)
        data["sell"] = {
            "order_id": sell.id,
            "execution_id": execution,
            "commission": _dec(fee_sell),
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
        postings.append([payer, seller, spec.quote, _dec(proceeds)])
    fees = fee_buy + fee_sell
    if fees > ZERO:
        postings.append([payer, FEES, spec.quote, _dec(fees)])
    if buy is not None:
        release = Decimal(data["buy"]["held"]) - notional - fee_buy
        if release > ZERO:
            postings.append([payer, available(buy.profile_id), spec.quote, _dec(release)])
    if buy is None or sell is None:
        data["house"] = house or [[ticks, units]]
    data["postings"] = postings
    stream = buy if aggressor == BUY else sell if aggressor == SELL else buy or sell
    assert stream is not None
    ctx.emit("TradeExecuted", f"order-{stream.id}", data)


def _cascade(ctx: Ctx, tr: Trading, mk: Market, step: int) -> None:
    """Trigger every stop whose condition the last price now meets, highest stop first;
    each triggered stop trades, which may move the last price and trigger more."""
    cfg = _cfg(tr)
    while mk.stops:
        last = mk.last_price(cfg, tr.seed, step)
        due = [o for o in mk.stops.values() if o.stop_ticks >= last]
        if not due:
            return
        o = max(due, key=lambda s: (s.stop_ticks, -s.seq))
        ctx.emit("OrderTriggered", f"order-{o.id}", {"order_id": o.id})
        _take(ctx, tr, mk, o, step)


def _cross(ctx: Ctx, tr: Trading, mk: Market, step: int) -> None:
    """The house takes the resting orders its ladder crosses at `step`, at their prices."""
    cfg = _cfg(tr)
    for side in (BUY, SELL):
        best = mk.book.best_bid() if side == BUY else mk.book.best_ask()
        if best is None:
            continue
        ladder = mk.ladder_side(cfg, tr.seed, step, SELL if side == BUY else BUY)
        top = _best(None, ladder, SELL if side == BUY else BUY)
        if top is None or (top > best if side == BUY else top < best):
            continue
        for order, units, taken in house_plan(mk.book, side, ladder):
            o: Order = order  # type: ignore[assignment]
            if side == BUY:
                _trade(ctx, tr, mk, step, o.ticks, units, o, None, None, taken)
            else:
                _trade(ctx, tr, mk, step, o.ticks, units, None, o, None, taken)
            if o.filled == o.qty:
                _close(ctx, o, "OrderFilled")
    _cascade(ctx, tr, mk, step)


def _arm(ctx: Ctx, tr: Trading, mk: Market, step: int, force: bool = False) -> None:
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
    cfg = _cfg(tr)
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


# -- other decisions -----------------------------------------------------------------


def cancel_order(ctx: Ctx, cmd: CancelOrder) -> dict[str, Any]:
    tr = _live(ctx)
    profile = resolve_profile(ctx.state, cmd.actor.customer_id, cmd.profile_id)
    o = tr.orders.get(cmd.order_id)
    if o is None or o.profile_id != profile["id"]:
        raise NotFound(f"order not found with id {cmd.order_id}")
    if not o.open:
        raise Forbidden("order is not in cancellable state")
    _close(ctx, o, "OrderCancelled", "CANCELLED_BY_USER")
    return {}


def set_market_price(ctx: Ctx, cmd: SetMarketPrice) -> dict[str, Any]:
    tr = _live(ctx)
    mk = tr.markets.get(cmd.market)
    if mk is None:
        raise NotFound(f"market not found: {cmd.market}")
    ticks = _price(cmd.price, "price", mk)
    cfg = _cfg(tr)
    step = cfg.step_of(ctx.now)
    ctx.emit(
        "MarketPriceSet",
        f"market-{mk.name}",
        {"market": mk.name, "price": ticks_text(mk, ticks), "step": step},
    )
    _cross(ctx, tr, mk, step)
    _arm(ctx, tr, mk, step + 1, force=True)
    return _price_view(ctx, tr, mk, step)


def _price_view(ctx: Ctx, tr: Trading, mk: Market, step: int) -> dict[str, Any]:
    cfg = _cfg(tr)
    ref = Decimal(mk.reference(cfg, tr.seed, step)).quantize(EIGHT, rounding=ROUND_HALF_UP)
    return {
        "market": mk.name,
        "reference_price": format(ref, "f"),
        "last_price": ticks_text(mk, mk.last_price(cfg, tr.seed, step)),
        "as_of": ctx.now_text,
    }


def submit_due(ctx: Ctx, order_id: str) -> None:
    """Timer: a PENDING_SUBMISSION order reaches the market."""
    tr = _live(ctx)
    o = tr.orders.get(order_id)
    if o is None or o.status != "PENDING_SUBMISSION":
        return
    ctx.emit("OrderSubmitted", f"order-{o.id}", {"order_id": o.id})
    mk = tr.markets[o.market]
    _run(ctx, tr, mk, o, _cfg(tr).step_of(ctx.now))


def expire_due(ctx: Ctx, order_id: str) -> None:
    """Timer: a GTT order still open at its expiration is cancelled at that time."""
    tr = _live(ctx)
    o = tr.orders.get(order_id)
    if o is None or not o.open:
        return
    _close(ctx, o, "OrderCancelled", "EXPIRED")


def watch_due(ctx: Ctx, key: str) -> None:
    """Timer: the path may cross this market's resting interest now."""
    tr = _live(ctx)
    name, _, at = key.rpartition("@")
    mk = tr.markets[name]
    if mk.armed_step != int(at):
        return
    mk.armed_step = None
    step = _cfg(tr).step_of(ctx.now)
    _cross(ctx, tr, mk, step)
    _arm(ctx, tr, mk, step + 1, force=True)


# -- market data (read by the writer, so that it is exactly "now") -------------------


def read_market(ctx: Ctx, cmd: ReadMarket) -> dict[str, Any]:
    tr = _live(ctx)
    step = _cfg(tr).step_of(ctx.now)
    if cmd.view == "tickers":
        return {"tickers": [_ticker(ctx, tr, tr.markets[name], step) for name in TICKER_MARKETS]}
    mk = tr.markets.get(cmd.market)
    if mk is None:
        raise NotFound(f"market not found: {cmd.market}")
    if cmd.view == "book":
        return _book_view(tr, mk, step)
    if cmd.view == "ticker":
        return _ticker(ctx, tr, mk, step)
    if cmd.view == "recent":
        return {
            "items": [
                {
                    "match_number": _match_number(match),
                    "price": ticks_text(mk, ticks),
                    "amount": units_text(units),
                    "executed_at": at,
                }
                for match, ticks, units, at in reversed(mk.recent)
            ]
        }
    if cmd.view == "price":
        return _price_view(ctx, tr, mk, step)
    raise Invalid(f"unknown market view {cmd.view}")


def merged_levels(tr: Trading, mk: Market, step: int, side: int) -> list[tuple[int, int]]:
    """Real resting orders and the house's ladder merged by price level, best first."""
    amounts: dict[int, int] = {}
    for level in mk.book.levels(side):
        amounts[level.ticks] = level.total
    for ticks, units in mk.ladder_side(_cfg(tr), tr.seed, step, side):
        if units > 0:
            amounts[ticks] = amounts.get(ticks, 0) + units
    return sorted(amounts.items(), reverse=side == BUY)


def _book_view(tr: Trading, mk: Market, step: int) -> dict[str, Any]:
    return {
        "market": mk.name,
        "asks": [
            {"price": ticks_text(mk, t), "amount": units_text(u)}
            for t, u in merged_levels(tr, mk, step, SELL)
        ],
        "bids": [
            {"price": ticks_text(mk, t), "amount": units_text(u)}
            for t, u in merged_levels(tr, mk, step, BUY)
        ],
    }


def _stats(mk: Market, begin: str, end: str, last: int) -> dict[str, Any]:
    first_minute = begin[:16]
    rows = [mk.minutes[m] for m in sorted(mk.minutes) if first_minute <= m <= end[:16]]
    if rows:
        high = max(r[1] for r in rows)
        low = min(r[2] for r in rows)
        open_ = rows[0][0]
        units = sum(r[3] for r in rows)
        spent = sum(r[4] for r in rows)
    else:
        high = low = open_ = last
        units = spent = 0
    return {
        "high": ticks_text(mk, high),
        "low": ticks_text(mk, low),
        "open": ticks_text(mk, open_),
        "volume": units_text(units),
        "volume_weighted_average_price": vwap_text(mk, spent, units),
        "range": {"begin": begin, "end": end},
    }


def _ticker(ctx: Ctx, tr: Trading, mk: Market, step: int) -> dict[str, Any]:
    cfg = _cfg(tr)
    now = ctx.now
    last = mk.last_price(cfg, tr.seed, step)
    view: dict[str, Any] = {"market": mk.name}
    bids = merged_levels(tr, mk, step, BUY)
    asks = merged_levels(tr, mk, step, SELL)
    if bids:
        view["best_bid"] = {"price": ticks_text(mk, bids[0][0]), "amount": units_text(bids[0][1])}
    if asks:
        view["best_ask"] = {"price": ticks_text(mk, asks[0][0]), "amount": units_text(asks[0][1])}
    if mk.last_trade is not None:
        ticks, units = mk.last_trade
        view["last_execution"] = {"price": ticks_text(mk, ticks), "amount": units_text(units)}
    end = ctx.now_text
    view["last_day"] = _stats(mk, format_time(now - timedelta(days=1)), end, last)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    view["today"] = _stats(mk, format_time(midnight), end, last)
    view["snapshot_at"] = end
    return view


# -- appliers ------------------------------------------------------------------------


# The fields every OrderPlaced record has (create_order writes them unconditionally).
_PLAIN_FIELDS = 11


def _placed(state: State, e: Event) -> None:
    tr = trading_state(state)
    d = e.data["order"]
    spec = MARKETS[d["market"]]
    o = Order()
    o.id = d["id"]
    o.profile_id = intern(d["profile_id"])
    o.customer_id = intern(d["customer_id"])
    o.market = spec.market
    o.side = SIDES[d["side"]]
    o.type = intern(d["type"])
    o.tif = intern(d["time_in_force"])
    o.status = intern(d["status"])
    get = d.get
    price = get("price")
    o.ticks = int(Decimal(price) / spec.tick) if price is not None else 0
    base = get("base_amount")
    o.qty = int(Decimal(base).scaleb(8)) if base is not None else 0
    if len(d) == _PLAIN_FIELDS + (price is not None) + (base is not None):
        # none of the optional fields below: most orders
        o.quote = o.expires = o.ref_id = o.metadata = o.identity_id = None
        o.identity_account_id = o.recipient = o.smp_id = None
        o.budget = o.stop_ticks = 0
    else:
        quote = get("quote_amount")
        o.quote = Decimal(quote) if quote is not None else None
        o.budget = int(o.quote / (spec.tick * UNIT)) if o.quote is not None else 0
        stop = get("stop_price")
        o.stop_ticks = int(Decimal(stop) / spec.tick) if stop is not None else 0
        o.expires = get("expiration_date")
        o.ref_id = get("ref_id")
        o.metadata = get("metadata")
        o.identity_id = get("identity_id")
        o.identity_account_id = get("identity_account_id")
        o.recipient = get("recipient_profile_id")
        o.smp_id = get("self_match_prevention_id")
    o.created_at = o.modified_at = _time(state, e.occurred_at)
    o.hold = Decimal(d["hold"])
    o.hold_asset = intern(d["hold_asset"])
    o.hold_rate = _rate(state, d["hold_rate"])
    o.seq = e.position
    tr.orders[o.id] = o
    if o.ref_id is not None:
        tr.refs[(o.profile_id, o.ref_id)] = o.id
    post(state, e.data["postings"])
    if o.expires is not None:
        state.timers.add(parse_time(o.expires), "order_expire", o.id)
    if "submit_at" in d:
        state.timers.add(parse_time(d["submit_at"]), "order_submit", o.id)
    state.mark("order", o.id)


def _time(state: State, at: str) -> str:
    """One string for one time: orders placed or changed at the same time (a manual
    clock, a backtest, a burst) keep one text of it between them, not one each."""
    caches = state.caches
    last = caches.order_time
    if at == last:
        return last
    caches.order_time = at
    return at


def _rate(state: State, text: str) -> Decimal:
    """A fee rate: a handful of values shared by every order (a Decimal is 104 bytes)."""
    rates = state.caches.rates
    rate = rates.get(text)
    if rate is None:
        rate = Decimal(text)
        if len(rates) < 1024:
            rates[text] = rate
    return rate


def _changed(state: State, e: Event, status: str | None = None) -> Order:
    o = trading_state(state).orders[e.data["order_id"]]
    if status is not None:
        o.status = status
    o.modified_at = _time(state, e.occurred_at)
    state.mark("order", o.id)
    return o


def _submitted(state: State, e: Event) -> None:
    _changed(state, e, "SUBMITTED")


def _opened(state: State, e: Event) -> None:
    o = _changed(state, e, "OPEN")
    tr = trading_state(state)
    mk = tr.markets[o.market]
    if o.type in STOP_TYPES and not o.triggered:
        mk.stops[o.id] = o
    else:
        o.remaining = o.qty - o.filled if o.filled else o.qty  # one int object, not two
        mk.book.add(o)
    if not state.live:
        _arm_after_replay(state, mk, e.occurred_at)


def _triggered(state: State, e: Event) -> None:
    o = _changed(state, e)
    o.triggered = True
    trading_state(state).markets[o.market].stops.pop(o.id, None)


def _closed(state: State, e: Event, status: str) -> None:
    o = _changed(state, e, status)
    o.closed_at = e.occurred_at
    mk = trading_state(state).markets[o.market]
    if o.live:
        mk.book.remove(o)
    mk.stops.pop(o.id, None)
    if "release" in e.data:
        o.hold -= Decimal(e.data["release"])
        post(state, e.data["postings"])


def _filled(state: State, e: Event) -> None:
    _closed(state, e, "FILLED")


def _cancelled(state: State, e: Event) -> None:
    _closed(state, e, "CANCELLED")


def _rejected(state: State, e: Event) -> None:
    _closed(state, e, "REJECTED")


def _traded(state: State, e: Event) -> None:
    tr = trading_state(state)
    d = e.data
    mk = tr.markets[d["market"]]
    ticks = int(Decimal(d["price"]) / mk.tick)
    units = int(Decimal(d["amount"]) / UNIT)
    at = _time(state, e.occurred_at)
    orders = tr.orders
    first_execution = 0
    for key in ("buy", "sell"):
        side = d.get(key)
        if side is None:
            continue
        o = orders[side["order_id"]]
        commission = Decimal(side["commission"])
        o.filled += units
        o.spent += ticks * units
        o.commission += commission
        o.hold -= Decimal(side["held"])
        o.modified_at = at
        if o.live:
            mk.book.fill(o, units)
        execution = side["execution_id"]
        first_execution = first_execution or execution
        tr.executions[execution] = (o, at, ticks, units, commission, intern(side["liquidity"]))
        tr.next_execution = execution + 1
        state.mark("order", o.id)
        state.mark("execution", execution)
    house = d.get("house")
    if house:
        mk.consume(d["step"], BUY if "buy" not in d else SELL, house)
    tr.next_trade = d["trade"] + 1
    buy, sell = d.get("buy"), d.get("sell")
    if (
        not house
        or (buy is not None and buy["liquidity"] == "TAKER")
        or (sell is not None and sell["liquidity"] == "TAKER")
    ):
        # A sandbox order took liquidity: the trade is the market's last price. The
        # house filling resting orders as its price moves past them is not: those
        # trades happened on the way to the reference price, which stays the last.
        mk.print_step = d["step"]
        mk.print_ticks = ticks
    mk.record_trade(at, ticks, units, d["trade"])
    post(state, d["postings"])


def _price_set(state: State, e: Event) -> None:
    tr = trading_state(state)
    d = e.data
    mk = tr.markets[d["market"]]
    mk.set_anchor(Decimal(d["price"]), d["step"], e.position)
    if not state.live:
        _arm_after_replay(state, mk, e.occurred_at)


def _arm_after_replay(state: State, mk: Market, at: str) -> None:
    """While the log is replayed nothing decides (live, the decision arms the watch), so
    the watch is armed once per market at its first resting interest; its first firing
    after the replay scans the path properly."""
    if mk.armed_step is None:
        mk.armed_step = -1
        state.timers.add(parse_time(at), "market_watch", f"{mk.name}@-1")


_BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _match_number(trade: int) -> str:
    n = trade + 36**11  # twelve characters
    out = []
    while n:
        n, r = divmod(n, 36)
        out.append(_BASE36[r])
    return "".join(reversed(out))


# -- invariants ----------------------------------------------------------------------


def check_trading(state: State) -> list[str]:
    tr = state.ext.get("trading")
    if tr is None:
        return []
    problems: list[str] = []
    holds: dict[tuple[str, str], Decimal] = {}
    for o in tr.orders.values():
        if o.open:
            key = (o.profile_id, o.hold_asset)
            holds[key] = holds.get(key, ZERO) + o.hold
            if o.hold < ZERO:
                problems.append(f"order {o.id} holds a negative amount {o.hold}")
        elif o.hold != ZERO:
            problems.append(f"closed order {o.id} still holds {o.hold} {o.hold_asset}")
        if o.live and (o.status != "OPEN" or o.remaining != o.qty - o.filled):
            problems.append(f"order {o.id} in the book is {o.status} with {o.remaining} left")
        if o.qty and o.filled > o.qty:
            problems.append(f"order {o.id} filled {o.filled} of {o.qty}")
        if o.open and o.qty and o.filled == o.qty:
            problems.append(f"order {o.id} is filled but still {o.status}")
    for (account, asset), value in state.ledger.balances.items():
        if account.endswith(":trading"):
            pid = account[: -len(":trading")]
            held = holds.pop((pid, asset), ZERO)
            if value != held:
                problems.append(
                    f"trading balance of {pid} in {asset} is {value}, open orders hold {held}"
                )
    for (pid, asset), held in holds.items():
        if held != ZERO:
            problems.append(f"open orders of {pid} hold {held} {asset} with no trading balance")
    for mk in tr.markets.values():
        bid, ask = mk.book.best_bid(), mk.book.best_ask()
        if bid is not None and ask is not None and bid >= ask:
            problems.append(f"book {mk.name} is crossed at rest: bid {bid} >= ask {ask} ticks")
        for side in (BUY, SELL):
            for level in mk.book.levels(side):
                live = [o for o in level.queue if o.live]
                if len(live) != level.count or sum(o.remaining for o in live) != level.total:
                    problems.append(f"book {mk.name} level {level.ticks} totals are wrong")
    return problems


# -- read models ---------------------------------------------------------------------


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _order_row(state: State, key: str) -> dict[str, Any] | None:
    o = trading_state(state).orders.get(key)
    if o is None:
        return None
    return {
        "id": o.id,
        "customer_id": o.customer_id,
        "profile_id": o.profile_id,
        "market": o.market,
        "status": o.status,
        "ref_id": o.ref_id,
        "account_id": o.identity_account_id,
        "created_at": o.created_at,
        "seq": o.seq,
        "body": _json(shown_view(state, o)),
    }


def _execution_row(state: State, key: int) -> dict[str, Any] | None:
    record = trading_state(state).executions.get(key)
    if record is None:
        return None
    o = record[0]
    return {
        "execution_id": key,
        "customer_id": o.customer_id,
        "profile_id": o.profile_id,
        "order_id": o.id,
        "account_id": o.identity_account_id,
        "executed_at": record[1],
        "seq": key,
        "body": _json(execution_view(key, record)),
    }


TABLES = (
    ReadModelTable(
        "orders",
        {
            "id": str,
            "customer_id": str,
            "profile_id": str,
            "market": str,
            "status": str,
            "ref_id": str,
            "account_id": str,
            "created_at": str,
            "seq": int,
            "body": str,
        },
        pk=("id",),
        indexes=(("customer_id", "seq"), ("profile_id", "seq")),
        fixed=("customer_id", "profile_id", "seq"),
        kind="order",
        row=_order_row,
        key_columns=("id",),
        keys=lambda s: trading_state(s).orders.keys(),
    ),
    ReadModelTable(
        "executions",
        {
            "execution_id": int,
            "customer_id": str,
            "profile_id": str,
            "order_id": str,
            "account_id": str,
            "executed_at": str,
            "seq": int,
            "body": str,
        },
        pk=("execution_id",),
        indexes=(("customer_id", "seq"), ("profile_id", "seq"), ("order_id",)),
        fixed=("customer_id", "profile_id", "order_id", "seq"),
        kind="execution",
        row=_execution_row,
        key_columns=("execution_id",),
        keys=lambda s: trading_state(s).executions.keys(),
    ),
)


def _usd_price(state: State, asset: str) -> Decimal | None:
    """The last print of the asset's USD market, for other modules' USD valuations."""
    tr = state.ext.get("trading")
    mk = tr.markets.get(asset + "USD") if tr is not None else None
    if mk is None or mk.print_step < 0:
        return None
    return mk.tick * mk.print_ticks


DECIDERS = {
    CreateOrder: create_order,
    CancelOrder: cancel_order,
    SetMarketPrice: set_market_price,
    ReadMarket: read_market,
}

APPLIERS = {
    "OrderPlaced": _placed,
    "OrderSubmitted": _submitted,
    "OrderOpened": _opened,
    "OrderTriggered": _triggered,
    "TradeExecuted": _traded,
    "OrderFilled": _filled,
    "OrderCancelled": _cancelled,
    "OrderRejected": _rejected,
    "MarketPriceSet": _price_set,
}

TIMERS = {
    "order_submit": submit_due,
    "order_expire": expire_due,
    "market_watch": watch_due,
}

REGISTRATION = Registration(
    DECIDERS,
    APPLIERS,
    TIMERS,
    tables=TABLES,
    checks=(check_trading,),
    price_sources=(_usd_price,),
)

__all__ = ["NO_ASK", "NO_BID", "Order", "Trading", "order_view", "trading_state"]
