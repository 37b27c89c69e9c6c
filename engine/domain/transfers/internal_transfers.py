"""Internal transfers: an asset moved at once between two profiles of one customer.

The move is two COMPLETED transfer records sharing a `group_id`, the debit side of the
sender and the credit side of the recipient, so each profile's transfer list explains
its own balance. Each side carries its own posting through a transit account that is
empty again once the command is decided.
"""

from __future__ import annotations

from typing import Any

from sandex.engine.domain.customers import active_profile
from sandex.engine.domain.identity.permissions import check_acting
from sandex.engine.domain.ledger import available
from sandex.engine.domain.metadata import check_metadata
from sandex.engine.domain.transfers import transfer_records
from sandex.engine.kernel.commands import CreateInternalTransfer
from sandex.engine.kernel.errors import AlreadyExists, InsufficientFunds, Invalid
from sandex.engine.kernel.money import (
    ASSET_PRECISION,
    ZERO,
    check_precision,
    format_amount,
    format_normal,
    parse_amount,
)
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

TRANSIT = "internal-transit"
_MAX_REF_ID = 128


def create_internal_transfer(ctx: Ctx, cmd: CreateInternalTransfer) -> dict[str, Any]:
    state = ctx.state
    asset = cmd.asset
    if asset not in ASSET_PRECISION:
        raise Invalid(f"asset invalid: unknown asset '{asset[:32]}'", field="asset")
    amount = parse_amount(cmd.amount, "amount")
    metadata = check_metadata(cmd.metadata)
    recipient_metadata = check_metadata(cmd.recipient_metadata, "recipient_metadata")
    if cmd.ref_id is not None and not 0 < len(cmd.ref_id) <= _MAX_REF_ID:
        raise Invalid(f"ref_id invalid: 1 to {_MAX_REF_ID} characters", field="ref_id")
    customer_id = cmd.actor.customer_id
    sender = active_profile(state, customer_id, cmd.from_profile_id, "from_profile_id")
    recipient = active_profile(state, customer_id, cmd.to_profile_id, "to_profile_id")
    if sender["id"] == recipient["id"]:
        raise Invalid(
            "to_profile_id invalid: the recipient must be another profile than the sender",
            field="to_profile_id",
        )
    # Both sides: the sender moves the funds, the recipient's identity takes them into its
    # account, so each must be allowed to act for the account named with it.
    sides = (
        ("from", cmd.from_identity_id, cmd.from_account_id),
        ("to", cmd.to_identity_id, cmd.to_account_id),
    )
    for side, identity_id, account_id in sides:
        check_acting(
            state,
            customer_id,
            identity_id,
            account_id,
            action="transfer",
            identity_field=f"{side}_identity_id",
            account_field=f"{side}_account_id",
        )
    if cmd.ref_id is not None:
        existing = state.transfer_refs.get((sender["id"], cmd.ref_id))
        if existing is not None:
            raise AlreadyExists(
                f"transfer already exists with ref_id '{cmd.ref_id}'",
                transfer_records.transfer_view(state.transfers[existing]),
            )
    funds = state.ledger.balance(available(sender["id"]), asset)
    check_precision(amount, asset, "amount", held=funds)
    if funds < amount:
        raise InsufficientFunds(sender["id"], asset, format_normal(funds), format_normal(amount))
    group_id = ctx.ids.uuid()
    common = {
        "customer_id": customer_id,
        "amount": format_amount(amount),
        "total": format_amount(amount),
        "fee": "0",
        "asset": asset,
        "balance_asset": asset,
        "status": "COMPLETED",
        "group_id": group_id,
    }
    debit = transfer_records.create(
        ctx,
        {
            **common,
            "profile_id": sender["id"],
            "ref_id": cmd.ref_id,
            "direction": "DEBIT",
            "type": "INTERNAL_TRANSFER_DEBIT",
            "identity_id": cmd.from_identity_id,
            "account_id": cmd.from_account_id,
            "metadata": metadata,
        },
        [(available(sender["id"]), TRANSIT, asset, amount)],
    )
    transfer_records.create(
        ctx,
        {
            **common,
            "profile_id": recipient["id"],
            "direction": "CREDIT",
            "type": "INTERNAL_TRANSFER_CREDIT",
            "identity_id": cmd.to_identity_id,
            "account_id": cmd.to_account_id,
            "metadata": recipient_metadata,
        },
        [(TRANSIT, available(recipient["id"]), asset, amount)],
    )
    return transfer_records.transfer_view(debit)


def check_transit(state: State) -> list[str]:
    """Nothing stays in transit between the two sides of an internal transfer."""
    return [
        f"{TRANSIT} holds {value} {asset} after a command"
        for (account, asset), value in state.ledger.balances.items()
        if account == TRANSIT and value != ZERO
    ]


DECIDERS = {CreateInternalTransfer: create_internal_transfer}
REGISTRATION = Registration(DECIDERS, checks=(check_transit,))
