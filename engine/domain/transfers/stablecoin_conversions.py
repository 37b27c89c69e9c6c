"""Stablecoin conversions: USD to a Paxos stablecoin (USDP, PYUSD, USDG) or back, 1:1.

As the service does it: the source asset leaves the profile's available balance when
the conversion is CREATED (into its `converting` account, so it cannot be spent twice),
and the target asset is credited when it is SETTLED, `conversion_settle_seconds` of
engine time later (a timer). Until then it may be cancelled (CANCELLED), which returns
the source. Settlement converts at par through the external `conversion` account, as a
withdrawal paid from another balance does.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import orjson

from sandex.engine.domain import sandbox_pacing
from sandex.engine.domain.customers import active_profile
from sandex.engine.domain.identity.permissions import check_acting
from sandex.engine.domain.ledger import available, converting
from sandex.engine.domain.metadata import check_metadata
from sandex.engine.domain.transfers.transfer_records import post
from sandex.engine.domain.transfers.withdrawals import CONVERSION
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.commands import CancelStablecoinConversion, CreateStablecoinConversion
from sandex.engine.kernel.errors import (
    AlreadyExists,
    Conflict,
    ExceedPrecision,
    InsufficientFunds,
    Invalid,
    NotFound,
)
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.ledger import encode_postings
from sandex.engine.kernel.money import (
    ASSET_PRECISION,
    debit_places,
    decimals,
    format_amount,
    format_normal,
    parse_amount,
)
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

STABLECOINS = ("USDP", "PYUSD", "USDG")
# What the service answers for identity and account ids a request leaves out.
NO_ID = "00000000-0000-0000-0000-000000000000"
_MAX_REF_ID = 128
_INTERNAL = frozenset({"customer_id", "seq", "due_at"})


def conversions(state: State) -> dict[str, dict[str, Any]]:
    return state.ext.setdefault("stablecoin_conversions", {})  # type: ignore[no-any-return]


def _refs(state: State) -> dict[tuple[str, str], str]:
    return state.ext.setdefault("stablecoin_conversion_refs", {})  # type: ignore[no-any-return]


def conversion_view(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if v is not None and k not in _INTERNAL}


def _pair(source: str, target: str) -> None:
    for name, asset in (("source_asset", source), ("target_asset", target)):
        if asset != "USD" and asset not in STABLECOINS:
            raise Invalid(
                f"{name} invalid: '{asset[:32]}' is not convertible; one of USD,"
                f" {', '.join(STABLECOINS)}",
                field=name,
            )
    if (source == "USD") == (target == "USD"):
        raise Invalid(
            f"target_asset invalid: a conversion is from USD to one of {', '.join(STABLECOINS)}"
            f" or back, not {source} to {target}",
            field="target_asset",
        )


def _precision(amount: Decimal, source: str, target: str, held: Decimal) -> None:
    """The amount leaves one balance and lands in the other asset: at most the places of
    both, the source's being those of a debit from a balance that holds `held`."""
    source_places = debit_places(source, held)
    places = min(source_places, ASSET_PRECISION[target])
    if decimals(amount) > places:
        named = source if source_places == places else target
        raise ExceedPrecision(named, ASSET_PRECISION[named], "amount")


def create_conversion(ctx: Ctx, cmd: CreateStablecoinConversion) -> dict[str, Any]:
    state = ctx.state
    _pair(cmd.source_asset, cmd.target_asset)
    amount = parse_amount(cmd.amount, "amount")
    limit = ctx.settings.conversion_max_amount
    if amount > limit:
        raise Invalid(
            f"{format_amount(amount)} amount is above the maximum {format_normal(limit)} USD",
            field="amount",
        )
    metadata = check_metadata(cmd.metadata)
    if cmd.ref_id is not None and not 0 < len(cmd.ref_id) <= _MAX_REF_ID:
        raise Invalid(f"ref_id invalid: 1 to {_MAX_REF_ID} characters", field="ref_id")
    customer_id = cmd.actor.customer_id
    profile = active_profile(state, customer_id, cmd.profile_id)
    recipient = None
    if cmd.recipient_profile_id is not None:
        recipient = active_profile(
            state, customer_id, cmd.recipient_profile_id, "recipient_profile_id"
        )["id"]
    check_acting(state, customer_id, cmd.identity_id, cmd.account_id, action="convert")
    if cmd.ref_id is not None:
        existing = _refs(state).get((customer_id, cmd.ref_id))
        if existing is not None:
            raise AlreadyExists(
                f"conversion already exists with ref_id '{cmd.ref_id}'",
                conversion_view(conversions(state)[existing]),
            )
    pid = profile["id"]
    held = state.ledger.balance(available(pid), cmd.source_asset)
    _precision(amount, cmd.source_asset, cmd.target_asset, held)
    if held < amount:
        raise InsufficientFunds(pid, cmd.source_asset, format_normal(held), format_amount(amount))
    pace = sandbox_pacing.pace(ctx, "conversion", ctx.settings.conversion_settle_seconds)
    record = {
        "id": ctx.ids.uuid(),
        "customer_id": customer_id,
        "profile_id": pid,
        "amount": format_amount(amount),
        "source_asset": cmd.source_asset,
        "target_asset": cmd.target_asset,
        "status": "CREATED",
        "ref_id": cmd.ref_id,
        "identity_id": cmd.identity_id or NO_ID,
        "account_id": cmd.account_id or NO_ID,
        "created_at": ctx.now_text,
        "updated_at": ctx.now_text,
        "metadata": metadata,
        "recipient_profile_id": recipient,
        "due_at": pace.due_text,
    }
    ctx.emit(
        "StablecoinConversionCreated",
        f"conversion-{record['id']}",
        {
            "conversion": record,
            "postings": encode_postings(
                [(available(pid), converting(pid), cmd.source_asset, amount)]
            ),
        },
    )
    if pace.polls is not None:
        sandbox_pacing.await_polls(ctx, "conversion", record["id"], customer_id, pace.polls)
    if pace.due is not None and pace.due <= ctx.now:
        settle(ctx, record["id"])
    return conversion_view(conversions(state)[record["id"]])


def cancel_conversion(ctx: Ctx, cmd: CancelStablecoinConversion) -> dict[str, Any]:
    """Only a CREATED conversion is cancelled: the source returns to the profile."""
    state = ctx.state
    record = conversions(state).get(cmd.conversion_id)
    if record is None or record["customer_id"] != cmd.actor.customer_id:
        raise NotFound(
            f"conversion with id {cmd.conversion_id[:64]} not found for customer with id"
            f" {cmd.actor.customer_id}"
        )
    if record["status"] != "CREATED":
        raise Conflict(
            f"conversion {record['id']} is {record['status']}: only a CREATED conversion"
            " can be cancelled",
            meta={"status": record["status"]},
        )
    pid, asset, amount = record["profile_id"], record["source_asset"], Decimal(record["amount"])
    ctx.emit(
        "StablecoinConversionCancelled",
        f"conversion-{record['id']}",
        {
            "conversion_id": record["id"],
            "postings": encode_postings([(converting(pid), available(pid), asset, amount)]),
        },
    )
    return conversion_view(record)


def settle(ctx: Ctx, conversion_id: str) -> None:
    """The timer at `due_at`: the source is converted at par and the target credited."""
    record = conversions(ctx.state).get(conversion_id)
    if record is None or record["status"] != "CREATED":
        return
    pid = record["profile_id"]
    to = record.get("recipient_profile_id") or pid
    amount = Decimal(record["amount"])
    postings = [
        (converting(pid), CONVERSION, record["source_asset"], amount),
        (CONVERSION, available(to), record["target_asset"], amount),
    ]
    ctx.emit(
        "StablecoinConversionSettled",
        f"conversion-{conversion_id}",
        {"conversion_id": conversion_id, "postings": encode_postings(postings)},
    )


# -- appliers ---------------------------------------------------------------------------


def _created(state: State, e: Event) -> None:
    record = dict(e.data["conversion"])
    record["seq"] = e.position
    conversions(state)[record["id"]] = record
    if record.get("ref_id"):
        _refs(state)[(record["customer_id"], record["ref_id"])] = record["id"]
    post(state, e.data["postings"])
    if record["due_at"] is not None:  # None: paced by polls or by hand
        state.timers.add(
            parse_time(record["due_at"]), "stablecoin_conversion_settlement", record["id"]
        )
    state.mark("stablecoin_conversion", record["id"])


def _ended(status: str, stamp: str) -> Callable[[State, Event], None]:
    """The applier of a conversion's last event: SETTLED or CANCELLED, at its time."""

    def apply(state: State, e: Event) -> None:
        record = conversions(state)[e.data["conversion_id"]]
        record["status"] = status
        record["updated_at"] = e.occurred_at
        record[stamp] = e.occurred_at
        post(state, e.data["postings"])
        state.mark("stablecoin_conversion", record["id"])

    return apply


def check_converting(state: State) -> list[str]:
    """Every profile's `converting` account equals its CREATED conversions' amounts."""
    expected: dict[tuple[str, str], Decimal] = {}
    for c in conversions(state).values():
        if c["status"] == "CREATED":
            key = (converting(c["profile_id"]), c["source_asset"])
            expected[key] = expected.get(key, Decimal(0)) + Decimal(c["amount"])
    problems = []
    for (account, asset), value in state.ledger.balances.items():
        if account.endswith(":converting") and value != expected.pop((account, asset), Decimal(0)):
            problems.append(f"{account} {asset} is {value}, CREATED conversions differ")
    for (account, asset), value in expected.items():
        problems.append(f"{account} {asset} missing, CREATED conversions total {value}")
    return problems


def _row(state: State, key: str) -> dict[str, Any] | None:
    c = conversions(state).get(key)
    if c is None:
        return None
    return {
        "id": c["id"],
        "customer_id": c["customer_id"],
        "profile_id": c["profile_id"],
        "ref_id": c.get("ref_id"),
        "status": c["status"],
        "created_at": c["created_at"],
        "updated_at": c["updated_at"],
        "seq": c["seq"],
        "body": orjson.dumps(conversion_view(c)).decode(),
    }


TABLE = ReadModelTable(
    "stablecoin_conversions",
    {
        "id": str,
        "customer_id": str,
        "profile_id": str,
        "ref_id": str,
        "status": str,
        "created_at": str,
        "updated_at": str,
        "seq": int,
        "body": str,
    },
    pk=("id",),
    kind="stablecoin_conversion",
    row=_row,
    key_columns=("id",),
    keys=lambda s: conversions(s).keys(),
)

REGISTRATION = Registration(
    deciders={
        CreateStablecoinConversion: create_conversion,
        CancelStablecoinConversion: cancel_conversion,
    },
    appliers={
        "StablecoinConversionCreated": _created,
        "StablecoinConversionSettled": _ended("SETTLED", "settled_at"),
        "StablecoinConversionCancelled": _ended("CANCELLED", "cancelled_at"),
    },
    timers={"stablecoin_conversion_settlement": settle},
    tables=(TABLE,),
    checks=(check_converting,),
)
