"""The event catalogue: every event type the log may hold, its payload's top-level fields
(required and optional), its current schema version and which of its fields hold
credential material. One place to read what the log is made of; a test holds every
event of the golden run and the registered appliers to it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One event type. `credentials`: fields whose values are secrets (hashed or sealed),
    which every output redacts; `credential_urls`: URL fields whose `user:pass@` and query
    are redacted the same way."""

    required: frozenset[str]
    optional: frozenset[str] = frozenset()
    schema: int = 1
    credentials: frozenset[str] = frozenset()
    credential_urls: frozenset[str] = frozenset()

    @property
    def fields(self) -> frozenset[str]:
        return self.required | self.optional


def _spec(
    required: str = "",
    optional: str = "",
    *,
    schema: int = 1,
    credentials: str = "",
    credential_urls: str = "",
) -> EventSpec:
    """An `EventSpec` from space-separated field names: the table below stays readable."""
    return EventSpec(
        frozenset(required.split()),
        frozenset(optional.split()),
        schema,
        frozenset(credentials.split()),
        frozenset(credential_urls.split()),
    )


# An order closes with the reason (none when filled), and releases what it still held.
_CLOSED = _spec("order_id reason", "release postings")

CATALOGUE: dict[str, EventSpec] = {
    # customers
    "CustomerCreated": _spec("customer_id bootstrap", "identity_labels"),
    "ClientCreated": _spec(
        "client_id customer_id salt secret_hash scopes", credentials="salt secret_hash"
    ),
    "ClientRevoked": _spec("client_id"),
    "ProfileCreated": _spec("profile_id customer_id nickname description type"),
    "ProfileUpdated": _spec("profile_id nickname"),
    "ProfileDeactivated": _spec("profile_id"),
    # transfers
    "TransferCreated": _spec("transfer postings"),
    "TransferCompleted": _spec("transfer_id changes postings"),
    "TransferFailed": _spec("transfer_id changes postings"),
    "FiatDepositInstructionsCreated": _spec("instructions"),
    "FiatDepositInitiated": _spec(
        "deposit_id memo_id profile_id customer_id amount fee due_at"
        " fiat_network_instructions fiat_account_owner"
    ),
    "FiatDepositCredited": _spec("deposit_id transfer_id"),
    "WithdrawalFeeQuoted": _spec("quote"),
    "WithdrawalFeeExpired": _spec("fee_id"),
    "CryptoWithdrawalRequested": _spec("transfer_id due_at fee_id beneficiary"),
    # stablecoin conversions
    "StablecoinConversionCreated": _spec("conversion postings"),
    "StablecoinConversionSettled": _spec("conversion_id postings"),
    "StablecoinConversionCancelled": _spec("conversion_id postings"),
    # deposit addresses and crypto deposits
    "DepositAddressCreated": _spec("address"),
    "CryptoDepositReceived": _spec("transfer_id deposit_address_id due_at"),
    "CryptoDepositUpdated": _spec("transfer_id identity_id originator_address_info"),
    "CryptoDepositRejected": _spec("transfer_id identity_id"),
    # identities and accounts (engine/domain/identity/)
    "IdentityCreated": _spec("identity"),
    "IdentityUpdated": _spec("identity_id changes"),
    "IdentityStatusesSet": _spec("identity_id changes", "schedule"),
    "IdentityStatusesScheduled": _spec("identity_id statuses due_at"),
    "IdentitySummaryStatusChanged": _spec("identity_id old_summary_status new_summary_status"),
    "IdentityDocumentAdded": _spec("document"),
    "InstitutionMembersAdded": _spec("institution_id members"),
    "InstitutionMemberRemoved": _spec("institution_id member_id"),
    "AccountCreated": _spec("account"),
    "AccountUpdated": _spec("account_id changes"),
    "AccountMembersAdded": _spec("account_id members"),
    "AccountMemberRemoved": _spec("account_id member_id"),
    # fiat accounts and fiat withdrawals
    "FiatAccountCreated": _spec("account due_at"),
    "FiatAccountUpdated": _spec("fiat_account_id changes due_at"),
    "FiatAccountReviewed": _spec("fiat_account_id status"),
    "FiatAccountDeleted": _spec("fiat_account_id"),
    "FiatWithdrawalRequested": _spec("transfer_id fiat_account_id due_at"),
    # trading
    "OrderPlaced": _spec("order postings"),
    "OrderSubmitted": _spec("order_id"),
    # `held` (true): OPEN but kept out of the book by its `sandbox:hold` metadata
    "OrderOpened": _spec("order_id", "held"),
    "OrderReleased": _spec("order_id"),
    "OrderTriggered": _spec("order_id"),
    # a side is absent when the house's ladder took it; `house` names the ladder's fills
    "TradeExecuted": _spec("market step trade price amount postings", "buy sell house"),
    "OrderFilled": _spec("order_id", "release postings"),
    "OrderCancelled": _CLOSED,
    "OrderRejected": _CLOSED,
    # held-rate quotes (engine/domain/quotes.py)
    "QuotesIssued": _spec("batch_id customer_id expires_at quotes"),
    "QuotesExpired": _spec("batch_id"),
    "QuoteExecuted": _spec("execution postings"),
    # `gap` (true) only when the price jumped (SetMarketPrice.gap)
    "MarketPriceSet": _spec("market price step", "gap"),
    # the sandbox
    "ClockAdvanced": _spec("to"),
    # sandex.engine.domain.sandbox_pacing and sandex.engine.domain.transfers.pending: the sandbox's
    # pacing of pending items, and their settlement by polls or by hand.
    "SandboxPacingSet": _spec("kind mode", "value"),
    "SandboxPollsAwaited": _spec("item_id kind polls customer_id"),
    "SandboxPolled": _spec("item_id left"),
    "SandboxReleased": _spec("item_id outcome", "reason"),
    "FiatDepositHeld": _spec("deposit_id transfer_id"),
    # sandex.engine.domain.sandbox_faults: HTTP fault rules, and each decision of one
    "SandboxFaultArmed": _spec(
        "id owner match when action times skip probability until ttl_seconds expires_at"
    ),
    "SandboxFaultRemoved": _spec("id"),
    "SandboxFaultFired": _spec("operation when action", "rule_id template match spent draw"),
    "SandboxFaultPassed": _spec("rule_id operation when match reason", "draw"),
    "WebhookRegistered": _spec(
        "customer_id webhook_id url secret", credentials="secret", credential_urls="url"
    ),
    "WebhookRemoved": _spec("customer_id"),
    # sandex.engine.domain.webhook_faults: a tenant's rules over its own webhook's deliveries
    "WebhookFaultArmed": _spec("rule_id customer_id match action times"),
    "WebhookFaultFired": _spec(
        "rule_id webhook_id event_id attempt action remaining", "release_at"
    ),
    "WebhookFaultSpent": _spec("rule_id"),
    "WebhookFaultRemoved": _spec("rule_id"),
    "SnapshotTaken": _spec("name"),
    "SnapshotRestored": _spec("name position"),
    "SandboxReset": _spec(),
}


def payload_problems(type: str, data: dict[str, object]) -> list[str]:
    """What in an event's payload the catalogue does not allow (empty when it fits)."""
    spec = CATALOGUE.get(type)
    if spec is None:
        return [f"{type}: not in the catalogue"]
    problems = [f"{type}: {name} missing" for name in sorted(spec.required - data.keys())]
    problems += [
        f"{type}: {name} not in the catalogue" for name in sorted(data.keys() - spec.fields)
    ]
    return problems
