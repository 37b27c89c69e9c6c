"""The command of a request, for the operations whose route and fast lane both build
it: each is the `build` of its row in the operation table (api_adapter/operations.py),
so the lane cannot build another command than the route."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandex.api_adapter.request_bodies import (
    CreateCryptoWithdrawalRequest,
    CreateOrderRequest,
    SandboxDepositRequest,
)
from sandex.engine.config.settings import SELF_MATCH_PREVENTION
from sandex.engine.kernel.commands import Actor, CreateCryptoWithdrawal, CreateOrder, SandboxDeposit

if TYPE_CHECKING:  # the bearer check imports the operation table, which imports these
    from sandex.api_adapter.auth import Principal


def create_order_command(
    actor: Actor, who: Principal, profile_id: str, body: CreateOrderRequest
) -> CreateOrder:
    """The command of a create-order request."""
    return CreateOrder(
        actor=actor,
        profile_id=profile_id,
        side=body.side,
        market=body.market,
        type=body.type,
        ref_id=body.ref_id,
        base_amount=body.base_amount,
        price=body.price,
        quote_amount=body.quote_amount,
        metadata=body.metadata,
        await_fill_millis=body.await_fill_millis,
        time_in_force=body.time_in_force,
        expiration_date=body.expiration_date,
        identity_id=body.identity_id,
        identity_account_id=body.identity_account_id,
        stop_price=body.stop_price,
        recipient_profile_id=body.recipient_profile_id,
        self_match_prevention_id=body.self_match_prevention_id,
        may_prevent_self_match=SELF_MATCH_PREVENTION in who.scopes,
    )


def create_withdrawal_command(
    actor: Actor, who: Principal, param: str, body: CreateCryptoWithdrawalRequest
) -> CreateCryptoWithdrawal:
    """The command of a crypto withdrawal request (its profile is in the body)."""
    return CreateCryptoWithdrawal(
        actor=actor,
        profile_id=body.profile_id,
        asset=body.asset,
        destination_address=body.destination_address,
        crypto_network=body.crypto_network,
        amount=body.amount,
        total=body.total,
        fee_id=body.fee_id,
        ref_id=body.ref_id,
        balance_asset=body.balance_asset,
        identity_id=body.identity_id,
        account_id=body.account_id,
        memo=body.memo,
        metadata=body.metadata,
        beneficiary=body.beneficiary.model_dump(exclude_none=True) if body.beneficiary else None,
    )


def sandbox_deposit_command(
    actor: Actor, who: Principal, profile_id: str, body: SandboxDepositRequest
) -> SandboxDeposit:
    """The command of a sandbox deposit request."""
    return SandboxDeposit(
        actor=actor,
        profile_id=profile_id,
        asset=body.asset,
        amount=body.amount,
        crypto_network=body.crypto_network,
        crypto_address=body.crypto_address,
    )


def awaits_fill(body: CreateOrderRequest) -> bool:
    """The route holds the answer until the order fills: only the route serves it."""
    return bool(body.await_fill_millis)
