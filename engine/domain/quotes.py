"""Held-rate quotes and their executions.

A quote is a price to buy or to sell on a market, held until `expires_at`: the market's
reference price plus or minus the configured spread (`quote_spread_bps`), rounded to the
market's tick against the customer. Quotes are shared, as the reference allows ("calls
in quick succession may return the same quote"): `GET /v2/quotes` answers every caller
the market's live pair while its prices are still the current ones and at least half
its ttl is left, and issues a new pair (`QuotesIssued`, one event for every market that needed
one) only otherwise. So a read writes at most one event per market per price step or
half ttl, however many callers ask. A timer on the engine clock expires a batch
(`QuotesExpired`), as fee quotes expire, so a replayed log answers "was this quote still
valid" exactly as the live engine did; the expired quotes leave the state then, and a
later execution of one is told it expired by the time its id carries (a version-7 UUID
of the millisecond it was issued, which `expires_at` counts the ttl from). An execution
moves the funds at the held price between the profile and the house in one event
(`QuoteExecuted`) and is settled at once; each customer executes a quote at most once.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_UP, Decimal
from typing import Any

import orjson

from sandex.engine.domain.customers import resolve_profile
from sandex.engine.domain.identity.permissions import check_acting
from sandex.engine.domain.ledger import HOUSE, available
from sandex.engine.domain.metadata import check_metadata
from sandex.engine.domain.trading.order import SIDE_NAMES
from sandex.engine.domain.trading.trading_state import live_trading, market_config
from sandex.engine.domain.transfers.transfer_records import post
from sandex.engine.kernel.clock import format_time, from_millis, parse_time, to_millis
from sandex.engine.kernel.commands import CreateQuoteExecution, IssueQuotes
from sandex.engine.kernel.errors import (
    AlreadyExists,
    Expired,
    InsufficientFunds,
    Invalid,
    NotFound,
    Rejected,
)
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.ledger import Posting, encode_postings
from sandex.engine.kernel.money import (
    MARKETS,
    ZERO,
    check_precision,
    format_amount,
    format_normal,
    parse_amount,
)
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

# The markets the reference's Quote schema knows (its Market enum), in its order.
QUOTE_MARKETS: tuple[str, ...] = tuple(MARKETS)
# Precision of an execution's amounts as the reference states it (base 8, quote 2); its
# examples show the quote amount with both places ("100.00").
BASE_PLACES = Decimal("0.00000001")
QUOTE_PLACES = Decimal("0.01")
_MAX_REF_ID = 128
EXECUTION_STATUSES = ("CREATED", "SETTLED")
_PRIVATE = frozenset({"customer_id", "seq"})
_PUBLIC = ("id", "market", "side", "price", "base_asset", "quote_asset", "created_at")


def _quotes(state: State) -> dict[str, dict[str, Any]]:
    return state.ext.setdefault("quotes", {})  # type: ignore[no-any-return]


def _batches(state: State) -> dict[str, list[str]]:
    return state.ext.setdefault("quote_batches", {})  # type: ignore[no-any-return]


def _live(state: State) -> dict[str, tuple[datetime, str, str]]:
    """Per market, its newest pair: (expiry, buy quote id, sell quote id)."""
    return state.ext.setdefault("quote_live", {})  # type: ignore[no-any-return]


def executions(state: State) -> dict[str, dict[str, Any]]:
    return state.ext.setdefault("quote_executions", {})  # type: ignore[no-any-return]


def _refs(state: State) -> dict[tuple[str, str], str]:
    return state.ext.setdefault("quote_execution_refs", {})  # type: ignore[no-any-return]


def quote_view(quote: dict[str, Any], expires_at: str) -> dict[str, Any]:
    view = {k: quote[k] for k in _PUBLIC}
    view["expires_at"] = expires_at
    return view


def _prices(ctx: Ctx, market: str) -> tuple[str, str]:
    """(buy, sell) of `market` now: the reference price widened by the spread, each
    rounded to a tick in the house's favour."""
    tr = live_trading(ctx)
    cfg = market_config(tr)
    mk = tr.markets[market]
    ref = Decimal(mk.reference(cfg, tr.seed, cfg.step_of(ctx.now))).quantize(BASE_PLACES)
    spread = ctx.settings.quote_spread_bps / Decimal(10000)
    tick = mk.tick
    buy = (ref * (1 + spread) / tick).to_integral_value(ROUND_CEILING) * tick
    sell = (ref * (1 - spread) / tick).to_integral_value(ROUND_FLOOR) * tick
    return format_normal(buy), format_normal(max(sell, tick))


def _ttl(ctx: Ctx) -> timedelta:
    return timedelta(microseconds=int(ctx.settings.quote_ttl_seconds * 1_000_000))


def _shared(ctx: Ctx, market: str, prices: tuple[str, str]) -> list[dict[str, Any]] | None:
    """The market's live pair, if a caller may be answered it now: its prices are the
    ones a new pair would hold, and at least half its ttl is left."""
    live = _live(ctx.state).get(market)
    if live is None or (live[0] - ctx.now) * 2 < _ttl(ctx):
        return None
    quotes = _quotes(ctx.state)
    pair = [quotes[live[1]], quotes[live[2]]]
    if (pair[0]["price"], pair[1]["price"]) != prices:
        return None
    return pair


def issue_quotes(ctx: Ctx, cmd: IssueQuotes) -> dict[str, Any]:
    markets = list(dict.fromkeys(cmd.markets)) or list(QUOTE_MARKETS)
    for market in markets:
        if market not in MARKETS:
            raise Invalid(f"markets invalid: unknown market '{market[:32]}'", field="markets")
    answered: dict[str, list[dict[str, Any]]] = {}
    stale = []
    for market in markets:
        prices = _prices(ctx, market)
        shared = _shared(ctx, market, prices)
        if shared is None:
            stale.append((market, prices))
        else:
            answered[market] = shared
    if stale:
        answered.update(_issue(ctx, cmd, stale))
    return {"items": [quote_view(q, q["expires_at"]) for m in markets for q in answered[m]]}


def _issue(
    ctx: Ctx, cmd: IssueQuotes, stale: list[tuple[str, tuple[str, str]]]
) -> dict[str, list[dict[str, Any]]]:
    """A new pair for each market of `stale`, in one batch; its expiry counts the ttl from
    the millisecond its ids carry, so that it can be told once the quote has left the
    state (`_dropped_expiry`)."""
    expires = format_time(from_millis(to_millis(ctx.now)) + _ttl(ctx))
    quotes = []
    for market, prices in stale:
        spec = MARKETS[market]
        for side, price in zip(SIDE_NAMES, prices, strict=True):
            quotes.append(
                {
                    "id": ctx.ids.uuid(),
                    "market": market,
                    "side": side,
                    "price": price,
                    "base_asset": spec.base,
                    "quote_asset": spec.quote,
                    "created_at": ctx.now_text,
                }
            )
    batch_id = ctx.ids.uuid()
    ctx.emit(
        "QuotesIssued",
        f"quotes-{batch_id}",
        {
            "batch_id": batch_id,
            "customer_id": cmd.actor.customer_id,
            "expires_at": expires,
            "quotes": quotes,
        },
    )
    issued: dict[str, list[dict[str, Any]]] = {}
    for q in quotes:
        issued.setdefault(q["market"], []).append({**q, "expires_at": expires})
    return issued


def _dropped_expiry(ctx: Ctx, quote_id: str) -> datetime | None:
    """When a quote the state no longer holds expired: the time its id carries plus the
    ttl, if that is past; None for an id that no expired quote can have."""
    try:
        parsed = uuid.UUID(quote_id)
        if parsed.version != 7:
            return None
        expired = from_millis(parsed.int >> 80) + _ttl(ctx)
    except (ValueError, OverflowError):  # not a uuid; a time beyond any datetime
        return None
    return expired if expired <= ctx.now else None


def expire_quotes(ctx: Ctx, batch_id: str) -> None:
    if batch_id in _batches(ctx.state):
        ctx.emit("QuotesExpired", f"quotes-{batch_id}", {"batch_id": batch_id})


# -- executions ---------------------------------------------------------------------


def _amounts(quote: dict[str, Any], cmd: CreateQuoteExecution) -> tuple[Decimal, Decimal]:
    """(base, quote) amounts of the execution at the held price, the one not given
    rounded against the customer."""
    if (cmd.base_amount is None) == (cmd.quote_amount is None):
        raise Invalid(
            "exactly one of base_amount and quote_amount is required", field="base_amount"
        )
    price = Decimal(quote["price"])
    buy = quote["side"] == "BUY"
    if cmd.base_amount is not None:
        base = parse_amount(cmd.base_amount, "base_amount")
        if base != base.quantize(BASE_PLACES, ROUND_DOWN):
            raise Invalid("base_amount invalid: at most 8 decimal places", field="base_amount")
        check_precision(base, quote["base_asset"], "base_amount")
        counter = (base * price).quantize(QUOTE_PLACES, ROUND_UP if buy else ROUND_DOWN)
        field = "base_amount"
    else:
        counter = parse_amount(cmd.quote_amount, "quote_amount")
        if counter != counter.quantize(QUOTE_PLACES, ROUND_DOWN):
            raise Invalid("quote_amount invalid: at most 2 decimal places", field="quote_amount")
        base = (counter / price).quantize(BASE_PLACES, ROUND_DOWN if buy else ROUND_UP)
        field = "quote_amount"
    if base <= ZERO or counter <= ZERO:
        raise Invalid(f"{field} invalid: too small to trade at price {quote['price']}", field=field)
    return base, counter


def create_execution(ctx: Ctx, cmd: CreateQuoteExecution) -> dict[str, Any]:
    state = ctx.state
    metadata = check_metadata(cmd.metadata)
    if cmd.ref_id is not None and not 0 < len(cmd.ref_id) <= _MAX_REF_ID:
        raise Invalid(f"ref_id invalid: 1 to {_MAX_REF_ID} characters", field="ref_id")
    customer_id = cmd.actor.customer_id
    profile = resolve_profile(state, customer_id, cmd.profile_id)
    pid = profile["id"]
    recipient = pid
    if cmd.recipient_profile_id is not None:
        recipient = resolve_profile(state, customer_id, cmd.recipient_profile_id)["id"]
    if cmd.ref_id is not None:
        existing = _refs(state).get((pid, cmd.ref_id))
        if existing is not None:
            raise AlreadyExists(
                f"quote execution already exists with ref_id '{cmd.ref_id}'",
                execution_view(executions(state)[existing]),
            )
    quote = _quotes(state).get(cmd.quote_id)
    if quote is None:
        dropped = _dropped_expiry(ctx, cmd.quote_id)
        if dropped is None:
            raise NotFound(f"quote not found with id {cmd.quote_id[:64]}")
        expired_at = format_time(dropped)
        raise Expired(f"quote {cmd.quote_id[:64]} expired at {expired_at}", expired_at)
    if ctx.now >= parse_time(quote["expires_at"]):
        raise Expired(f"quote {quote['id']} expired at {quote['expires_at']}", quote["expires_at"])
    used = quote.get("used", {}).get(customer_id)
    if used is not None:
        raise Rejected(
            f"quote {quote['id']} was already executed by quote execution {used}",
            meta={"quote_id": quote["id"], "quote_execution_id": used},
        )
    check_acting(state, customer_id, cmd.identity_id, cmd.account_id, action="trade")
    base, counter = _amounts(quote, cmd)
    base_asset, quote_asset = quote["base_asset"], quote["quote_asset"]
    buy = quote["side"] == "BUY"
    paid_asset, paid, got_asset, got = (
        (quote_asset, counter, base_asset, base)
        if buy
        else (base_asset, base, quote_asset, counter)
    )
    funds = state.ledger.balance(available(pid), paid_asset)
    if funds < paid:
        raise InsufficientFunds(pid, paid_asset, format_normal(funds), format_normal(paid))
    execution = {
        "id": ctx.ids.uuid(),
        "customer_id": customer_id,
        "profile_id": pid,
        "quote_id": quote["id"],
        "ref_id": cmd.ref_id,
        "status": "SETTLED",
        "market": quote["market"],
        "side": quote["side"],
        "price": quote["price"],
        "base_amount": format_normal(base),
        "base_asset": base_asset,
        "quote_amount": format_amount(counter.quantize(QUOTE_PLACES)),
        "quote_asset": quote_asset,
        "created_at": ctx.now_text,
        "settled_at": ctx.now_text,
        "metadata": metadata,
        "identity_id": cmd.identity_id,
        "account_id": cmd.account_id,
        "recipient_profile_id": cmd.recipient_profile_id,
    }
    postings: list[Posting] = [
        (available(pid), HOUSE, paid_asset, paid),
        (HOUSE, available(recipient), got_asset, got),
    ]
    ctx.emit(
        "QuoteExecuted",
        f"quote-execution-{execution['id']}",
        {"execution": execution, "postings": encode_postings(postings)},
    )
    return execution_view(execution)


def execution_view(execution: dict[str, Any]) -> dict[str, Any]:
    """The QuoteExecution as the reference shapes it: optional fields only when set."""
    return {k: v for k, v in execution.items() if k not in _PRIVATE and v is not None}


# -- appliers -------------------------------------------------------------------------


def _issued(state: State, e: Event) -> None:
    """Held until the batch expires; each market's pair becomes its live one. The
    batch's `customer_id` is the caller whose read issued it; every caller may execute
    it."""
    data = e.data
    quotes = _quotes(state)
    expires = parse_time(data["expires_at"])
    live = _live(state)
    ids = []
    for q in data["quotes"]:
        quotes[q["id"]] = {**q, "expires_at": data["expires_at"]}
        ids.append(q["id"])
    for buy, sell in zip(data["quotes"][::2], data["quotes"][1::2], strict=True):
        live[buy["market"]] = (expires, buy["id"], sell["id"])
    _batches(state)[data["batch_id"]] = ids
    state.timers.add(expires, "quote_expiry", data["batch_id"])


def _expired(state: State, e: Event) -> None:
    """Expired quotes leave the state: what it holds is bounded by the live ones."""
    quotes = _quotes(state)
    live = _live(state)
    for quote_id in _batches(state).pop(e.data["batch_id"], ()):
        market = quotes.pop(quote_id)["market"]
        if quote_id in live.get(market, ())[1:]:
            del live[market]


def _executed(state: State, e: Event) -> None:
    execution = dict(e.data["execution"])
    execution["seq"] = e.position
    eid = execution["id"]
    executions(state)[eid] = execution
    if execution["ref_id"] is not None:
        _refs(state)[(execution["profile_id"], execution["ref_id"])] = eid
    quote = _quotes(state).get(execution["quote_id"])
    if quote is not None:
        quote.setdefault("used", {})[execution["customer_id"]] = eid
    post(state, e.data["postings"])
    state.mark("quote_execution", eid)


DECIDERS = {IssueQuotes: issue_quotes, CreateQuoteExecution: create_execution}
APPLIERS = {"QuotesIssued": _issued, "QuotesExpired": _expired, "QuoteExecuted": _executed}
TIMERS = {"quote_expiry": expire_quotes}


def _row(state: State, key: str) -> dict[str, Any] | None:
    x = executions(state).get(key)
    if x is None:
        return None
    return {
        "id": x["id"],
        "customer_id": x["customer_id"],
        "profile_id": x["profile_id"],
        "ref_id": x["ref_id"],
        "market": x["market"],
        "side": x["side"],
        "status": x["status"],
        "created_at": x["created_at"],
        "seq": x["seq"],
        "body": orjson.dumps(execution_view(x)).decode(),
    }


TABLE = ReadModelTable(
    "quote_executions",
    {
        "id": str,
        "customer_id": str,
        "profile_id": str,
        "ref_id": str,
        "market": str,
        "side": str,
        "status": str,
        "created_at": str,
        "seq": int,
        "body": str,
    },
    pk=("id",),
    kind="quote_execution",
    row=_row,
    key_columns=("id",),
    keys=lambda s: executions(s).keys(),
)
REGISTRATION = Registration(DECIDERS, APPLIERS, TIMERS, tables=(TABLE,))
