"""Held-rate quotes and their executions.

A quote is a price to buy or to sell on a market, held until `expires_at`: the market's
reference price plus or minus the configured spread (`quote_spread_bps`), rounded to the
market's tick against the customer. Each `GET /v2/quotes` issues a batch for its caller
(`QuotesIssued`); a timer on the engine clock expires the batch (`QuotesExpired`), as
fee quotes expire, so a replayed log answers "was this quote still valid" exactly as
the live engine did. An execution moves the funds at the held price between the profile
and the house in one event (`QuoteExecuted`) and is settled at once; a quote is executed
at most once.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import ROUND_CEILING, ROUND_DOWN, ROUND_FLOOR, ROUND_UP, Decimal
from typing import Any

import orjson

from engine.domain.customers import resolve_profile
from engine.domain.identity.permissions import check_acting
from engine.domain.ledger import HOUSE, available
from engine.domain.metadata import check_metadata
from engine.domain.trading.trading_state import live_trading, market_config
from engine.domain.transfers.transfer_records import post
from engine.kernel.clock import format_time, parse_time
from engine.kernel.commands import CreateQuoteExecution, IssueQuotes
from engine.kernel.errors import (
    AlreadyExists,
    Expired,
    InsufficientFunds,
    Invalid,
    NotFound,
    Rejected,
)
from engine.kernel.events import Event
from engine.kernel.ledger import Posting, encode_postings
from engine.kernel.money import (
    MARKETS,
    ZERO,
    check_precision,
    format_amount,
    format_normal,
    parse_amount,
)
from engine.kernel.read_model_spec import ReadModelTable
from engine.kernel.registry import Registration
from engine.kernel.state import Ctx, State

# The markets the reference's Quote schema knows (its Market enum), in its order.
QUOTE_MARKETS: tuple[str, ...] = tuple(MARKETS)
# Precision of an execution's amounts as the reference states it (base 8, quote 2); its
# examples show the quote amount with both places ("100.00").
BASE_PLACES = Decimal("0.00000001")
QUOTE_PLACES = Decimal("0.01")
_MAX_REF_ID = 128
_PRIVATE = frozenset({"customer_id", "seq"})
_PUBLIC = ("id", "market", "side", "price", "base_asset", "quote_asset", "created_at")


def _quotes(state: State) -> dict[str, dict[str, Any]]:
    return state.ext.setdefault("quotes", {})  # type: ignore[no-any-return]


def _batches(state: State) -> dict[str, list[str]]:
    return state.ext.setdefault("quote_batches", {})  # type: ignore[no-any-return]


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


def issue_quotes(ctx: Ctx, cmd: IssueQuotes) -> dict[str, Any]:
    markets = list(dict.fromkeys(cmd.markets)) or list(QUOTE_MARKETS)
    for market in markets:
        if market not in MARKETS:
            raise Invalid(f"markets invalid: unknown market '{market[:32]}'", field="markets")
    ttl = ctx.settings.quote_ttl_seconds
    expires = format_time(ctx.now + timedelta(microseconds=int(ttl * 1_000_000)))
    quotes = []
    for market in markets:
        spec = MARKETS[market]
        for side, price in zip(("BUY", "SELL"), _prices(ctx, market), strict=True):
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
    return {"items": [quote_view(q, expires) for q in quotes]}


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
    if quote is None or quote["customer_id"] != customer_id:
        raise NotFound(f"quote not found with id {cmd.quote_id[:64]}")
    if quote["status"] == "EXPIRED" or ctx.now >= parse_time(quote["expires_at"]):
        raise Expired(f"quote {quote['id']} expired at {quote['expires_at']}", quote["expires_at"])
    if quote["status"] == "USED":
        raise Rejected(
            f"quote {quote['id']} was already executed by quote execution {quote['execution_id']}",
            meta={"quote_id": quote["id"], "quote_execution_id": quote["execution_id"]},
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
    data = e.data
    quotes = _quotes(state)
    ids = []
    for q in data["quotes"]:
        quotes[q["id"]] = {
            **q,
            "customer_id": data["customer_id"],
            "expires_at": data["expires_at"],
            "status": "ACTIVE",
        }
        ids.append(q["id"])
    _batches(state)[data["batch_id"]] = ids
    state.timers.add(parse_time(data["expires_at"]), "quote_expiry", data["batch_id"])


def _expired(state: State, e: Event) -> None:
    """An expired quote is kept only as far as its refusal needs: its owner and expiry."""
    quotes = _quotes(state)
    for quote_id in _batches(state).pop(e.data["batch_id"], ()):
        q = quotes[quote_id]
        quotes[quote_id] = {
            "id": quote_id,
            "customer_id": q["customer_id"],
            "expires_at": q["expires_at"],
            "status": "EXPIRED",
        }


def _executed(state: State, e: Event) -> None:
    execution = dict(e.data["execution"])
    execution["seq"] = e.position
    eid = execution["id"]
    executions(state)[eid] = execution
    if execution["ref_id"] is not None:
        _refs(state)[(execution["profile_id"], execution["ref_id"])] = eid
    quote = _quotes(state).get(execution["quote_id"])
    if quote is not None:
        quote["status"] = "USED"
        quote["execution_id"] = eid
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
