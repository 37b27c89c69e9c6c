"""Funding a profile: sandbox deposits, fiat deposit instructions and sandbox wires."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import orjson

from sandex.engine.domain import sandbox_pacing, sandbox_triggers
from sandex.engine.domain.customers import active_profile
from sandex.engine.domain.identity.permissions import check_acting
from sandex.engine.domain.ledger import FEES, WORLD, available
from sandex.engine.domain.metadata import check_metadata
from sandex.engine.domain.transfers import transfer_records
from sandex.engine.domain.transfers.networks import (
    CRYPTO_NETWORKS,
    FIAT_DEPOSIT_NETWORKS,
    check_asset_network,
)
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.commands import (
    CreateFiatDepositInstructions,
    InitiateFiatDeposit,
    SandboxDeposit,
)
from sandex.engine.kernel.errors import AlreadyExists, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.money import (
    ASSETS,
    ZERO,
    check_precision,
    decimals,
    format_amount,
    parse_amount,
)
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

INSTRUCTIONS_STATUSES = ("VALID", "DEPRECATED")
ROUTING_TYPES = ("ABA", "SWIFT")

# Where a sandbox customer is told to send a wire: the simulated platform's bank.
_PLATFORM_BANK = {
    "ABA": {"routing_number": "021000021", "bank_name": "Sandex Sandbox Bank"},
    "SWIFT": {"routing_number": "SNDXUS33XXX", "bank_name": "Sandex Sandbox Bank"},
}
_BANK_ADDRESS = {
    "country": "US",
    "address1": "1 Sandbox Plaza",
    "city": "New York",
    "province": "NY",
    "zip_code": "10004",
}


def instructions_view(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if v is not None and k not in ("seq", "customer_id")}


# -- decisions ----------------------------------------------------------------------


def sandbox_deposit(ctx: Ctx, cmd: SandboxDeposit) -> dict[str, Any]:
    profile = active_profile(ctx.state, cmd.actor.customer_id, cmd.profile_id)
    asset = cmd.asset
    if asset not in ASSETS:
        raise Invalid(f"asset invalid: unknown asset '{asset}'", field="asset")
    amount = parse_amount(cmd.amount, "amount")
    check_precision(amount, asset, "amount")
    network = cmd.crypto_network
    if network is not None:
        if network not in CRYPTO_NETWORKS:
            raise Invalid(
                f"crypto_network invalid: unknown network '{network}'", field="crypto_network"
            )
        problem = check_asset_network(asset, network)
        if problem:
            raise Invalid(f"crypto_network invalid: {problem}", field="crypto_network")
    record = {
        "customer_id": profile["customer_id"],
        "profile_id": profile["id"],
        "amount": format_amount(amount),
        "total": format_amount(amount),
        "fee": "0",
        "asset": asset,
        "balance_asset": asset,
        "direction": "CREDIT",
        "type": "CRYPTO_DEPOSIT" if network else "WIRE_DEPOSIT",
        "status": "COMPLETED",
        "crypto_network": network,
        "crypto_tx_hash": ctx.ids.hex() if network else None,
        "crypto_tx_index": "0" if network else None,
        "destination_address": cmd.crypto_address if network else None,
    }
    transfer = transfer_records.create(
        ctx, record, [(WORLD, available(profile["id"]), asset, amount)]
    )
    return {"activity_id": transfer["id"]}


def create_fiat_deposit_instructions(
    ctx: Ctx, cmd: CreateFiatDepositInstructions
) -> dict[str, Any]:
    state = ctx.state
    profile = active_profile(state, cmd.actor.customer_id, cmd.profile_id)
    if cmd.fiat_network not in FIAT_DEPOSIT_NETWORKS:
        raise Invalid(
            f"fiat_network invalid: unknown network '{cmd.fiat_network}'", field="fiat_network"
        )
    if cmd.fiat_network != "WIRE":
        raise Invalid(
            f"fiat_network invalid: only WIRE is simulated by this sandbox, not {cmd.fiat_network}",
            field="fiat_network",
        )
    routing_type = cmd.routing_number_type or "ABA"
    if routing_type not in ROUTING_TYPES:
        raise Invalid(
            f"routing_number_type invalid: unknown value '{routing_type}'",
            field="routing_number_type",
        )
    metadata = check_metadata(cmd.metadata)
    check_acting(state, profile["customer_id"], cmd.identity_id, cmd.account_id, action="deposit")
    if cmd.ref_id is not None:
        if not cmd.ref_id or len(cmd.ref_id) > 128:
            raise Invalid("ref_id invalid: 1 to 128 characters", field="ref_id")
        for record in state.fiat_instructions.values():
            if (
                record["customer_id"] == profile["customer_id"]
                and record.get("ref_id") == cmd.ref_id
            ):
                raise AlreadyExists(
                    f"fiat deposit instructions already exist with ref_id '{cmd.ref_id}'",
                    instructions_view(record),
                )
    memo_id = ctx.ids.code(10)
    while memo_id in state.memos:
        memo_id = ctx.ids.code(10)
    instructions_id = ctx.ids.uuid()
    record = {
        "id": instructions_id,
        "customer_id": profile["customer_id"],
        "profile_id": profile["id"],
        "identity_id": cmd.identity_id or "",
        "account_id": cmd.account_id,
        "ref_id": cmd.ref_id,
        "status": INSTRUCTIONS_STATUSES[0],
        "memo_id": memo_id,
        "fiat_network_instructions": {
            "wire": {
                "account_number": "4000" + ctx.ids.code(8).translate(_DIGITS),
                "fiat_account_owner_address": dict(_BANK_ADDRESS),
                "routing_details": {
                    "routing_number_type": routing_type,
                    **_PLATFORM_BANK[routing_type],
                    "bank_address": dict(_BANK_ADDRESS),
                },
            }
        },
        "fiat_account_owner": {"institution_details": {"name": "Sandex Sandbox Trust"}},
        "metadata": metadata,
        "created_at": ctx.now_text,
    }
    ctx.emit(
        "FiatDepositInstructionsCreated",
        f"fiat-instructions-{instructions_id}",
        {"instructions": record},
    )
    return instructions_view(state.fiat_instructions[instructions_id])


_DIGITS = str.maketrans("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", "01234567890123456789012345678901")


def initiate_fiat_deposit(ctx: Ctx, cmd: InitiateFiatDeposit) -> dict[str, Any]:
    state = ctx.state
    if cmd.asset != "USD":
        raise Invalid(f"asset invalid: only USD is supported, not '{cmd.asset}'", field="asset")
    amount = parse_amount(cmd.amount, "amount")
    if decimals(amount) > 2:
        raise Invalid("amount invalid: at most 2 decimal places", field="amount")
    if not cmd.fiat_network_instructions or not cmd.fiat_network_instructions.get("wire"):
        raise Invalid("fiat network instructions required", field="fiat_network_instructions")
    instructions_id = state.memos.get(cmd.memo_id)
    record = state.fiat_instructions.get(instructions_id) if instructions_id else None
    if record is None or record["customer_id"] != cmd.actor.customer_id:
        raise NotFound(f"fiat deposit instructions not found with memo_id {cmd.memo_id}")
    deposit_id = ctx.ids.uuid()
    pace = _fiat_pace(ctx, record.get("metadata"))
    due = pace.due
    ctx.emit(
        "FiatDepositInitiated",
        f"fiat-deposit-{deposit_id}",
        {
            "deposit_id": deposit_id,
            "memo_id": cmd.memo_id,
            "profile_id": record["profile_id"],
            "customer_id": record["customer_id"],
            "amount": format_amount(amount),
            "fee": format_amount(ctx.settings.wire_fee),
            "due_at": pace.due_text,
            "fiat_network_instructions": cmd.fiat_network_instructions,
            "fiat_account_owner": cmd.fiat_account_owner,
        },
    )
    if due is None:
        # Held, or paced by polls or by hand: the wire shows as a PENDING transfer until
        # it is polled or released (sandex.engine.domain.transfers.pending).
        transfer_id = _open(ctx, deposit_id)
        ctx.emit(
            "FiatDepositHeld",
            f"fiat-deposit-{deposit_id}",
            {"deposit_id": deposit_id, "transfer_id": transfer_id},
        )
        if pace.polls is not None:
            sandbox_pacing.await_polls(
                ctx, "fiat_deposit", transfer_id, record["customer_id"], pace.polls
            )
    elif due <= ctx.now:
        credit_fiat_deposit(ctx, deposit_id)
    return {}


def _fiat_pace(ctx: Ctx, metadata: dict[str, str] | None) -> sandbox_pacing.Pace:
    """A wire to instructions whose metadata hold or delay it, else the world's pace."""
    if sandbox_triggers.HOLD in sandbox_triggers.metadata_values(metadata):
        return sandbox_pacing.Pace(None)
    delay = sandbox_triggers.delay_of(metadata)
    if delay is not None:
        return sandbox_pacing.Pace(ctx.now + timedelta(microseconds=int(delay * 1_000_000)))
    return sandbox_pacing.pace(ctx, "fiat_deposit", ctx.settings.fiat_deposit_delay_seconds)


def credit_fiat_deposit(ctx: Ctx, deposit_id: str) -> None:
    """The wire arrives: a WIRE_DEPOSIT credit, the fee to the platform."""
    pending = ctx.state.pending_fiat.get(deposit_id)
    if pending is None or pending.get("transfer_id"):
        return
    settle_fiat_deposit(ctx, deposit_id, _open(ctx, deposit_id))


def held_fiat_deposit(state: State, transfer_id: str) -> str | None:
    """The sandbox fiat deposit whose PENDING transfer `transfer_id` is, if one is."""
    return _held_deposits(state).get(transfer_id)


def _held_deposits(state: State) -> dict[str, str]:
    return state.ext.setdefault("held_fiat_deposits", {})  # type: ignore[no-any-return]


def _open(ctx: Ctx, deposit_id: str) -> str:
    """The wire's WIRE_DEPOSIT transfer, PENDING."""
    pending = ctx.state.pending_fiat[deposit_id]
    amount = Decimal(pending["amount"])
    fee = Decimal(pending["fee"])
    total = amount - fee
    profile_id = pending["profile_id"]
    instructions = ctx.state.fiat_instructions[ctx.state.memos[pending["memo_id"]]]
    record: dict[str, Any] = {
        "customer_id": pending["customer_id"],
        "profile_id": profile_id,
        "amount": format_amount(amount),
        "fee": format_amount(fee),
        "total": format_amount(total if total > ZERO else ZERO),
        "asset": "USD",
        "balance_asset": "USD",
        "direction": "CREDIT",
        "type": "WIRE_DEPOSIT",
        "status": "PENDING",
        "memo": pending["memo_id"],
        "metadata": instructions.get("metadata"),
        "identity_id": instructions.get("identity_id") or None,
    }
    return str(transfer_records.create(ctx, record, [])["id"])


def settle_fiat_deposit(
    ctx: Ctx, deposit_id: str, transfer_id: str, *, fail: bool = False, reason: str | None = None
) -> None:
    """The wire's PENDING transfer credited (amount less the fee), or FAILED: a wire
    that does not cover the fee, or one released to fail."""
    pending = ctx.state.pending_fiat[deposit_id]
    fee = Decimal(pending["fee"])
    total = Decimal(pending["amount"]) - fee
    profile_id = pending["profile_id"]
    if fail or total <= ZERO:
        why = "the wire amount does not cover the wire fee" if not fail else None
        details = {"reason": why or reason or "released to fail"}
        transfer_records.fail(ctx, transfer_id, {"status_details": details}, [])
    else:
        postings = [(WORLD, available(profile_id), "USD", total)]
        if fee > ZERO:
            postings.append((WORLD, FEES, "USD", fee))
        transfer_records.complete(ctx, transfer_id, {}, postings)
    ctx.emit(
        "FiatDepositCredited",
        f"fiat-deposit-{deposit_id}",
        {"deposit_id": deposit_id, "transfer_id": transfer_id},
    )


# -- appliers -------------------------------------------------------------------------


def _instructions_created(state: State, e: Event) -> None:
    record = dict(e.data["instructions"])
    record["seq"] = e.position
    state.fiat_instructions[record["id"]] = record
    state.memos[record["memo_id"]] = record["id"]
    state.mark("fiat_instructions", record["id"])


def _fiat_initiated(state: State, e: Event) -> None:
    state.pending_fiat[e.data["deposit_id"]] = dict(e.data)
    if e.data["due_at"] is not None:  # None: held, or paced by polls or by hand
        state.timers.add(parse_time(e.data["due_at"]), "fiat_deposit", e.data["deposit_id"])


def _fiat_held(state: State, e: Event) -> None:
    state.pending_fiat[e.data["deposit_id"]]["transfer_id"] = e.data["transfer_id"]
    _held_deposits(state)[e.data["transfer_id"]] = e.data["deposit_id"]


def _fiat_credited(state: State, e: Event) -> None:
    state.pending_fiat.pop(e.data["deposit_id"], None)
    _held_deposits(state).pop(e.data["transfer_id"], None)


DECIDERS = {
    SandboxDeposit: sandbox_deposit,
    CreateFiatDepositInstructions: create_fiat_deposit_instructions,
    InitiateFiatDeposit: initiate_fiat_deposit,
}

APPLIERS = {
    "FiatDepositInstructionsCreated": _instructions_created,
    "FiatDepositInitiated": _fiat_initiated,
    "FiatDepositHeld": _fiat_held,
    "FiatDepositCredited": _fiat_credited,
}

TIMERS = {"fiat_deposit": credit_fiat_deposit}


def _instructions_row(state: State, key: str) -> dict[str, Any] | None:
    r = state.fiat_instructions.get(key)
    if r is None:
        return None
    return {
        "id": r["id"],
        "customer_id": r["customer_id"],
        "profile_id": r["profile_id"],
        "ref_id": r.get("ref_id"),
        "memo_id": r["memo_id"],
        "created_at": r["created_at"],
        "seq": r["seq"],
        "body": orjson.dumps(instructions_view(r)).decode(),
    }


TABLE = ReadModelTable(
    "fiat_instructions",
    {
        "id": str,
        "customer_id": str,
        "profile_id": str,
        "ref_id": str,
        "memo_id": str,
        "created_at": str,
        "seq": int,
        "body": str,
    },
    pk=("id",),
    kind="fiat_instructions",
    row=_instructions_row,
    key_columns=("id",),
    keys=lambda s: s.fiat_instructions.keys(),
)
REGISTRATION = Registration(DECIDERS, APPLIERS, TIMERS, tables=(TABLE,))
