"""The table of the busiest write routes: for each, its method and path, operation id,
scope, body model and command builder, in one place.

Both the FastAPI route (api_adapter/routes/orders.py, withdrawals.py, funding.py) and
the fast lane (api_adapter/middleware/fast_lane.py) read their entry, so the lane
cannot drift from the route: a scope, a model or a command changed here changes both.
Each route answers the command's result as it is; a body whose answer the route shapes
further (`await_fill_millis`) is marked so, and the lane hands it on to the route.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from api_adapter.auth import Principal
from api_adapter.request_bodies import (
    CreateCryptoWithdrawalRequest,
    CreateOrderRequest,
    SandboxDepositRequest,
)
from engine.config.settings import SELF_MATCH_PREVENTION
from engine.kernel.commands import (
    Actor,
    Command,
    CreateCryptoWithdrawal,
    CreateOrder,
    SandboxDeposit,
)

# The command of a request: (actor, caller, path parameter or "", body).
Build = Callable[[Actor, Principal, str, Any], Command]


def _never(body: Any) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class WriteRoute:
    """One write route. `path` is the full path, with at most one `{parameter}`, a whole
    segment (the fast lane matches it as Starlette does: one non-empty segment)."""

    method: str
    path: str
    operation: str  # the route's operation id: the rate limiter's family too
    scope: str  # the scope the route's `require` asks for
    model: type[BaseModel]
    build: Build
    # A body whose answer is more than the command's result: only the route serves it.
    route_only: Callable[[Any], bool] = _never
    # The path around its parameter: `head` is the whole path when it has none.
    head: str = field(init=False, repr=False, compare=False)
    tail: str = field(init=False, repr=False, compare=False)
    has_param: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        head, brace, rest = self.path.partition("{")
        object.__setattr__(self, "head", head if brace else self.path)
        object.__setattr__(self, "tail", rest.partition("}")[2] if brace else "")
        object.__setattr__(self, "has_param", bool(brace))

    def under(self, prefix: str) -> str:
        """The path below a router's `prefix`, for the route's decorator."""
        if not self.path.startswith(prefix):
            raise ValueError(f"{self.path} is not under {prefix}")
        return self.path[len(prefix) :]


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


def _awaits_fill(body: CreateOrderRequest) -> bool:
    """The route holds the answer until the order fills."""
    return bool(body.await_fill_millis)


CREATE_ORDER = WriteRoute(
    "POST",
    "/v2/profiles/{profile_id}/orders",
    "CreateOrder",
    "exchange:write_order",
    CreateOrderRequest,
    create_order_command,
    route_only=_awaits_fill,
)
CREATE_WITHDRAWAL = WriteRoute(
    "POST",
    "/v2/transfer/crypto-withdrawals",
    "CreateCryptoWithdrawal",
    "transfer:write_crypto_withdrawal",
    CreateCryptoWithdrawalRequest,
    create_withdrawal_command,
)
CREATE_DEPOSIT = WriteRoute(
    "POST",
    "/v2/sandbox/profiles/{profile_id}/deposit",
    "CreateSandboxDeposit",
    "funding:read_profile",
    SandboxDepositRequest,
    sandbox_deposit_command,
)

# Every route the fast lane serves, in the order it tries them.
WRITE_ROUTES = (CREATE_WITHDRAWAL, CREATE_ORDER, CREATE_DEPOSIT)
