"""Commands: what a caller asks the engine to do. Plain data, decided by the writer."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Actor:
    """Who is asking: the customer the client belongs to, and the client."""

    customer_id: str
    client_id: str
    request_id: str = ""


SYSTEM = Actor(customer_id="", client_id="system")


@dataclass(frozen=True, slots=True)
class Command:
    actor: Actor = field(default=SYSTEM, kw_only=True)


@dataclass(frozen=True, slots=True)
class CreateCustomer(Command):
    """A new isolated customer with one client and a DEFAULT profile."""

    client_id: str | None = None
    client_secret: str | None = None
    scopes: tuple[str, ...] = ()
    bootstrap: bool = False


@dataclass(frozen=True, slots=True)
class RevokeClient(Command):
    client_id: str = ""


@dataclass(frozen=True, slots=True)
class CreateProfile(Command):
    nickname: str = ""
    description: str | None = None


@dataclass(frozen=True, slots=True)
class SandboxDeposit(Command):
    profile_id: str = ""
    asset: str = ""
    amount: str = ""
    crypto_network: str | None = None
    crypto_address: str | None = None


@dataclass(frozen=True, slots=True)
class CreateFiatDepositInstructions(Command):
    profile_id: str = ""
    fiat_network: str = "WIRE"
    routing_number_type: str | None = None
    ref_id: str | None = None
    identity_id: str | None = None
    account_id: str | None = None
    metadata: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class InitiateFiatDeposit(Command):
    amount: str = ""
    asset: str = ""
    memo_id: str = ""
    fiat_network_instructions: dict[str, Any] = field(default_factory=dict)
    fiat_account_owner: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class CreateWithdrawalFee(Command):
    """Quote a guaranteed crypto withdrawal fee; exactly one of amount and total."""

    asset: str = ""
    destination_address: str = ""
    crypto_network: str = ""
    amount: str | None = None
    total: str | None = None


@dataclass(frozen=True, slots=True)
class CreateCryptoWithdrawal(Command):
    profile_id: str = ""
    asset: str = ""
    destination_address: str = ""
    crypto_network: str = ""
    amount: str | None = None
    total: str | None = None
    fee_id: str | None = None
    ref_id: str | None = None
    balance_asset: str | None = None
    identity_id: str | None = None
    account_id: str | None = None
    memo: str | None = None
    metadata: dict[str, str] | None = None
    beneficiary: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class CreateInternalTransfer(Command):
    from_profile_id: str = ""
    to_profile_id: str = ""
    asset: str = ""
    amount: str = ""
    ref_id: str | None = None
    metadata: dict[str, str] | None = None
    recipient_metadata: dict[str, str] | None = None
    from_identity_id: str | None = None
    from_account_id: str | None = None
    to_identity_id: str | None = None
    to_account_id: str | None = None


@dataclass(frozen=True, slots=True)
class AdvanceClock(Command):
    """Move a manual clock forward to `to`, firing every deadline on the way."""

    to: datetime | None = None


@dataclass(frozen=True, slots=True)
class Tick(Command):
    """Fire what is due now; sent by the scheduler on a wall clock."""
