"""Commands: what a caller asks the engine to do. Plain data, decided by the writer."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
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
    client_secret: str | None = field(default=None, repr=False)  # never in a log line
    scopes: tuple[str, ...] = ()
    bootstrap: bool = False
    # Grant the permission self_match_prevention_id needs, on top of the scopes.
    self_match_prevention: bool = False
    # Keep identity ids as labels (an integration without identities; permissions.py).
    identity_labels: bool = False


@dataclass(frozen=True, slots=True)
class RevokeClient(Command):
    client_id: str = ""


@dataclass(frozen=True, slots=True)
class CreateProfile(Command):
    nickname: str = ""
    description: str | None = None


@dataclass(frozen=True, slots=True)
class UpdateProfile(Command):
    profile_id: str = ""
    nickname: str = ""


@dataclass(frozen=True, slots=True)
class DeactivateProfile(Command):
    profile_id: str = ""


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
class CreateStablecoinConversion(Command):
    profile_id: str = ""
    amount: str = ""
    source_asset: str = ""
    target_asset: str = ""
    ref_id: str | None = None
    identity_id: str | None = None
    account_id: str | None = None
    metadata: dict[str, str] | None = None
    recipient_profile_id: str | None = None


@dataclass(frozen=True, slots=True)
class CancelStablecoinConversion(Command):
    conversion_id: str = ""


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
class IssueQuotes(Command):
    """Held-rate quotes, a buy and a sell per market, for the caller (all markets: empty)."""

    markets: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CreateQuoteExecution(Command):
    """Execute a held quote; exactly one of base_amount and quote_amount."""

    profile_id: str = ""
    quote_id: str = ""
    ref_id: str | None = None
    base_amount: str | None = None
    quote_amount: str | None = None
    metadata: dict[str, str] | None = None
    identity_id: str | None = None
    account_id: str | None = None
    recipient_profile_id: str | None = None


@dataclass(frozen=True, slots=True)
class CreateOrder(Command):
    """An order as the client sent it: raw strings, checked by sandex.engine.domain.trading.placement."""

    profile_id: str = ""
    side: str = ""
    market: str = ""
    type: str = ""
    ref_id: str | None = None
    base_amount: str | None = None
    price: str | None = None
    quote_amount: str | None = None
    metadata: dict[str, str] | None = None
    await_fill_millis: int | None = None
    time_in_force: str | None = None
    expiration_date: str | None = None
    identity_id: str | None = None
    identity_account_id: str | None = None
    stop_price: str | None = None
    recipient_profile_id: str | None = None
    self_match_prevention_id: str | None = None
    # Whether the client holds the permission that self_match_prevention_id needs.
    may_prevent_self_match: bool = False


@dataclass(frozen=True, slots=True)
class CancelOrder(Command):
    profile_id: str = ""
    order_id: str = ""


@dataclass(frozen=True, slots=True)
class ReleaseOrder(Command):
    """Release an order held by its `sandbox:hold` metadata (sandbox only): it meets the
    market as an order submitted now would."""

    order_id: str = ""


@dataclass(frozen=True, slots=True)
class SetMarketPrice(Command):
    """Move a market's reference price now (sandbox only). By default the path walks to
    the price: resting orders it passes trade at their own prices. A `gap` jumps there
    (an opening auction, a bar that opens past them): they trade at the ladder's prices
    at the new price, their own or better."""

    market: str = ""
    price: str = ""
    gap: bool = False
    # False: answer nothing instead of the price view (a backtest sets a price before
    # most commands and never reads that answer). Not part of the log.
    answer: bool = True


@dataclass(frozen=True, slots=True)
class ReadMarket(Command):
    """Market data at engine time "now", answered by the writer from its state."""

    view: str = ""  # book | ticker | tickers | recent | price | depth
    market: str = ""


@dataclass(frozen=True, slots=True)
class ListPrices(Command):
    """Current and 24-hours-ago prices of markets (all the reference's: empty)."""

    markets: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ListHistoricalPrices(Command):
    """Average prices of a market per increment; exactly one of increment and
    max_data_points. Times as the client sent them (RFC 3339)."""

    market: str = ""
    increment: str | None = None
    max_data_points: int | None = None
    begin: str | None = None
    end: str | None = None
    limit: int | None = None
    offset: int | None = None


@dataclass(frozen=True, slots=True)
class AdvanceClock(Command):
    """Move a manual clock forward to `to`, or `by` a duration, firing every deadline on
    the way. `by` is added to the clock in the writer, so that advances sent at the same
    time add up instead of all aiming at the same target."""

    to: datetime | None = None
    by: timedelta | None = None


@dataclass(frozen=True, slots=True)
class Tick(Command):
    """Fire what is due now; sent by the scheduler on a wall clock."""


# -- deposit addresses and crypto deposits (engine/domain/transfers/deposit_addresses.py)


@dataclass(frozen=True, slots=True)
class CreateDepositAddress(Command):
    profile_id: str = ""
    crypto_network: str = ""
    identity_id: str | None = None
    account_id: str | None = None
    ref_id: str | None = None
    metadata: dict[str, str] | None = None
    conversion_target_asset: str | None = None


@dataclass(frozen=True, slots=True)
class SandboxCryptoDeposit(Command):
    """Send crypto to a deposit address from the outside world (sandbox only)."""

    address: str = ""
    crypto_network: str = ""
    asset: str = ""
    amount: str = ""
    # Read for its sandbox triggers only (sandex.engine.domain.sandbox_triggers).
    memo: str | None = None


@dataclass(frozen=True, slots=True)
class RejectCryptoDeposit(Command):
    transfer_id: str = ""
    identity_id: str = ""


@dataclass(frozen=True, slots=True)
class UpdateCryptoDeposit(Command):
    transfer_id: str = ""
    identity_id: str = ""
    originator_address_info: dict[str, Any] = field(default_factory=dict)


# -- identities and accounts (engine/domain/identity/) -----------------------------------
# Bodies pass as the client sent them (nested objects as dicts): the identity modules
# check them, so a backtest or a scenario driving the engine meets the same rules.


@dataclass(frozen=True, slots=True)
class CreateIdentity(Command):
    person_details: dict[str, Any] | None = None
    institution_details: dict[str, Any] | None = None
    institution_members: tuple[dict[str, Any], ...] | None = None
    ref_id: str | None = None
    metadata: dict[str, str] | None = None
    tax_details: tuple[dict[str, Any], ...] | None = None
    tax_details_not_required: bool | None = None
    customer_due_diligence: dict[str, Any] | None = None
    is_merchant: bool | None = None


@dataclass(frozen=True, slots=True)
class UpdateIdentity(Command):
    identity_id: str = ""
    person_details: dict[str, Any] | None = None
    institution_details: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    set_user_disabled: bool | None = None
    ref_id: str | None = None
    tax_details: tuple[dict[str, Any], ...] | None = None
    set_tax_details_not_required: bool | None = None
    customer_due_diligence: dict[str, Any] | None = None
    is_merchant: bool | None = None
    last_kyc_refresh_date: str | None = None


@dataclass(frozen=True, slots=True)
class SetIdentitySandboxStatus(Command):
    """The sandbox's verdicts on an identity: any of its verification statuses, and the
    user's or an admin's disabling ({"disabled": bool})."""

    identity_id: str = ""
    statuses: dict[str, Any] = field(default_factory=dict)
    # sandex's own: when the statuses take effect (a timer); None or past: now.
    effective_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class UploadIdentityDocument(Command):
    identity_id: str = ""
    name: str = ""
    document_types: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AddInstitutionMembers(Command):
    institution_id: str = ""
    members: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class RemoveInstitutionMember(Command):
    member_id: str = ""


@dataclass(frozen=True, slots=True)
class CreateAccount(Command):
    account: dict[str, Any] = field(default_factory=dict)
    create_profile: bool = False


@dataclass(frozen=True, slots=True)
class UpdateAccount(Command):
    account: dict[str, Any] = field(default_factory=dict)
    set_user_disabled: bool | None = None


@dataclass(frozen=True, slots=True)
class AddAccountMembers(Command):
    account_id: str = ""
    members: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class RemoveAccountMember(Command):
    member_id: str = ""


# -- fiat accounts and fiat withdrawals (engine/domain/transfers/fiat_accounts.py,
# fiat_withdrawals.py)


@dataclass(frozen=True, slots=True)
class CreateFiatAccount(Command):
    fiat_account_owner: dict[str, Any] = field(default_factory=dict)
    fiat_network_instructions: dict[str, Any] = field(default_factory=dict)
    ref_id: str | None = None
    identity_id: str | None = None
    account_id: str | None = None
    metadata: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class UpdateFiatAccount(Command):
    fiat_account_id: str = ""
    fiat_account_owner: dict[str, Any] | None = None
    fiat_network_instructions: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class DeleteFiatAccount(Command):
    fiat_account_id: str = ""


@dataclass(frozen=True, slots=True)
class CreateFiatWithdrawal(Command):
    profile_id: str = ""
    fiat_account_id: str = ""
    asset: str = ""
    amount: str | None = None
    total: str | None = None
    ref_id: str | None = None
    identity_id: str | None = None
    account_id: str | None = None
    metadata: dict[str, str] | None = None
    memo: str | None = None


@dataclass(frozen=True, slots=True)
class SetPacing(Command):
    """How one kind of pending item settles in this world (sandex.engine.domain.sandbox_pacing):
    `mode` one of its MODES, `value` the seconds or polls that mode counts."""

    kind: str = ""
    mode: str = ""
    value: str | None = None


@dataclass(frozen=True, slots=True)
class ReleasePending(Command):
    """Settle a pending item of `kind` ("transfer", "conversion", "fiat_account") by hand:
    `outcome` "complete" or "fail" (then `reason` in its status details)."""

    kind: str = "transfer"
    item_id: str = ""
    outcome: str = ""
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class CountPoll(Command):
    """A read of a pending item paced `after_polls`: one poll fewer before it settles."""

    item_id: str = ""
