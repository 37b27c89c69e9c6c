"""The trading appliers: each event of an order's or a market's stream changes the
trading state (orders, books, stops, the ladder's consumption, statistics) and the
ledger; the only code that does."""

from __future__ import annotations

from decimal import Decimal
from sys import intern

from sandex.engine.domain.trading.amount_texts import UNIT
from sandex.engine.domain.trading.book import BUY, SELL
from sandex.engine.domain.trading.market_watch import arm_after_replay
from sandex.engine.domain.trading.order import SIDES, Order
from sandex.engine.domain.trading.order_types import ORDER_TYPES
from sandex.engine.domain.trading.trading_state import Trading, trading_state
from sandex.engine.domain.transfers.transfer_records import post
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.money import MARKETS
from sandex.engine.kernel.state import Applier, State

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
    if state.live:  # `State.mark`, written out
        state.dirty.add(("order", o.id))


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


# The appliers of an order's later events each do what `_changed` says, written out in
# each (`_time` and `State.mark` too): they run for every order, several times, and
# the calls of shared helpers were a tenth of a decision's.


def _changed(state: State, e: Event, status: str | None = None) -> Order:
    """The order an event names, its status set (when given), its time changed and its
    row marked."""
    o = trading_state(state).orders[e.data["order_id"]]
    if status is not None:
        o.status = status
    o.modified_at = _time(state, e.occurred_at)
    state.mark("order", o.id)
    return o


def _submitted(state: State, e: Event) -> None:
    _changed(state, e, "SUBMITTED")


def _opened(state: State, e: Event) -> None:
    tr: Trading = state.ext["trading"]  # an order's later event: the order is in it
    o = tr.orders[e.data["order_id"]]
    o.status = "OPEN"
    caches = state.caches
    at = e.occurred_at
    if at == caches.order_time:
        at = caches.order_time
    else:
        caches.order_time = at
    o.modified_at = at
    if state.live:
        state.dirty.add(("order", o.id))
    mk = tr.markets[o.market]
    if e.data.get("held"):
        tr.held.add(o.id)
    elif ORDER_TYPES[o.type].stop and not o.triggered:
        mk.stops[o.id] = o
    else:
        o.remaining = o.qty - o.filled if o.filled else o.qty  # one int object, not two
        mk.book.add(o)
    if not state.live:
        arm_after_replay(state, mk, e.occurred_at)


def _released(state: State, e: Event) -> None:
    """A held order let go: it stays OPEN while its release decides where it goes."""
    o = _changed(state, e)
    trading_state(state).held.discard(o.id)


def _triggered(state: State, e: Event) -> None:
    o = _changed(state, e)
    o.triggered = True
    trading_state(state).markets[o.market].stops.pop(o.id, None)


def _closer(status: str) -> Applier:
    """The applier of an event that closes an order with `status`."""

    def closed(state: State, e: Event) -> None:
        tr: Trading = state.ext["trading"]  # an order's later event: the order is in it
        d = e.data
        o = tr.orders[d["order_id"]]
        o.status = status
        caches = state.caches
        at = e.occurred_at
        if at == caches.order_time:
            at = caches.order_time
        else:
            caches.order_time = at
        o.modified_at = at
        if state.live:
            state.dirty.add(("order", o.id))
        o.closed_at = e.occurred_at
        mk = tr.markets[o.market]
        if o.live:
            mk.book.remove(o)
        if mk.stops:
            mk.stops.pop(o.id, None)
        if tr.held:
            tr.held.discard(o.id)
        release = d.get("release")
        if release is not None:
            o.hold -= Decimal(release)
            post(state, d["postings"])

    return closed


def _traded(state: State, e: Event) -> None:
    tr: Trading = state.ext["trading"]  # an order's later event: the order is in it
    d = e.data
    mk = tr.markets[d["market"]]
    ticks = int(Decimal(d["price"]) / mk.tick)
    units = int(Decimal(d["amount"]) / UNIT)
    at = _time(state, e.occurred_at)
    orders = tr.orders
    dirty = state.dirty if state.live else None  # `State.mark`, written out
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
        if dirty is not None:
            dirty.add(("order", o.id))
            dirty.add(("execution", execution))
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
        arm_after_replay(state, mk, e.occurred_at)


APPLIERS = {
    "OrderPlaced": _placed,
    "OrderSubmitted": _submitted,
    "OrderOpened": _opened,
    "OrderTriggered": _triggered,
    "OrderReleased": _released,
    "TradeExecuted": _traded,
    "OrderFilled": _closer("FILLED"),
    "OrderCancelled": _closer("CANCELLED"),
    "OrderRejected": _closer("REJECTED"),
    "MarketPriceSet": _price_set,
}
