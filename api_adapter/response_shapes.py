"""Response shapes, as the reference's schemas type them, for sandex's own OpenAPI
document: one model per answer, the same field names, types, formats and enums as the
reference's schema of the same operation, with examples a reader can use.

They document; they do not serialize. The routes answer with their own pre-serialized
`JSONResponse`, and each route names its model (`ok` below), which `route` keeps aside
and `openapi.install` hands to FastAPI when the document is first asked for: no answer
is validated or re-encoded on its way out, and no shape is built when an app is
assembled. The test suite holds every answer it sees to these shapes
(`conformance_problems`), and the shapes to the reference (`test_every_success_answer_has_the_references_shape`).

A field that may be absent is documented as optional, never as nullable: sandex leaves
out what it has no value for and never sends `null`.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sandex.engine.domain import sandbox_faults as faults
from sandex.engine.domain import sandbox_pacing as pacing
from sandex.engine.domain.customers import PROFILE_TYPES
from sandex.engine.domain.quotes import EXECUTION_STATUSES
from sandex.engine.domain.trading.order import ORDER_STATUSES, SIDE_NAMES
from sandex.engine.domain.trading.order_types import ALL_TIF, ORDER_TYPE_NAMES
from sandex.engine.domain.transfers.deposit_addresses import SECONDARY_STATUSES
from sandex.engine.domain.transfers.fiat_accounts import STATUSES as FIAT_ACCOUNT_STATUSES
from sandex.engine.domain.transfers.funding import INSTRUCTIONS_STATUSES, ROUTING_TYPES
from sandex.engine.domain.transfers.networks import CRYPTO_NETWORKS
from sandex.engine.domain.transfers.transfer_records import (
    DIRECTIONS,
    TRANSFER_STATUSES,
    TRANSFER_TYPE_NAMES,
)
from sandex.engine.kernel.money import MARKETS

AMOUNT_PATTERN = r"^[0-9]*\.?[0-9]+$"
UUID_EXAMPLE = "5f8a2a3c-93d1-4c0e-9a8e-2b8f6c1d7e40"
TIME_EXAMPLE = "2024-01-28T00:48:00.222744Z"

Id = Annotated[str, Field(examples=[UUID_EXAMPLE])]
Time = Annotated[str, Field(json_schema_extra={"format": "date-time"}, examples=[TIME_EXAMPLE])]
Amount = Annotated[str, Field(examples=["0.01"])]
Price = Annotated[str, Field(examples=["42000.25"])]
# the reference's transfer and fee amounts carry the request pattern
PatternAmount = Annotated[str, Field(pattern=AMOUNT_PATTERN, examples=["0.01"])]
Asset = Annotated[str, Field(examples=["BTC"])]
Metadata = Annotated[dict[str, str], Field(examples=[{"desk": "alpha"}])]


def _no_nulls(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """An optional field is `X`, not `X or null`, and has no `default: null` (nor a
    title made of its own name)."""
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        kinds = prop.get("anyOf")
        if kinds and {"type": "null"} in kinds:
            rest = [k for k in kinds if k != {"type": "null"}]
            del prop["anyOf"]
            if len(rest) == 1:
                prop.update(rest[0])
            else:
                prop["anyOf"] = rest
        if "default" in prop and prop["default"] is None:
            del prop["default"]


class Shape(BaseModel):
    # built when first used (the document, a test's check of an answer), not at import
    model_config = ConfigDict(json_schema_extra=_no_nulls, defer_build=True)


def _enum(name: str, values: Any) -> Any:
    return Enum(name, {v: v for v in values}, type=str)  # type: ignore[misc]


if TYPE_CHECKING:  # mypy sees the values as the strings they are; pydantic sees enums
    Market = str
    CryptoNetwork = str
    OrderSide = str
    OrderStatus = str
    OrderType = str
    TimeInForce = str
    ProfileType = str
    TransferDirection = str
    TransferStatus = str
    TransferType = str
    SecondaryStatusName = str
    FiatDepositInstructionsStatus = str
    FiatWireAccountType = str
    QuoteExecutionStatus = str
    PriceMarket = str
    FiatAccountStatus = str
else:
    Market = _enum("Market", MARKETS)
    CryptoNetwork = _enum("CryptoNetwork", CRYPTO_NETWORKS)
    OrderSide = _enum("OrderSide", SIDE_NAMES)
    OrderStatus = _enum("OrderStatus", ORDER_STATUSES)
    OrderType = _enum("OrderType", ORDER_TYPE_NAMES)
    TimeInForce = _enum("TimeInForce", ALL_TIF)
    ProfileType = _enum("ProfileType", PROFILE_TYPES)
    TransferDirection = _enum("TransferDirection", DIRECTIONS)
    TransferStatus = _enum("TransferStatus", TRANSFER_STATUSES)
    # as the service interface lists them, the same list the transfer filter takes
    TransferType = _enum("TransferType", TRANSFER_TYPE_NAMES)
    SecondaryStatusName = _enum("SecondaryStatusName", SECONDARY_STATUSES)
    FiatDepositInstructionsStatus = _enum("FiatDepositInstructionsStatus", INSTRUCTIONS_STATUSES)
    FiatWireAccountType = _enum("FiatWireAccountType", ROUTING_TYPES)
    QuoteExecutionStatus = _enum("QuoteExecutionStatus", EXECUTION_STATUSES)
    PriceMarket = _enum("PricePriceMarket", (m for m in MARKETS if m.endswith("USD")))
    FiatAccountStatus = _enum("FiatAccountStatus", FIAT_ACCOUNT_STATUSES)

# -- profiles and balances ---------------------------------------------------------------


class Profile(Shape):
    id: Id
    nickname: Annotated[str, Field(examples=["desk"])]
    type: ProfileType
    description: str | None = None
    account_id: str | None = None


class ListProfilesResponse(Shape):
    items: list[Profile] | None = None
    next_page_cursor: str | None = None


class DeactivateProfileResponse(Shape):
    """Empty: get the profile with `include_deactivated` to see it."""


class ProfileBalance(Shape):
    asset: Asset
    available: Amount
    trading: Amount


class ListProfileBalancesResponse(Shape):
    items: list[ProfileBalance]


# -- transfer limits ----------------------------------------------------------------------


class TransferLimit(Shape):
    id: str | None = None
    rule_id: str | None = None
    transfer_types: list[TransferType] | None = None
    period_seconds: Annotated[str | None, Field(examples=["0"])] = None
    limit: Amount | None = None
    remaining: Amount | None = None
    limit_asset: Asset | None = None


class ListTransferLimitsResponse(Shape):
    items: list[TransferLimit] | None = None
    next_page_cursor: str | None = None


# -- stablecoin conversions ---------------------------------------------------------------


class StablecoinConversion(Shape):
    id: Id | None = None
    profile_id: Id | None = None
    amount: Amount | None = None
    source_asset: Annotated[str | None, Field(examples=["USD"])] = None
    target_asset: Annotated[str | None, Field(examples=["USDP"])] = None
    status: Annotated[
        str | None, Field(description="CREATED, then SETTLED or CANCELLED", examples=["CREATED"])
    ] = None
    ref_id: str | None = None
    identity_id: str | None = None
    account_id: str | None = None
    created_at: Time | None = None
    updated_at: Time | None = None
    settled_at: Time | None = None
    cancelled_at: Time | None = None
    metadata: Metadata | None = None
    recipient_profile_id: str | None = None


class ListStablecoinConversionsResponse(Shape):
    items: list[StablecoinConversion] | None = None
    next_page_cursor: str | None = None


# -- funding ------------------------------------------------------------------------------


class CreateSandboxDepositResponse(Shape):
    activity_id: Id | None = None


AddressText = Annotated[str, Field(pattern=r"^[0-9A-Za-z /?:().,&'+-]+$")]


class MailingAddressDetails(Shape):
    country: Annotated[AddressText, Field(examples=["US"])]
    address1: AddressText | None = None
    address2: AddressText | None = None
    city: AddressText | None = None
    province: AddressText | None = None
    zip_code: AddressText | None = None


class FiatNetworkInstructionsWireRoutingDetails(Shape):
    routing_number_type: FiatWireAccountType
    routing_number: Annotated[str, Field(examples=["021000021"])]
    bank_name: str
    bank_address: MailingAddressDetails


class FiatNetworkInstructionsWire(Shape):
    account_number: str
    fiat_account_owner_address: MailingAddressDetails
    routing_details: FiatNetworkInstructionsWireRoutingDetails
    intermediary_routing_details: FiatNetworkInstructionsWireRoutingDetails | None = None


class FiatNetworkInstructionsCbit(Shape):
    wallet_address: str


class FiatNetworkInstructionsAccount(Shape):
    account_number: str


class FiatNetworkInstructionsCubix(Shape):
    account_id: str


class FiatNetworkInstructionsDetails(Shape):
    wire: FiatNetworkInstructionsWire | None = None
    cbit: FiatNetworkInstructionsCbit | None = None
    dbs_act: FiatNetworkInstructionsAccount | None = None
    cubix: FiatNetworkInstructionsCubix | None = None
    scb: FiatNetworkInstructionsAccount | None = None


class FiatAccountOwnerPersonDetails(Shape):
    first_name: str
    last_name: str


class FiatAccountOwnerInstitutionDetails(Shape):
    name: str


class FiatAccountOwnerDetails(Shape):
    person_details: FiatAccountOwnerPersonDetails | None = None
    institution_details: FiatAccountOwnerInstitutionDetails | None = None


class FiatDepositInstructions(Shape):
    id: Id
    profile_id: Id
    identity_id: str
    account_id: str | None = None
    ref_id: str | None = None
    status: FiatDepositInstructionsStatus
    memo_id: Annotated[str, Field(examples=["BQWECTNYX9"])]
    fiat_network_instructions: FiatNetworkInstructionsDetails
    fiat_account_owner: FiatAccountOwnerDetails | None = None
    metadata: Metadata | None = None
    created_at: Time


class ListFiatDepositInstructionsResponse(Shape):
    items: list[FiatDepositInstructions] | None = None
    next_page_cursor: str | None = None


class InitiateSandboxFiatDepositResponse(Shape):
    """Empty: the deposit shows up as a WIRE_DEPOSIT transfer."""


# -- transfers ----------------------------------------------------------------------------


class AutoConversion(Shape):
    from_transfer_id: str | None = None
    to_transfer_id: str | None = None


class SecondaryStatus(Shape):
    name: SecondaryStatusName | None = None
    detail: str | None = None


class Transfer(Shape):
    id: Id
    customer_id: Id
    profile_id: Id
    identity_id: str | None = None
    ref_id: str | None = None
    amount: PatternAmount
    total: PatternAmount
    fee: Annotated[str, Field(pattern=AMOUNT_PATTERN, examples=["0"])]
    asset: Asset
    balance_asset: Asset | None = None
    direction: TransferDirection
    type: TransferType
    status: TransferStatus
    created_at: Time
    updated_at: Time
    metadata: Metadata | None = None
    destination_address: str | None = None
    crypto_network: CryptoNetwork | None = None
    crypto_tx_hash: str | None = None
    crypto_tx_index: str | None = None
    account_id: str | None = None
    auto_conversion: AutoConversion | None = None
    group_id: str | None = None
    fiat_account_id: str | None = None
    secondary_status: SecondaryStatus | None = None
    notional_value: Annotated[str, Field(examples=["420.50"])] | None = None
    memo: str | None = None
    # what went wrong, by kind: {"sandbox_forced_failure": {"message": ..., "memo": ...}}
    status_details: dict[str, Any] | None = None


class ListTransfersResponse(Shape):
    items: list[Transfer] | None = None
    next_page_cursor: str | None = None


class CryptoWithdrawalFee(Shape):
    id: Id
    fee: Annotated[str, Field(pattern=AMOUNT_PATTERN, examples=["0.00002"])]
    asset: Asset
    expires_at: Time
    destination_address: Annotated[
        str, Field(examples=["bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"])
    ]
    crypto_network: CryptoNetwork
    amount: PatternAmount | None = None
    total: PatternAmount | None = None


# -- orders and executions ----------------------------------------------------------------


class Order(Shape):
    id: Id | None = None
    profile_id: Id | None = None
    ref_id: str | None = None
    status: OrderStatus | None = None
    side: OrderSide | None = None
    market: Market | None = None
    type: OrderType | None = None
    base_amount: Amount | None = None
    price: Price | None = None
    quote_amount: str | None = None
    metadata: Metadata | None = None
    created_at: Time | None = None
    modified_at: Time | None = None
    amount_filled: Amount | None = None
    volume_weighted_average_price: Price | None = None
    time_in_force: TimeInForce | None = None
    expiration_date: Time | None = None
    identity_id: str | None = None
    identity_account_id: str | None = None
    stop_price: Price | None = None
    recipient_profile_id: str | None = None
    is_triggered: bool | None = None


class ListOrdersResponse(Shape):
    items: list[Order] | None = None
    next_page_cursor: str | None = None


class CancelOrderResponse(Shape):
    """Empty: get the order to see it CANCELLED."""


class Execution(Shape):
    execution_id: (
        Annotated[
            str, Field(json_schema_extra={"format": "uint64"}, examples=["1651319660962859803"])
        ]
        | None
    ) = None
    order_id: Id | None = None
    executed_at: Time | None = None
    market: Market | None = None
    side: OrderSide | None = None
    amount: Amount | None = None
    price: Price | None = None
    commission: Amount | None = None
    commission_asset: Asset | None = None
    rebate: Amount | None = None
    rebate_asset: Asset | None = None
    account_id: str | None = None
    gross_trade_amount: Amount | None = None


class ListExecutionsResponse(Shape):
    items: list[Execution] | None = None
    next_page_cursor: str | None = None


# -- held-rate quotes and their executions -----------------------------------------------


class Quote(Shape):
    id: Id
    market: Market
    side: OrderSide
    price: Price
    base_asset: Asset
    quote_asset: Annotated[str, Field(examples=["USD"])]
    created_at: Time
    expires_at: Time


class ListQuotesResponse(Shape):
    items: list[Quote] | None = None


class QuoteExecution(Shape):
    id: Id
    profile_id: Id
    quote_id: Id
    ref_id: str | None = None
    status: QuoteExecutionStatus
    market: Market
    side: OrderSide
    price: Price
    base_amount: Amount
    base_asset: Asset
    quote_amount: Annotated[str, Field(examples=["100.00"])]
    quote_asset: Annotated[str, Field(examples=["USD"])]
    created_at: Time
    settled_at: Time | None = None
    metadata: Metadata | None = None
    identity_id: str | None = None
    account_id: str | None = None
    recipient_profile_id: str | None = None


class ListQuoteExecutionsResponse(Shape):
    total_count: Annotated[int, Field(json_schema_extra={"format": "int32"})] | None = None
    items: list[QuoteExecution] | None = None
    next_page_cursor: str | None = None


# -- prices -------------------------------------------------------------------------------


class Pricing(Shape):
    market: PriceMarket | None = None
    current_price: Price | None = None
    yesterday_price: Price | None = None
    snapshot_at: Time | None = None


class ListPricesResponse(Shape):
    items: list[Pricing] | None = None


class HistoricalPrice(Shape):
    average_price: Price | None = None
    timestamp: Time | None = None


class ListHistoricalPricesResponse(Shape):
    total_count: Annotated[int, Field(json_schema_extra={"format": "int32"})] | None = None
    items: list[HistoricalPrice] | None = None


# -- market data --------------------------------------------------------------------------


class MarketDetails(Shape):
    market: Market | None = None
    base_asset: Asset | None = None
    quote_asset: Annotated[str, Field(examples=["USD"])] | None = None
    tick_rate: Annotated[str, Field(examples=["0.25"])] | None = None


class ListMarketsResponse(Shape):
    markets: list[MarketDetails] | None = None


class BookLevel(Shape):
    price: Price | None = None
    amount: Amount | None = None


class GetOrderBookResponse(Shape):
    asks: list[BookLevel] | None = None
    bids: list[BookLevel] | None = None
    market: Market | None = None


class TimestampRange(Shape):
    begin: Time | None = None
    end: Time | None = None


class ExchangeStats(Shape):
    high: Price | None = None
    low: Price | None = None
    open: Price | None = None
    volume: Amount | None = None
    volume_weighted_average_price: Price | None = None
    range: TimestampRange | None = None


class TickerRecord(Shape):
    market: Market | None = None
    best_bid: BookLevel | None = None
    best_ask: BookLevel | None = None
    last_execution: BookLevel | None = None
    last_day: ExchangeStats | None = None
    today: ExchangeStats | None = None
    snapshot_at: Time | None = None


class ListTickersResponse(Shape):
    tickers: list[TickerRecord] | None = None


class RecentExecution(Shape):
    match_number: Annotated[str, Field(examples=["100000000001"])] | None = None
    price: Price | None = None
    amount: Amount | None = None
    executed_at: Time | None = None


class ListRecentExecutionsResponse(Shape):
    items: list[RecentExecution] | None = None


# -- events -------------------------------------------------------------------------------


class Event(Shape):
    id: Id | None = None
    type: Annotated[str, Field(examples=["transfer.crypto_deposit.completed"])] | None = None
    object_type: Annotated[str, Field(examples=["transfer_status_change"])] | None = None
    object: dict[str, Any] | None = None
    created_at: Time | None = None
    undelivered_webhooks: Annotated[int, Field(json_schema_extra={"format": "int32"})] | None = None


class ListEventsResponse(Shape):
    events: list[Event] | None = None


# -- sandex's own operations ----------------------------------------------------------------


class TokenResponse(Shape):
    access_token: str
    expires_in: Annotated[int, Field(examples=[3599])]
    scope: Annotated[str, Field(examples=["funding:read_profile exchange:write_order"])]
    token_type: Literal["bearer"]


class SandboxClock(Shape):
    now: Time
    mode: Literal["wall", "manual"]


class PacingEntry(Shape):
    mode: Annotated[str, Field(json_schema_extra={"enum": list(pacing.MODES)})]
    value: str | None = None


class SandboxPacing(Shape):
    withdrawal: PacingEntry
    deposit: PacingEntry
    fiat_deposit: PacingEntry
    conversion: PacingEntry
    fiat_account_review: PacingEntry


class SandboxCustomer(Shape):
    customer_id: Id
    client_id: Id
    client_secret: str
    profile_id: Id


class SandboxMarketPrice(Shape):
    market: Market
    reference_price: Price
    last_price: Price
    as_of: Time


class SandboxSnapshot(Shape):
    name: Annotated[str, Field(examples=["before-test"])]
    position: int
    taken_at: Time


class RestoredSandboxSnapshot(SandboxSnapshot):
    restored_at: Time


class ListSandboxSnapshotsResponse(Shape):
    items: list[SandboxSnapshot]


class SandboxWorldClock(Shape):
    mode: Literal["wall", "manual"]
    now: Time | None = None  # None while the world is not loaded


class SandboxWorldCreated(Shape):
    id: Annotated[str, Field(examples=["w_Qm9yZXN0LWdyZWVuLTAx"])]
    name: str
    base_url: Annotated[str, Field(examples=["http://127.0.0.1:8000/w/w_Qm9yZXN0LWdyZWVuLTAx/v2"])]
    token_url: str
    client_id: str
    client_secret: Annotated[
        str | None,
        Field(
            description="the bootstrap client's secret, drawn from the OS and answered this"
            " once; absent for a fork, whose clients (and their secrets) are its template's"
        ),
    ] = None
    profile_id: Id
    clock: SandboxWorldClock
    created_at: Time


class SandboxWorld(Shape):
    id: str
    name: str
    base_url: str
    token_url: str
    status: Literal["ACTIVE"]
    clock: SandboxWorldClock
    events: int
    size_bytes: int
    loaded: bool
    last_used_at: Time | None = None
    expires_after_idle_seconds: int | None = None
    expires_at: Time | None = None
    from_world: str | None = None
    from_snapshot: str | None = None
    created_at: Time


class ListSandboxWorldsResponse(Shape):
    items: list[SandboxWorld]
    next_page_cursor: str | None = None


class SandboxWorldRecording(Shape):
    id: str
    scenario: Annotated[
        str,
        Field(
            description="the world's requests so far as a scenario (YAML) that `sandex replay`"
            " runs on an empty sandbox; a fork's begins with its template's"
        ),
    ]


class SandboxWorldDeleted(Shape):
    id: str
    deleted: bool


class SandboxRequestFault(Shape):
    rule_id: Annotated[str | None, Field(description="the fault rule that fired")] = None
    template: Annotated[
        str | None, Field(description="the Prefer header's template that fired, if one did")
    ] = None
    when: Annotated[str | None, Field(examples=["before"])] = None
    action: Annotated[str | None, Field(examples=["problem"])] = None


class SandboxRequest(Shape):
    """One request of the world, as it was answered (docs/faults.md)."""

    id: Annotated[int, Field(description="numbered in the order answered, from 1")]
    request_id: Annotated[str, Field(description="the X-Request-ID it was answered with")]
    time: Annotated[Time, Field(description="engine time when it arrived")]
    method: Annotated[str, Field(examples=["POST"])]
    path: Annotated[str, Field(examples=["/v2/profiles/5f8a2a3c/orders"])]
    operation: Annotated[
        str | None,
        Field(description="its operationId; absent for a path no operation serves"),
    ] = None
    status: Annotated[int, Field(examples=[200])]
    problem_type: Annotated[
        str | None, Field(description="the type of the problem it was answered with")
    ] = None
    fault: SandboxRequestFault | None = None
    events: Annotated[
        list[Id],
        Field(description="the events it caused in its caller's feed (GET /v2/events/{id})"),
    ]
    duration_ms: Annotated[float, Field(examples=[1.25])]
    client_id: Annotated[str | None, Field(description="its caller, when known")] = None


class ListSandboxRequestsResponse(Shape):
    items: list[SandboxRequest]
    next_page_cursor: str | None = None


class SandboxReset(Shape):
    position: int
    reset_at: Time


class SandboxWebhook(Shape):
    id: Id
    url: Annotated[str, Field(examples=["http://127.0.0.1:9000/hooks"])]
    created_at: Time


class SandboxFault(Shape):
    """A fault rule as armed (sandex.engine.domain.sandbox_faults.rule_view), with its counts:
    `status` active, spent (fired `times` times) or expired (past `until` or its ttl)."""

    id: Id
    match: dict[str, Any]
    when: Annotated[str, Field(json_schema_extra={"enum": list(faults.WHEN)})]
    action: dict[str, Any]
    times: int | None = None
    skip: int
    probability: str
    until: Time | None = None
    ttl_seconds: int | None = None
    expires_at: Time | None = None
    armed_at: Time
    matched: int
    fired: int
    spent: bool
    status: Annotated[str, Field(json_schema_extra={"enum": list(faults.STATUSES)})]


class ListSandboxFaultsResponse(Shape):
    items: list[SandboxFault]


class SandboxWebhookRegistration(SandboxWebhook):
    secret: Annotated[str, Field(description="signs each delivery; shown once")]


class DeliveryAttempt(Shape):
    event_id: Id
    attempt: int
    outcome: Annotated[str, Field(examples=["delivered", "failed: HTTP 503"])]
    fault_rule_id: Annotated[
        str | None, Field(description="the webhook fault rule that failed it, if one did")
    ] = None


class SandboxWebhookStatus(SandboxWebhook):
    undelivered_webhooks: int
    failed_attempts: int
    last_error: str | None = None
    recent_attempts: Annotated[
        list[DeliveryAttempt], Field(description="the last attempts, oldest first")
    ] = []


class SandboxWebhookFaultMatch(Shape):
    webhook_id: Id | None = None
    event_type: Annotated[str | None, Field(examples=["transfer.crypto_deposit.completed"])] = None


class SandboxWebhookFaultFail(Shape):
    status: Annotated[int, Field(ge=400, le=599)]


class SandboxWebhookFaultAction(Shape):
    """Exactly one of the four."""

    fail: SandboxWebhookFaultFail | None = None
    delay_seconds: Annotated[int | None, Field(description="engine time")] = None
    duplicate: bool | None = None
    out_of_order: bool | None = None


class SandboxWebhookFault(Shape):
    id: Id
    match: SandboxWebhookFaultMatch
    action: SandboxWebhookFaultAction
    times: int
    remaining: Annotated[int, Field(description="firings left; 0: spent")]
    created_at: Time


class ListSandboxWebhookFaultsResponse(Shape):
    items: list[SandboxWebhookFault]


class HealthWorlds(Shape):
    total: Annotated[int, Field(description="worlds the server keeps")]
    loaded: Annotated[int, Field(description="worlds loaded now (an engine each)")]
    max_worlds: Annotated[int, Field(description="the most worlds kept (`max_worlds`)")]
    max_loaded_worlds: Annotated[
        int, Field(description="the most worlds loaded at once (`max_loaded_worlds`)")
    ]


class Health(Shape):
    status: Literal["ok", "unavailable"]
    role: Annotated[
        Literal["writer", "standby"],
        Field(
            description="`writer`: this process writes to the database; `standby`: another"
            " does, and this one takes over when it goes (PostgreSQL only; always 503)"
        ),
    ]
    writer: Annotated[
        Literal["running", "stopped"], Field(description="the writer thread that decides")
    ]
    last_commit: Annotated[
        Literal["ok", "failed"], Field(description="whether the last group commit was durable")
    ]
    store: Annotated[Literal["ok", "unavailable"], Field(description="whether the log can be read")]
    position: Annotated[int, Field(description="position of the last committed event")]
    clock: SandboxClock
    worlds: Annotated[
        HealthWorlds | None,
        Field(
            description="the server's other worlds (docs/worlds.md): in the default world's"
            " answer only; a world's own knows nothing of the others"
        ),
    ] = None


# -- deposit addresses and crypto deposits -------------------------------------------------


class DepositAddress(Shape):
    id: Id
    profile_id: Id
    customer_id: Id
    crypto_network: CryptoNetwork
    identity_id: str | None = None
    ref_id: str | None = None
    metadata: Metadata | None = None
    address: Annotated[str, Field(examples=["0x89205A3A3b2A69De6Dbf7f01ED13B2108B2c43e7"])]
    account_id: str | None = None
    conversion_target_asset: Literal["NO_CONVERSION", "USD"]
    compatible_crypto_networks: list[CryptoNetwork] | None = None
    created_at: Time


class ListDepositAddressesResponse(Shape):
    items: list[DepositAddress] | None = None
    next_page_cursor: str | None = None


class RejectCryptoDepositResponse(Shape):
    """Empty: the deposit is FAILED, secondary status TRAVEL_RULE_REJECTED."""


class UpdateCryptoDepositResponse(Shape):
    """Empty: the deposit completes once its network has confirmed it."""


# -- fiat accounts ------------------------------------------------------------------------


class FiatAccount(Shape):
    """In full from Get, Create and Update; the list leaves out the owner, keeps only an
    address's country and shows an account number's last four digits (XXXX1234)."""

    id: Id
    ref_id: str | None = None
    identity_id: str | None = None
    account_id: str | None = None
    fiat_account_owner: FiatAccountOwnerDetails | None = None
    fiat_network_instructions: FiatNetworkInstructionsDetails
    status: FiatAccountStatus
    metadata: Metadata | None = None
    created_at: Time
    updated_at: Time | None = None


class ListFiatAccountsResponse(Shape):
    items: list[FiatAccount] | None = None
    next_page_cursor: str | None = None


class DeleteFiatAccountResponse(Shape):
    """Empty: the account takes no more withdrawals and is read only with include_deleted."""


def ok(model: type[BaseModel], description: str = "Success") -> dict[int | str, dict[str, Any]]:
    """A route's `responses`: the model of its 200 answer, for the document only."""
    return {200: {"model": model, "description": description}}
