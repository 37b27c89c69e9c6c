"""The operation table: every operation sandex serves, one row each, and what every layer
needs to know of it.

A row names the operation (the reference document's operationId; sandbox-only operations
get ids of the same style), its method and path template, the scope its bearer token must
hold (None: no token), its rate-limit family, its body model, the shape of its answer and,
for the busiest writes, the command its request builds. The routes take their path,
operation id and answer shape from it (`pipeline.route`), the request pipeline its scope
(`pipeline.run_gates`), the rate limiter its families (`rate_limits.FAMILIES`), the fast lane
its rows with a command builder, and the OpenAPI document its scopes
(`openapi.install`); `tests/unit/test_operations.py` holds the app's routes to it, one
route a row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from pydantic import BaseModel

from sandex.api_adapter import identity_bodies, identity_shapes, request_commands
from sandex.api_adapter import request_bodies as bodies
from sandex.api_adapter import response_shapes as shapes

if TYPE_CHECKING:  # the bearer check imports the table (through the rate limiter)
    from sandex.api_adapter.auth import Principal
    from sandex.engine.kernel.commands import Actor, Command

# The command of a request: (actor, caller, path parameter or "", body).
Build: TypeAlias = "Callable[[Actor, Principal, str, Any], Command]"

# The rate-limit families every other operation falls in, by its method
# (api_adapter/rate_limits.py says what each family is and its rate).
READS, WRITES = "reads", "writes"
_READ_METHODS = ("GET", "HEAD")


def _never(body: Any) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Operation:
    """One served operation. `path` is the full path template; the fast lane matches its
    `{parameter}` (at most one, a whole segment) as Starlette does: one non-empty segment."""

    id: str
    method: str
    path: str
    scope: str | None  # the scope a caller's token must hold; None: no token asked
    body: type[BaseModel] | None = None
    answer: type[BaseModel] | None = None  # the model of its 200 answer, for the document
    family: str = ""  # its rate-limit family: READS or WRITES by its method when not given
    build: Build | None = None  # the command of a request: the fast lane serves the row
    # A body whose answer is more than the command's result: only the route serves it.
    route_only: Callable[[Any], bool] = _never
    # The path around its parameter: `head` is the whole path when it has none.
    head: str = field(init=False, repr=False, compare=False)
    tail: str = field(init=False, repr=False, compare=False)
    has_param: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.family:
            own = READS if self.method in _READ_METHODS else WRITES
            object.__setattr__(self, "family", own)
        head, brace, rest = self.path.partition("{")
        object.__setattr__(self, "head", head if brace else self.path)
        object.__setattr__(self, "tail", rest.partition("}")[2] if brace else "")
        object.__setattr__(self, "has_param", bool(brace))

    def command(self, actor: Actor, who: Principal, param: str, body: Any) -> Command:
        """The command of a request: the row's builder's (the route's and the lane's)."""
        if self.build is None:
            raise TypeError(f"{self.id} builds no command of its own")
        return self.build(actor, who, param, body)

    def under(self, prefix: str) -> str:
        """The path below a router's `prefix`, for the route's decorator."""
        if not self.path.startswith(prefix):
            raise ValueError(f"{self.path} is not under {prefix}")
        return self.path[len(prefix) :]


OPERATIONS: tuple[Operation, ...] = (
    # auth
    Operation(
        "IssueToken", "POST", "/oauth2/token", None, answer=shapes.TokenResponse, family="token"
    ),
    # profiles
    Operation(
        "ListProfiles",
        "GET",
        "/v2/profiles",
        "funding:read_profile",
        answer=shapes.ListProfilesResponse,
    ),
    Operation(
        "CreateProfile",
        "POST",
        "/v2/profiles",
        "funding:write_profile",
        body=bodies.CreateProfileRequest,
        answer=shapes.Profile,
    ),
    Operation(
        "GetProfile",
        "GET",
        "/v2/profiles/{profile_id}",
        "funding:read_profile",
        answer=shapes.Profile,
    ),
    Operation(
        "UpdateProfile",
        "PUT",
        "/v2/profiles/{profile_id}",
        "funding:write_profile",
        body=bodies.UpdateProfileRequest,
        answer=shapes.Profile,
    ),
    Operation(
        "DeactivateProfile",
        "PUT",
        "/v2/profiles/{profile_id}/deactivate",
        "funding:write_profile",
        answer=shapes.DeactivateProfileResponse,
    ),
    Operation(
        "ListProfileBalances",
        "GET",
        "/v2/profiles/{profile_id}/balances",
        "funding:read_profile",
        answer=shapes.ListProfileBalancesResponse,
    ),
    Operation(
        "GetProfileBalance",
        "GET",
        "/v2/profiles/{profile_id}/balances/{asset}",
        "funding:read_profile",
        answer=shapes.ProfileBalance,
    ),
    # funding
    Operation(
        "CreateSandboxDeposit",
        "POST",
        "/v2/sandbox/profiles/{profile_id}/deposit",
        "funding:read_profile",
        body=bodies.SandboxDepositRequest,
        answer=shapes.CreateSandboxDepositResponse,
        build=request_commands.sandbox_deposit_command,
    ),
    Operation(
        "CreateFiatDepositInstructions",
        "POST",
        "/v2/transfer/fiat-deposit-instructions",
        "transfer:write_fiat_deposit_instructions",
        body=bodies.CreateFiatDepositInstructionsRequest,
        answer=shapes.FiatDepositInstructions,
    ),
    Operation(
        "ListFiatDepositInstructions",
        "GET",
        "/v2/transfer/fiat-deposit-instructions",
        "transfer:read_fiat_deposit_instructions",
        answer=shapes.ListFiatDepositInstructionsResponse,
    ),
    Operation(
        "GetFiatDepositInstructions",
        "GET",
        "/v2/transfer/fiat-deposit-instructions/{id}",
        "transfer:read_fiat_deposit_instructions",
        answer=shapes.FiatDepositInstructions,
    ),
    Operation(
        "InitiateSandboxFiatDeposit",
        "POST",
        "/v2/sandbox/fiat-deposits",
        "transfer:write_sandbox_fiat_deposit",
        body=bodies.InitiateSandboxFiatDepositRequest,
        answer=shapes.InitiateSandboxFiatDepositResponse,
    ),
    # transfers
    Operation(
        "ListTransfers",
        "GET",
        "/v2/transfer/transfers",
        "transfer:read_transfer",
        answer=shapes.ListTransfersResponse,
    ),
    Operation(
        "GetTransfer",
        "GET",
        "/v2/transfer/transfers/{id}",
        "transfer:read_transfer",
        answer=shapes.Transfer,
    ),
    # sandbox
    Operation("GetSandboxClock", "GET", "/v2/sandbox/clock", None, answer=shapes.SandboxClock),
    Operation(
        "MoveSandboxClock",
        "POST",
        "/v2/sandbox/clock",
        "sandbox:write_customer",
        body=bodies.ClockMoveRequest,
        answer=shapes.SandboxClock,
    ),
    Operation(
        "CreateSandboxCustomer",
        "POST",
        "/v2/sandbox/customers",
        "sandbox:write_customer",
        body=bodies.CreateCustomerRequest,
        answer=shapes.SandboxCustomer,
    ),
    # sandbox: the pacing of pending items, and their release by hand (docs/faults.md);
    # the world's pacing is the bootstrap client's, releasing each tenant's, of its own
    Operation("GetSandboxPacing", "GET", "/v2/sandbox/pacing", None, answer=shapes.SandboxPacing),
    Operation(
        "SetSandboxPacing",
        "PUT",
        "/v2/sandbox/pacing",
        "sandbox:write_customer",
        body=bodies.PacingRequest,
        answer=shapes.SandboxPacing,
    ),
    Operation(
        "CompleteSandboxTransfer",
        "POST",
        "/v2/sandbox/transfers/{id}/complete",
        "transfer:write_sandbox_transfer",
        answer=shapes.Transfer,
    ),
    Operation(
        "FailSandboxTransfer",
        "POST",
        "/v2/sandbox/transfers/{id}/fail",
        "transfer:write_sandbox_transfer",
        body=bodies.ReleaseRequest,
        answer=shapes.Transfer,
    ),
    Operation(
        "ReleaseSandboxOrder",
        "POST",
        "/v2/sandbox/orders/{id}/release",
        "exchange:write_sandbox_order",
        answer=shapes.Order,
    ),
    Operation(
        "CompleteSandboxConversion",
        "POST",
        "/v2/sandbox/conversions/{id}/complete",
        "transfer:write_sandbox_transfer",
        answer=shapes.StablecoinConversion,
    ),
    Operation(
        "CompleteSandboxFiatAccountReview",
        "POST",
        "/v2/sandbox/fiat-accounts/{id}/complete",
        "transfer:write_sandbox_transfer",
        answer=shapes.FiatAccount,
    ),
    Operation(
        "FailSandboxFiatAccountReview",
        "POST",
        "/v2/sandbox/fiat-accounts/{id}/fail",
        "transfer:write_sandbox_transfer",
        body=bodies.ReleaseRequest,
        answer=shapes.FiatAccount,
    ),
    # withdrawals
    Operation(
        "CreateCryptoWithdrawalFee",
        "POST",
        "/v2/transfer/fees/crypto-withdrawal",
        "fee:write_crypto_withdrawal_fee",
        body=bodies.CreateCryptoWithdrawalFeeRequest,
        answer=shapes.CryptoWithdrawalFee,
    ),
    Operation(
        "CreateCryptoWithdrawal",
        "POST",
        "/v2/transfer/crypto-withdrawals",
        "transfer:write_crypto_withdrawal",
        body=bodies.CreateCryptoWithdrawalRequest,
        answer=shapes.Transfer,
        family="transfers",
        build=request_commands.create_withdrawal_command,
    ),
    # internal_transfers
    Operation(
        "CreateInternalTransfer",
        "POST",
        "/v2/transfer/internal",
        "transfer:write_internal_transfer",
        body=bodies.CreateInternalTransferRequest,
        answer=shapes.Transfer,
        family="transfers",
    ),
    # deposit_addresses
    Operation(
        "CreateDepositAddress",
        "POST",
        "/v2/transfer/deposit-addresses",
        "transfer:write_deposit_address",
        body=bodies.CreateDepositAddressRequest,
        answer=shapes.DepositAddress,
    ),
    Operation(
        "ListDepositAddresses",
        "GET",
        "/v2/transfer/deposit-addresses",
        "transfer:read_deposit_address",
        answer=shapes.ListDepositAddressesResponse,
    ),
    Operation(
        "RejectCryptoDeposit",
        "POST",
        "/v2/transfer/crypto-deposits/{id}/reject",
        "transfer:reject_crypto_deposit",
        body=bodies.RejectCryptoDepositRequest,
        answer=shapes.RejectCryptoDepositResponse,
    ),
    Operation(
        "UpdateCryptoDeposit",
        "POST",
        "/v2/transfer/crypto-deposits/{id}/update",
        "transfer:update_crypto_deposit",
        body=bodies.UpdateCryptoDepositRequest,
        answer=shapes.UpdateCryptoDepositResponse,
    ),
    Operation(
        "CreateSandboxCryptoDeposit",
        "POST",
        "/v2/sandbox/crypto-deposits",
        "transfer:write_sandbox_crypto_deposit",
        body=bodies.SandboxCryptoDepositRequest,
        answer=shapes.Transfer,
    ),
    # orders
    Operation(
        "CreateOrder",
        "POST",
        "/v2/profiles/{profile_id}/orders",
        "exchange:write_order",
        body=bodies.CreateOrderRequest,
        answer=shapes.Order,
        family="orders",
        build=request_commands.create_order_command,
        route_only=request_commands.awaits_fill,
    ),
    Operation(
        "GetOrder",
        "GET",
        "/v2/profiles/{profile_id}/orders/{id}",
        "exchange:read_order",
        answer=shapes.Order,
    ),
    Operation(
        "CancelOrder",
        "DELETE",
        "/v2/profiles/{profile_id}/orders/{id}",
        "exchange:write_order",
        answer=shapes.CancelOrderResponse,
        family="orders",
    ),
    Operation(
        "ListProfileOrders",
        "GET",
        "/v2/profiles/{profile_id}/orders",
        "exchange:read_order",
        answer=shapes.ListOrdersResponse,
    ),
    Operation(
        "ListOrders", "GET", "/v2/orders", "exchange:read_order", answer=shapes.ListOrdersResponse
    ),
    # executions
    Operation(
        "ListExecutions",
        "GET",
        "/v2/executions",
        "exchange:read_order",
        answer=shapes.ListExecutionsResponse,
    ),
    Operation(
        "ListProfileExecutions",
        "GET",
        "/v2/profiles/{profile_id}/executions",
        "exchange:read_order",
        answer=shapes.ListExecutionsResponse,
    ),
    # markets
    Operation("ListMarkets", "GET", "/v2/markets", None, answer=shapes.ListMarketsResponse),
    Operation(
        "GetOrderBook",
        "GET",
        "/v2/markets/{market}/order-book",
        None,
        answer=shapes.GetOrderBookResponse,
        family="market-data",
    ),
    Operation("GetTicker", "GET", "/v2/markets/{market}/ticker", None, answer=shapes.TickerRecord),
    Operation(
        "ListRecentExecutions",
        "GET",
        "/v2/markets/{market}/recent-executions",
        None,
        answer=shapes.ListRecentExecutionsResponse,
        family="market-data",
    ),
    Operation(
        "ListTickers", "GET", "/v2/all-markets/ticker", None, answer=shapes.ListTickersResponse
    ),
    Operation(
        "GetSandboxMarketPrice",
        "GET",
        "/v2/sandbox/markets/{market}/price",
        None,
        answer=shapes.SandboxMarketPrice,
    ),
    Operation(
        "SetSandboxMarketPrice",
        "POST",
        "/v2/sandbox/markets/{market}/price",
        "sandbox:write_customer",
        body=bodies.MarketPriceRequest,
        answer=shapes.SandboxMarketPrice,
    ),
    # events
    Operation(
        "ListEvents", "GET", "/v2/events", "events:read_event", answer=shapes.ListEventsResponse
    ),
    Operation("GetEvent", "GET", "/v2/events/{id}", "events:read_event", answer=shapes.Event),
    # snapshots
    Operation(
        "TakeSandboxSnapshot",
        "POST",
        "/v2/sandbox/snapshots",
        "sandbox:write_customer",
        body=bodies.SnapshotRequest,
        answer=shapes.SandboxSnapshot,
    ),
    Operation(
        "ListSandboxSnapshots",
        "GET",
        "/v2/sandbox/snapshots",
        "sandbox:write_customer",
        answer=shapes.ListSandboxSnapshotsResponse,
    ),
    Operation(
        "RestoreSandboxSnapshot",
        "POST",
        "/v2/sandbox/snapshots/{name}/restore",
        "sandbox:write_customer",
        answer=shapes.RestoredSandboxSnapshot,
    ),
    Operation(
        "ResetSandbox",
        "POST",
        "/v2/sandbox/reset",
        "sandbox:write_customer",
        answer=shapes.SandboxReset,
    ),
    # the world's recent requests (docs/faults.md): each tenant its own, the bootstrap
    # client everyone's
    Operation(
        "ListSandboxRequests",
        "GET",
        "/v2/sandbox/requests",
        "sandbox:read_requests",
        answer=shapes.ListSandboxRequestsResponse,
    ),
    # webhooks
    Operation(
        "RegisterSandboxWebhook",
        "POST",
        "/v2/sandbox/webhooks",
        "events:read_event",
        body=bodies.WebhookRequest,
        answer=shapes.SandboxWebhookRegistration,
    ),
    Operation(
        "GetSandboxWebhook",
        "GET",
        "/v2/sandbox/webhooks",
        "events:read_event",
        answer=shapes.SandboxWebhookStatus,
    ),
    Operation(
        "RemoveSandboxWebhook",
        "DELETE",
        "/v2/sandbox/webhooks",
        "events:read_event",
        answer=shapes.SandboxWebhook,
    ),
    # webhook delivery faults (docs/faults.md): each tenant's over its own webhook
    Operation(
        "CreateSandboxWebhookFault",
        "POST",
        "/v2/sandbox/webhook-faults",
        "sandbox:faults",
        body=bodies.WebhookFaultRequest,
        answer=shapes.SandboxWebhookFault,
    ),
    Operation(
        "ListSandboxWebhookFaults",
        "GET",
        "/v2/sandbox/webhook-faults",
        "sandbox:faults",
        answer=shapes.ListSandboxWebhookFaultsResponse,
    ),
    Operation(
        "GetSandboxWebhookFault",
        "GET",
        "/v2/sandbox/webhook-faults/{id}",
        "sandbox:faults",
        answer=shapes.SandboxWebhookFault,
    ),
    Operation(
        "DeleteSandboxWebhookFault",
        "DELETE",
        "/v2/sandbox/webhook-faults/{id}",
        "sandbox:faults",
        answer=shapes.SandboxWebhookFault,
    ),
    # HTTP fault rules (docs/faults.md): the bootstrap client's match any call of the world,
    # a tenant's only its own
    Operation(
        "CreateSandboxFault",
        "POST",
        "/v2/sandbox/faults",
        "sandbox:faults",
        body=bodies.FaultRuleRequest,
        answer=shapes.SandboxFault,
    ),
    Operation(
        "ListSandboxFaults",
        "GET",
        "/v2/sandbox/faults",
        "sandbox:faults",
        answer=shapes.ListSandboxFaultsResponse,
    ),
    Operation(
        "GetSandboxFault",
        "GET",
        "/v2/sandbox/faults/{id}",
        "sandbox:faults",
        answer=shapes.SandboxFault,
    ),
    Operation(
        "DeleteSandboxFault",
        "DELETE",
        "/v2/sandbox/faults/{id}",
        "sandbox:faults",
        answer=shapes.SandboxFault,
    ),
    # health
    Operation("GetHealth", "GET", "/healthz", None, answer=shapes.Health),
    # conversions
    Operation(
        "CreateStablecoinConversion",
        "POST",
        "/v2/conversion/stablecoins",
        "conversion:write_conversion_stablecoin",
        body=bodies.CreateStablecoinConversionRequest,
        answer=shapes.StablecoinConversion,
    ),
    Operation(
        "ListStablecoinConversions",
        "GET",
        "/v2/conversion/stablecoins",
        "conversion:read_conversion_stablecoin",
        answer=shapes.ListStablecoinConversionsResponse,
    ),
    Operation(
        "GetStablecoinConversion",
        "GET",
        "/v2/conversion/stablecoins/{id}",
        "conversion:read_conversion_stablecoin",
        answer=shapes.StablecoinConversion,
    ),
    Operation(
        "CancelStablecoinConversion",
        "DELETE",
        "/v2/conversion/stablecoins/{id}",
        "conversion:write_conversion_stablecoin",
        answer=shapes.StablecoinConversion,
    ),
    # transfer_limits
    Operation(
        "ListTransferLimits",
        "GET",
        "/v2/transfer/limits/utilizations",
        "transfer:read_transfer_limit",
        answer=shapes.ListTransferLimitsResponse,
    ),
    # identities
    Operation(
        "CreateIdentity",
        "POST",
        "/v2/identity/identities",
        "identity:write_identity",
        body=identity_bodies.CreateIdentityRequest,
        answer=identity_shapes.Identity,
    ),
    Operation(
        "ListIdentities",
        "GET",
        "/v2/identity/identities",
        "identity:read_identity",
        answer=identity_shapes.ListIdentitiesResponse,
    ),
    Operation(
        "ListIdentityDocuments",
        "GET",
        "/v2/identity/identities/{identity_id}/documents",
        "identity:read_identity",
        answer=identity_shapes.ListIdentityDocumentsResponse,
    ),
    Operation(
        "DocumentUpload",
        "PUT",
        "/v2/identity/identities/{identity_id}/documents",
        "identity:write_identity",
        body=identity_bodies.DocumentUploadRequest,
        answer=identity_shapes.DocumentUploadResponse,
    ),
    Operation(
        "GetIdentity",
        "GET",
        "/v2/identity/identities/{id}",
        "identity:read_identity",
        answer=identity_shapes.Identity,
    ),
    Operation(
        "UpdateIdentity",
        "PUT",
        "/v2/identity/identities/{id}",
        "identity:write_identity",
        body=identity_bodies.UpdateIdentityRequest,
        answer=identity_shapes.Identity,
    ),
    Operation(
        "SandboxSetIdentityStatus",
        "PUT",
        "/v2/identity/identities/{id}/sandbox-status",
        "identity:write_identity",
        body=identity_bodies.SandboxSetIdentityStatusRequest,
        answer=identity_shapes.SandboxSetIdentityResponse,
    ),
    Operation(
        "AddInstitutionMembers",
        "POST",
        "/v2/identity/institution-members",
        "identity:write_identity",
        body=identity_bodies.AddInstitutionMembersRequest,
        answer=identity_shapes.AddInstitutionMembersResponse,
    ),
    Operation(
        "DeleteInstitutionMember",
        "DELETE",
        "/v2/identity/institution-members/{id}",
        "identity:write_identity",
        answer=identity_shapes.DeleteInstitutionMemberResponse,
    ),
    # accounts
    Operation(
        "CreateAccount",
        "POST",
        "/v2/identity/accounts",
        "identity:write_account",
        body=identity_bodies.CreateAccountRequest,
        answer=identity_shapes.Account,
    ),
    Operation(
        "ListAccounts",
        "GET",
        "/v2/identity/accounts",
        "identity:read_account",
        answer=identity_shapes.ListAccountsResponse,
    ),
    Operation(
        "UpdateAccount",
        "PUT",
        "/v2/identity/accounts",
        "identity:write_account",
        body=identity_bodies.UpdateAccountRequest,
        answer=identity_shapes.Account,
    ),
    Operation(
        "GetAccount",
        "GET",
        "/v2/identity/accounts/{id}",
        "identity:read_account",
        answer=identity_shapes.Account,
    ),
    Operation(
        "AddAccountMembers",
        "POST",
        "/v2/identity/account-members",
        "identity:write_account",
        body=identity_bodies.AddAccountMembersRequest,
        answer=identity_shapes.AddAccountMembersResponse,
    ),
    Operation(
        "DeleteAccountMember",
        "DELETE",
        "/v2/identity/account-members/{id}",
        "identity:write_account",
        answer=identity_shapes.DeleteAccountMemberResponse,
    ),
    # quotes
    Operation(
        "ListQuotes", "GET", "/v2/quotes", "exchange:read_quote", answer=shapes.ListQuotesResponse
    ),
    Operation(
        "CreateQuoteExecution",
        "POST",
        "/v2/profiles/{profile_id}/quote-executions",
        "exchange:write_quote_execution",
        body=bodies.CreateQuoteExecutionRequest,
        answer=shapes.QuoteExecution,
    ),
    Operation(
        "ListQuoteExecutions",
        "GET",
        "/v2/profiles/{profile_id}/quote-executions",
        "exchange:read_quote_execution",
        answer=shapes.ListQuoteExecutionsResponse,
    ),
    Operation(
        "GetQuoteExecution",
        "GET",
        "/v2/profiles/{profile_id}/quote-executions/{id}",
        "exchange:read_quote_execution",
        answer=shapes.QuoteExecution,
    ),
    # prices
    Operation(
        "ListPrices", "GET", "/v2/all-markets/prices", None, answer=shapes.ListPricesResponse
    ),
    Operation(
        "ListHistoricalPrices",
        "GET",
        "/v2/markets/{market}/historical-prices",
        "exchange:historical_prices",
        answer=shapes.ListHistoricalPricesResponse,
    ),
    # fiat_accounts
    Operation(
        "CreateFiatAccount",
        "POST",
        "/v2/transfer/fiat-accounts",
        "transfer:write_fiat_account",
        body=bodies.CreateFiatAccountRequest,
        answer=shapes.FiatAccount,
    ),
    Operation(
        "ListFiatAccounts",
        "GET",
        "/v2/transfer/fiat-accounts",
        "transfer:read_fiat_account",
        answer=shapes.ListFiatAccountsResponse,
    ),
    Operation(
        "GetFiatAccount",
        "GET",
        "/v2/transfer/fiat-accounts/{id}",
        "transfer:read_fiat_account",
        answer=shapes.FiatAccount,
    ),
    Operation(
        "UpdateFiatAccount",
        "PUT",
        "/v2/transfer/fiat-accounts/{id}",
        "transfer:write_fiat_account",
        body=bodies.UpdateFiatAccountRequest,
        answer=shapes.FiatAccount,
    ),
    Operation(
        "DeleteFiatAccount",
        "DELETE",
        "/v2/transfer/fiat-accounts/{id}",
        "transfer:write_fiat_account",
        answer=shapes.DeleteFiatAccountResponse,
    ),
    Operation(
        "CreateFiatWithdrawal",
        "POST",
        "/v2/transfer/fiat-withdrawals",
        "transfer:write_fiat_withdrawal",
        body=bodies.CreateFiatWithdrawalRequest,
        answer=shapes.Transfer,
    ),
    # worlds
    Operation(
        "CreateSandboxWorld",
        "POST",
        "/v2/sandbox/worlds",
        "sandbox:worlds",
        body=bodies.CreateWorldRequest,
        answer=shapes.SandboxWorldCreated,
        family="worlds",  # forks too: a world's creation has a budget apart
    ),
    Operation(
        "ListSandboxWorlds",
        "GET",
        "/v2/sandbox/worlds",
        "sandbox:worlds",
        answer=shapes.ListSandboxWorldsResponse,
    ),
    Operation(
        "GetSandboxWorld",
        "GET",
        "/v2/sandbox/worlds/{world_id}",
        "sandbox:worlds",
        answer=shapes.SandboxWorld,
    ),
    Operation(
        "GetSandboxWorldRecording",
        "GET",
        "/v2/sandbox/worlds/{world_id}/recording",
        "sandbox:worlds",
        answer=shapes.SandboxWorldRecording,
    ),
    Operation(
        "DeleteSandboxWorld",
        "DELETE",
        "/v2/sandbox/worlds/{world_id}",
        "sandbox:worlds",
        answer=shapes.SandboxWorldDeleted,
    ),
)

BY_ID: dict[str, Operation] = {op.id: op for op in OPERATIONS}
# The operations of the fault rules themselves, which no rule may match (a rule could
# otherwise keep its owner from removing it).
FAULT_OPERATIONS: tuple[str, ...] = ("CreateSandboxFault", "ListSandboxFaults")
FAULT_OPERATIONS += ("GetSandboxFault", "DeleteSandboxFault")
# What a fault rule may match: (operationId, method, path template) of every other row.
FAULTABLE: tuple[tuple[str, str, str], ...] = tuple(
    (op.id, op.method, op.path) for op in OPERATIONS if op.id not in FAULT_OPERATIONS
)
# The rows the fast lane serves, in the order it tries them: those that build a command.
LANE: tuple[Operation, ...] = tuple(op for op in OPERATIONS if op.build is not None)


def operation(operation_id: str) -> Operation:
    """The row of `operation_id`; a KeyError names an operation the table lacks."""
    return BY_ID[operation_id]
