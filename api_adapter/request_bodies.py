"""Request bodies as the reference shapes them. Unknown fields are ignored, as the
service ignores them (its own examples carry fields beyond its schemas); with the
`strict_fields` setting they are refused, a 400 naming the field, so that a typo fails
here rather than silently. Amounts are strings and a JSON number is never coerced into
one. An optional field may be left out but not sent as null: the reference makes no
field nullable, so `"total": null` is a 400 naming `total`, not a request without a
total."""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)
from pydantic_core import PydanticCustomError

from sandex.engine.domain import sandbox_faults as faults
from sandex.engine.domain.trading.order import SIDE_NAMES
from sandex.engine.domain.trading.order_types import ALL_TIF, ORDER_TYPE_NAMES
from sandex.engine.domain.transfers.deposit_addresses import SECONDARY_STATUSES
from sandex.engine.domain.transfers.funding import ROUTING_TYPES
from sandex.engine.domain.transfers.networks import CRYPTO_NETWORKS, FIAT_DEPOSIT_NETWORKS
from sandex.engine.domain.transfers.transfer_records import TRANSFER_STATUSES, TRANSFER_TYPE_NAMES
from sandex.engine.kernel.money import AMOUNT_PATTERN, MARKETS

FIAT_AMOUNT_PATTERN = r"^[0-9]*\.?[0-9]{1,2}$"
ADDRESS_PATTERN = r"^[0-9A-Za-z /?:().,&'+-]+$"
Amount = Annotated[str, StringConstraints(pattern=AMOUNT_PATTERN.pattern, max_length=64)]
FiatAmount = Annotated[str, StringConstraints(pattern=FIAT_AMOUNT_PATTERN, max_length=64)]
AddressField = Annotated[str, StringConstraints(pattern=ADDRESS_PATTERN, max_length=35)]


def _empty_is_absent(value: object) -> object:
    return None if value == "" else value


# An optional address line sent empty (`"address2": ""`, as the service's own examples
# send it) is a line left out; a required one must still hold a character.
OptionalAddressField = Annotated[AddressField | None, BeforeValidator(_empty_is_absent)]
Text = Annotated[str, StringConstraints(max_length=1000)]
ShortText = Annotated[str, StringConstraints(max_length=200)]

# The vocabularies as the domain declares them (tests/unit/test_vocabularies.py).
CryptoNetwork = Literal[CRYPTO_NETWORKS]  # type: ignore[valid-type]
FiatDepositNetwork = Literal[FIAT_DEPOSIT_NETWORKS]  # type: ignore[valid-type]
# Transfer filters: types, statuses and secondary statuses.
TransferType = Literal[TRANSFER_TYPE_NAMES]  # type: ignore[valid-type]
TransferStatus = Literal[TRANSFER_STATUSES]  # type: ignore[valid-type]
SecondaryStatus = Literal[SECONDARY_STATUSES]  # type: ignore[valid-type]
RoutingNumberType = Literal[ROUTING_TYPES]  # type: ignore[valid-type]


# The error types of a null sent for a declared field and of a field no model declares
# (`problems._wording` words them).
NULL_VALUE = "null_value"
UNKNOWN_FIELD = "unknown_field"
# Whether the request being served refuses unknown fields: the server's `strict_fields`
# setting, set per request by the body guard (a process may serve several apps).
STRICT_FIELDS: ContextVar[bool] = ContextVar("sandex_strict_fields", default=False)


def _not_nullable(schema: dict[str, Any]) -> None:
    """The JSON schema of a body says what the model takes: optional, never null."""
    for prop in schema.get("properties", {}).values():
        options = prop.get("anyOf")
        if options and {"type": "null"} in options:
            options.remove({"type": "null"})
            if len(options) == 1:
                del prop["anyOf"]
                prop.update(options[0])
        if prop.get("default", "") is None:
            del prop["default"]


class Body(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, json_schema_extra=_not_nullable)

    @model_validator(mode="before")
    @classmethod
    def _declared_fields(cls, data: Any) -> Any:
        """No null for a declared field and, with STRICT_FIELDS, no field undeclared: each
        refused with the field's name, which `problems._located` adds to the error's place."""
        if isinstance(data, dict):
            if None in data.values():
                for name, value in data.items():
                    if value is None and name in cls.model_fields:
                        raise PydanticCustomError(NULL_VALUE, "{field} is null", {"field": name})
            if STRICT_FIELDS.get() and not data.keys() <= cls.model_fields.keys():
                name = next(name for name in data if name not in cls.model_fields)
                raise PydanticCustomError(UNKNOWN_FIELD, "{field} is unknown", {"field": name})
        return data


class CreateProfileRequest(Body):
    nickname: ShortText
    description: Text | None = None


class UpdateProfileRequest(Body):
    nickname: ShortText


class CreateStablecoinConversionRequest(Body):
    profile_id: ShortText
    amount: Amount
    source_asset: ShortText
    target_asset: ShortText
    ref_id: ShortText | None = None
    identity_id: ShortText | None = None
    account_id: ShortText | None = None
    metadata: dict[str, str] | None = None
    recipient_profile_id: ShortText | None = None


class SandboxDepositRequest(Body):
    asset: ShortText
    amount: Amount
    crypto_network: CryptoNetwork | None = None
    crypto_address: ShortText | None = None


class CreateFiatDepositInstructionsRequest(Body):
    profile_id: ShortText
    fiat_network: FiatDepositNetwork
    ref_id: ShortText | None = None
    identity_id: ShortText | None = None
    account_id: ShortText | None = None
    routing_number_type: RoutingNumberType | None = None
    metadata: dict[str, str] | None = None


class MailingAddress(Body):
    country: AddressField
    address1: OptionalAddressField = None
    address2: OptionalAddressField = None
    city: OptionalAddressField = None
    province: OptionalAddressField = None
    zip_code: OptionalAddressField = None


class WireRoutingDetails(Body):
    routing_number_type: RoutingNumberType
    routing_number: ShortText
    bank_name: ShortText
    bank_address: MailingAddress


class WireInstructions(Body):
    account_number: ShortText
    fiat_account_owner_address: MailingAddress
    routing_details: WireRoutingDetails
    intermediary_routing_details: WireRoutingDetails | None = None


class SandboxFiatNetworkInstructions(Body):
    """Named apart from the answers' `FiatNetworkInstructions*` shapes: a client generator
    names this model's inline members `<Model><Field>`, which would collide with them."""

    wire: WireInstructions | None = None
    cbit: dict[str, object] | None = None
    dbs_act: dict[str, object] | None = None
    cubix: dict[str, object] | None = None
    scb: dict[str, object] | None = None


class InstitutionDetails(Body):
    name: ShortText


class PersonDetails(Body):
    first_name: ShortText
    last_name: ShortText


class FiatAccountOwner(Body):
    person_details: PersonDetails | None = None
    institution_details: InstitutionDetails | None = None


class Beneficiary(Body):
    """Who receives a crypto withdrawal, in the reference's shape (its `Beneficiary`; the
    required names of `BeneficiaryPerson` are its camelCase fault, fixed here): nothing
    else is stored, where any JSON up to the body limit was."""

    person_details: PersonDetails | None = None
    institution_details: InstitutionDetails | None = None


class InitiateSandboxFiatDepositRequest(Body):
    amount: FiatAmount
    asset: ShortText
    memo_id: ShortText
    fiat_network_instructions: SandboxFiatNetworkInstructions
    fiat_account_owner: FiatAccountOwner | None = None


class ClockMoveRequest(Body):
    advance_seconds: Annotated[int, Field(ge=0, le=10 * 365 * 24 * 3600)] | None = None
    set_to: ShortText | None = None


class PacingChoice(Body):
    """One pending kind's pace (sandex.engine.domain.sandbox_pacing.MODES); `value` counts the
    seconds of `after_seconds` or the reads of `after_polls`."""

    mode: ShortText
    value: Annotated[int, Field(ge=0)] | None = None


class PacingRequest(Body):
    """The kinds to pace anew (sandex.engine.domain.sandbox_pacing.KINDS); the others keep theirs."""

    withdrawal: PacingChoice | None = None
    deposit: PacingChoice | None = None
    fiat_deposit: PacingChoice | None = None
    conversion: PacingChoice | None = None
    fiat_account_review: PacingChoice | None = None


class ReleaseRequest(Body):
    """Why a pending item is released to fail (its status details say it)."""

    reason: ShortText | None = None


class CreateCustomerRequest(Body):
    scopes: list[ShortText] | None = None
    # The permission self_match_prevention_id needs, which the real service grants to
    # some accounts only: without it an order naming that field is a 403.
    self_match_prevention: bool = False
    # An integration that does not use identities: identity ids on its orders and
    # transfers are labels until it creates an identity (docs/identities.md).
    identity_labels: bool = False


class CreateCryptoWithdrawalFeeRequest(Body):
    asset: ShortText
    destination_address: ShortText
    crypto_network: CryptoNetwork
    amount: Amount | None = None
    total: Amount | None = None


class CreateCryptoWithdrawalRequest(Body):
    profile_id: ShortText
    asset: ShortText
    destination_address: ShortText
    crypto_network: CryptoNetwork
    amount: Amount | None = None
    total: Amount | None = None
    fee_id: ShortText | None = None
    ref_id: ShortText | None = None
    balance_asset: ShortText | None = None
    identity_id: ShortText | None = None
    account_id: ShortText | None = None
    memo: ShortText | None = None
    metadata: dict[str, str] | None = None
    beneficiary: Beneficiary | None = None


class CreateInternalTransferRequest(Body):
    from_profile_id: ShortText
    to_profile_id: ShortText
    asset: ShortText
    amount: Amount
    ref_id: ShortText | None = None
    metadata: dict[str, str] | None = None
    recipient_metadata: dict[str, str] | None = None
    from_identity_id: ShortText | None = None
    from_account_id: ShortText | None = None
    to_identity_id: ShortText | None = None
    to_account_id: ShortText | None = None


def _digits(value: object) -> object:
    return str(value) if type(value) is int else value


# Unix milliseconds: the reference types it as a string; a JSON integer is taken too (as
# its digits, so that an error names the field and not a member of a union of types).
ExpirationDate = Annotated[ShortText, BeforeValidator(_digits)]
Side = Literal[SIDE_NAMES]  # type: ignore[valid-type]
if TYPE_CHECKING:  # a Literal built from a dict's keys is no type to mypy
    MarketName = str
else:
    MarketName = Literal[tuple(MARKETS)]
OrderType = Literal[ORDER_TYPE_NAMES]  # type: ignore[valid-type]
TimeInForce = Literal[ALL_TIF]  # type: ignore[valid-type]


class CreateOrderRequest(Body):
    side: Side
    market: MarketName
    type: OrderType
    ref_id: ShortText | None = None
    base_amount: Amount | None = None
    price: Amount | None = None
    quote_amount: Amount | None = None
    metadata: dict[str, str] | None = None
    await_fill_millis: int | None = None
    time_in_force: TimeInForce | None = None
    expiration_date: ExpirationDate | None = None
    identity_id: ShortText | None = None
    identity_account_id: ShortText | None = None
    stop_price: Amount | None = None
    recipient_profile_id: ShortText | None = None
    self_match_prevention_id: ShortText | None = None


class MarketPriceRequest(Body):
    price: Amount
    # True: the price jumps there (resting orders it passes trade at the ladder's prices,
    # their own or better), as at an opening gap; false: it walks there (at their prices).
    gap: bool = False


class CreateQuoteExecutionRequest(Body):
    quote_id: ShortText
    ref_id: ShortText | None = None
    base_amount: Amount | None = None
    quote_amount: Amount | None = None
    metadata: dict[str, str] | None = None
    identity_id: ShortText | None = None
    account_id: ShortText | None = None
    recipient_profile_id: ShortText | None = None


# -- deposit addresses and crypto deposits ------------------------------------------------


class CreateDepositAddressRequest(Body):
    profile_id: ShortText
    crypto_network: CryptoNetwork
    identity_id: ShortText | None = None
    account_id: ShortText | None = None
    ref_id: ShortText | None = None
    metadata: dict[str, str] | None = None
    conversion_target_asset: Literal["NO_CONVERSION", "USD"] | None = None


class SandboxCryptoDepositRequest(Body):
    """sandex's own: the outside world sends crypto to a deposit address."""

    address: ShortText
    asset: ShortText
    amount: Amount
    crypto_network: CryptoNetwork | None = None
    # Read only for its sandbox triggers (docs/sandbox-triggers.md).
    memo: ShortText | None = None


class IndividualInfo(Body):
    first_name: ShortText
    last_name: ShortText


class InstitutionInfo(Body):
    institution_name: ShortText


class OriginatorAddressInfo(Body):
    individual_info: IndividualInfo | None = None
    institution_info: InstitutionInfo | None = None


class RejectCryptoDepositRequest(Body):
    identity_id: ShortText


class UpdateCryptoDepositRequest(Body):
    identity_id: ShortText
    originator_address_info: OriginatorAddressInfo


# -- fiat accounts and fiat withdrawals ---------------------------------------------------

MEMO_PATTERN = r"^[0-9A-Za-z /?:().,&'+-]*$"


class CbitInstructions(Body):
    wallet_address: ShortText


class CubixInstructions(Body):
    account_id: ShortText


class AccountNumberInstructions(Body):
    account_number: ShortText


class FiatAccountNetworkInstructions(Body):
    """Exactly one network's instructions (the engine says which one is missing)."""

    wire: WireInstructions | None = None
    cbit: CbitInstructions | None = None
    dbs_act: AccountNumberInstructions | None = None
    cubix: CubixInstructions | None = None
    scb: AccountNumberInstructions | None = None


class CreateFiatAccountRequest(Body):
    fiat_account_owner: FiatAccountOwner
    fiat_network_instructions: FiatAccountNetworkInstructions
    ref_id: ShortText | None = None
    identity_id: ShortText | None = None
    account_id: ShortText | None = None
    metadata: dict[str, str] | None = None


class RoutingDetailsUpdate(Body):
    bank_name: ShortText | None = None
    bank_address: MailingAddress | None = None


class WireUpdate(Body):
    fiat_account_owner_address: MailingAddress | None = None
    routing_details: RoutingDetailsUpdate | None = None
    intermediary_routing_details: RoutingDetailsUpdate | None = None


class FiatAccountNetworkInstructionsUpdate(Body):
    wire: WireUpdate | None = None


class UpdateFiatAccountRequest(Body):
    fiat_account_owner: FiatAccountOwner | None = None
    fiat_network_instructions: FiatAccountNetworkInstructionsUpdate | None = None
    metadata: dict[str, str] | None = None


class CreateFiatWithdrawalRequest(Body):
    profile_id: ShortText
    asset: ShortText
    fiat_account_id: ShortText
    amount: FiatAmount | None = None
    total: Amount | None = None
    ref_id: ShortText | None = None
    identity_id: ShortText | None = None
    account_id: ShortText | None = None
    metadata: dict[str, str] | None = None
    memo: Annotated[str, StringConstraints(pattern=MEMO_PATTERN, max_length=500)] | None = None


class WebhookRequest(Body):
    url: Annotated[str, StringConstraints(min_length=1, max_length=2048)]


class WebhookFaultMatch(Body):
    """Which of the caller's deliveries a rule hits: none given, every one."""

    webhook_id: ShortText | None = None
    event_type: ShortText | None = None


class WebhookFaultFail(Body):
    status: int


class WebhookFaultAction(Body):
    """Exactly one of these (sandex.engine.domain.webhook_faults.ACTIONS), which the engine checks."""

    fail: WebhookFaultFail | None = None
    delay_seconds: int | None = None
    duplicate: bool | None = None
    out_of_order: bool | None = None


class WebhookFaultRequest(Body):
    match: WebhookFaultMatch | None = None
    action: WebhookFaultAction
    times: int = 1


class FaultRuleRequest(Body):
    """A fault rule, exactly as issue 31 spells it; sandex.engine.domain.sandbox_faults checks
    each field and names the wrong one (`match.operation`, `action.problem.status`)."""

    match: Annotated[
        dict[str, Any],
        Field(
            description="operation (an operationId), or method and path (a path template);"
            " optionally client_id, profile_id, body (fields equal to values)",
            examples=[{"operation": "CreateOrder", "body": {"market": "BTCUSD"}}],
        ),
    ]
    when: Annotated[str, Field(json_schema_extra={"enum": list(faults.WHEN)})] = "before"
    action: Annotated[
        dict[str, Any],
        Field(
            description="exactly one of problem {status, type, detail, retry_after}, delay_ms"
            " (milliseconds, or {min, max} drawn from the world's seed), drop, reset, empty,"
            " truncate (true)",
            examples=[{"problem": {"status": 503}}],
        ),
    ]
    times: int | None = None
    skip: int | None = None
    probability: Annotated[
        str | int | float | None, Field(description="a decimal from 0 to 1, best as a string")
    ] = None
    until: Annotated[str | None, Field(description="an RFC 3339 time of the engine's clock")] = None
    ttl_seconds: int | None = None


class SnapshotRequest(Body):
    name: ShortText


class CreateWorldRequest(Body):
    name: ShortText | None = None
    clock: Literal["wall", "manual"] = "wall"
    start_time: ShortText | None = None
    seed: Annotated[int, Field(ge=0, le=2**63 - 1)] | None = None
    settings: dict[str, Any] | None = None
    from_world: ShortText | None = None
    from_snapshot: ShortText | None = None
    expires_after_idle_seconds: Annotated[int, Field(ge=1, le=10 * 365 * 24 * 3600)] | None = None
    record: bool = False
