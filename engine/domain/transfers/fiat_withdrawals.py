"""Fiat withdrawals: USD from a profile to one of the customer's APPROVED fiat accounts.

Like a crypto withdrawal: the request moves `total` (the amount and the network's fee)
from the profile's available balance into its withdrawal hold, in the event that creates
the PENDING transfer (WIRE_WITHDRAWAL, CUBIX_WITHDRAWAL or CBIT_WITHDRAWAL, by the
account's network); a timer `fiat_withdrawal_seconds` later either posts the hold to the
outside world (`amount`) and the platform's fee income (`fee`), or, when the memo is
one of the failure triggers (sandex.engine.domain.sandbox_triggers), voids it back to the
profile (FAILED). The world's pacing of withdrawals, or the memo "sandbox:hold", may
leave it PENDING until polled or released.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sandex.engine.config.settings import Settings
from sandex.engine.domain import sandbox_pacing, sandbox_triggers
from sandex.engine.domain.customers import active_profile
from sandex.engine.domain.identity.permissions import check_acting
from sandex.engine.domain.ledger import FEES, WORLD, available, withdrawing
from sandex.engine.domain.metadata import check_metadata
from sandex.engine.domain.transfers import transfer_records
from sandex.engine.domain.transfers.fiat_accounts import network_of, owned_account
from sandex.engine.domain.transfers.withdrawals import fail_as_asked, paced
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.commands import CreateFiatWithdrawal
from sandex.engine.kernel.errors import (
    AlreadyExists,
    ExceedMaxWithdraw,
    InsufficientFunds,
    Invalid,
    NotFound,
)
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.ledger import Posting
from sandex.engine.kernel.money import ZERO, decimals, format_amount, format_normal, parse_amount
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

# The transfer type of a withdrawal to an account of each network the sandbox pays out
# on; DBS_ACT and SCB have no withdrawal type in the service's TransferType.
TRANSFER_TYPES = {"WIRE": "WIRE_WITHDRAWAL", "CUBIX": "CUBIX_WITHDRAWAL", "CBIT": "CBIT_WITHDRAWAL"}
# The memo's limit per network, as the service states them.
MEMO_LIMITS = {"WIRE": 100, "CUBIX": 40, "CBIT": 100}
_MAX_REF_ID = 128


def fee(settings: Settings, network: str) -> Decimal:
    """A wire's fee; intrabank networks (CUBIX, CBIT) charge none."""
    return settings.wire_withdrawal_fee if network == "WIRE" else ZERO


def _sizing(cmd: CreateFiatWithdrawal) -> tuple[str, Decimal]:
    if (cmd.amount is None) == (cmd.total is None):
        raise Invalid("exactly one of amount and total is required", field="amount")
    field, text = ("amount", cmd.amount) if cmd.amount is not None else ("total", cmd.total)
    value = parse_amount(text, field)
    if decimals(value) > 2:
        raise Invalid(f"{field} invalid: at most 2 decimal places", field=field)
    return field, value


def create_fiat_withdrawal(ctx: Ctx, cmd: CreateFiatWithdrawal) -> dict[str, Any]:
    state = ctx.state
    if cmd.asset != "USD":
        raise Invalid(
            f"asset invalid: only USD is supported, not '{cmd.asset[:32]}'", field="asset"
        )
    field, value = _sizing(cmd)
    metadata = check_metadata(cmd.metadata)
    if cmd.ref_id is not None and not 0 < len(cmd.ref_id) <= _MAX_REF_ID:
        raise Invalid(f"ref_id invalid: 1 to {_MAX_REF_ID} characters", field="ref_id")
    profile = active_profile(state, cmd.actor.customer_id, cmd.profile_id)
    profile_id = profile["id"]
    check_acting(state, cmd.actor.customer_id, cmd.identity_id, cmd.account_id, action="withdraw")
    account = owned_account(state, cmd.actor.customer_id, cmd.fiat_account_id)
    if account is None:
        raise NotFound("fiat account not found with requested ID")
    if account["status"] != "APPROVED":
        raise Invalid(
            f"fiat account has invalid status {account['status']}, must be approved",
            field="fiat_account_id",
        )
    network = network_of(account)
    transfer_type = TRANSFER_TYPES.get(network)
    if transfer_type is None:
        raise Invalid(
            f"fiat_account_id invalid: withdrawals over {network} are not simulated by this"
            " sandbox (WIRE, CUBIX and CBIT are)",
            field="fiat_account_id",
        )
    if cmd.memo is not None and len(cmd.memo) > MEMO_LIMITS[network]:
        raise Invalid(
            f"memo invalid: at most {MEMO_LIMITS[network]} characters for a {network} withdrawal",
            field="memo",
        )
    if cmd.ref_id is not None:
        existing = state.transfer_refs.get((profile_id, cmd.ref_id))
        if existing is not None:
            raise AlreadyExists(
                f"activity with external id {cmd.ref_id} already exists",
                transfer_records.transfer_view(state.transfers[existing]),
            )
    charged = fee(ctx.settings, network)
    if field == "amount":
        amount, total = value, value + charged
    else:
        amount, total = value - charged, value
        if amount <= ZERO:
            raise Invalid(
                f"total invalid: {format_amount(total)} USD does not cover the fee of"
                f" {format_amount(charged)} USD",
                field="total",
            )
    limit = ctx.settings.fiat_withdrawal_cap
    if amount > limit:
        raise ExceedMaxWithdraw(
            f"withdrawal amount {format_amount(amount)} USD exceeds the sandbox limit of"
            f" {format_normal(limit)} USD per withdrawal",
            meta={"asset": "USD", "limit": format_normal(limit), "amount": format_amount(amount)},
        )
    held = state.ledger.balance(available(profile_id), "USD")
    if held < total:
        raise InsufficientFunds(profile_id, "USD", format_normal(held), format_normal(total))
    record = {
        "customer_id": profile["customer_id"],
        "profile_id": profile_id,
        "ref_id": cmd.ref_id,
        "identity_id": cmd.identity_id,
        "account_id": cmd.account_id,
        "amount": format_amount(amount),
        "total": format_amount(total),
        "fee": format_amount(charged),
        "asset": "USD",
        "balance_asset": "USD",
        "direction": "DEBIT",
        "type": transfer_type,
        "status": "PENDING",
        "fiat_account_id": account["id"],
        "memo": cmd.memo,
        "metadata": metadata,
    }
    hold: list[Posting] = [(available(profile_id), withdrawing(profile_id), "USD", total)]
    transfer = transfer_records.create(ctx, record, hold)
    pace = paced(ctx, cmd.memo, ctx.settings.fiat_withdrawal_seconds)
    ctx.emit(
        "FiatWithdrawalRequested",
        f"transfer-{transfer['id']}",
        {
            "transfer_id": transfer["id"],
            "fiat_account_id": account["id"],
            "due_at": pace.due_text,
        },
    )
    if pace.polls is not None:
        sandbox_pacing.await_polls(
            ctx, "withdrawal", transfer["id"], record["customer_id"], pace.polls
        )
    if pace.due is not None and pace.due <= ctx.now:
        settle(ctx, transfer["id"])
    return transfer_records.transfer_view(state.transfers[transfer["id"]])


def settle(ctx: Ctx, transfer_id: str) -> None:
    """The bank's answer: the hold paid out, or voided (sandbox:fail)."""
    t = ctx.state.transfers.get(transfer_id)
    if t is None or t["type"] not in TRANSFER_TYPES.values() or t["status"] != "PENDING":
        return
    settle_as(ctx, transfer_id, fail=sandbox_triggers.failure(t.get("memo"))[0])


def settle_as(ctx: Ctx, transfer_id: str, *, fail: bool, reason: str | None = None) -> None:
    """A PENDING fiat withdrawal paid out, or failed with its hold returned."""
    t = ctx.state.transfers[transfer_id]
    hold = withdrawing(t["profile_id"])
    amount, charged, total = Decimal(t["amount"]), Decimal(t["fee"]), Decimal(t["total"])
    if fail:
        fail_as_asked(ctx, transfer_id, [(hold, available(t["profile_id"]), "USD", total)], reason)
        return
    postings: list[Posting] = [(hold, WORLD, "USD", amount)]
    if charged > ZERO:
        postings.append((hold, FEES, "USD", charged))
    transfer_records.complete(ctx, transfer_id, {}, postings)


def _requested(state: State, e: Event) -> None:
    if e.data["due_at"] is not None:  # None: held, or paced by polls or by hand
        state.timers.add(parse_time(e.data["due_at"]), "fiat_withdrawal", e.data["transfer_id"])


DECIDERS = {CreateFiatWithdrawal: create_fiat_withdrawal}
APPLIERS = {"FiatWithdrawalRequested": _requested}
TIMERS = {"fiat_withdrawal": settle}
REGISTRATION = Registration(DECIDERS, APPLIERS, TIMERS)
