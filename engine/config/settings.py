"""Engine settings: how the sandbox behaves. Loadable from a YAML config file."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sandex.engine.config.destinations import parse_allowed

ALL_SCOPES: tuple[str, ...] = (
    "funding:read_profile",
    "funding:write_profile",
    "exchange:read_order",
    "exchange:write_order",
    "exchange:self_match_prevention",
    "fee:write_crypto_withdrawal_fee",
    "transfer:read_transfer",
    "transfer:write_crypto_withdrawal",
    "transfer:write_internal_transfer",
    "transfer:read_fiat_deposit_instructions",
    "transfer:write_fiat_deposit_instructions",
    "transfer:write_sandbox_fiat_deposit",
    "events:read_event",
    "sandbox:write_customer",
)
# Scopes of operations served after clients were first recorded: a client is granted
# each one with any scope it is implied by, so that a client's recorded scopes (its
# ClientCreated, and every log already written, the golden one included) stay as they
# were, and a client made before a scope existed holds it as one made after would. A
# customer may also be created with them.
IMPLIED_SCOPES: dict[str, tuple[str, ...]] = {
    "conversion:read_conversion_stablecoin": ("funding:read_profile",),
    "conversion:write_conversion_stablecoin": ("funding:write_profile",),
    "transfer:read_transfer_limit": ("transfer:read_transfer",),
    "exchange:read_quote": ("exchange:read_order",),
    "exchange:read_quote_execution": ("exchange:read_order",),
    "exchange:write_quote_execution": ("exchange:write_order",),
    "exchange:historical_prices": ("exchange:read_order",),
    # releasing one's own order held by `sandbox:hold` (POST /v2/sandbox/orders/{id}/release)
    "exchange:write_sandbox_order": ("exchange:write_order",),
    "transfer:read_deposit_address": ("transfer:read_transfer",),
    "transfer:write_deposit_address": ("transfer:write_crypto_withdrawal",),
    "transfer:reject_crypto_deposit": ("transfer:write_crypto_withdrawal",),
    "transfer:update_crypto_deposit": ("transfer:write_crypto_withdrawal",),
    "transfer:write_sandbox_crypto_deposit": ("transfer:write_sandbox_fiat_deposit",),
    # settling one's own pending items by hand (POST /v2/sandbox/transfers/{id}/complete)
    "transfer:write_sandbox_transfer": ("transfer:write_sandbox_fiat_deposit",),
    # identities and accounts extend what profiles are: granted with the profile scopes
    "identity:read_identity": ("funding:read_profile",),
    "identity:write_identity": ("funding:write_profile",),
    "identity:read_account": ("funding:read_profile",),
    "identity:write_account": ("funding:write_profile",),
    "transfer:read_fiat_account": ("transfer:read_fiat_deposit_instructions",),
    "transfer:write_fiat_account": ("transfer:write_fiat_deposit_instructions",),
    "transfer:write_fiat_withdrawal": ("transfer:write_crypto_withdrawal",),
    # arming HTTP and webhook fault rules (docs/faults.md): the world's for the bootstrap client, a
    # tenant's own calls for a tenant
    "sandbox:faults": ("sandbox:write_customer", "transfer:write_sandbox_fiat_deposit"),
    # the server's other worlds (docs/worlds.md): its routes admit only the default
    # world's bootstrap customer besides
    "sandbox:worlds": ("sandbox:write_customer",),
    # a world's recent requests (GET /v2/sandbox/requests), each tenant its own
    "sandbox:read_requests": ("events:read_event",),
}
# Every scope a client may hold: recorded ones, and those granted by implication.
KNOWN_SCOPES: tuple[str, ...] = (*ALL_SCOPES, *IMPLIED_SCOPES)


def granted_scopes(recorded: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """A client's recorded scopes and those they imply (IMPLIED_SCOPES)."""
    held = set(recorded)
    implied = [s for s, by in IMPLIED_SCOPES.items() if s not in held and held & set(by)]
    return (*recorded, *implied)


# The permission `self_match_prevention_id` needs. The real service grants it only to
# some accounts, so no client holds it unless asked for (a customer's creation option,
# the `bootstrap_self_match_prevention` setting): code that sends the field would
# otherwise pass here and fail in production.
SELF_MATCH_PREVENTION = "exchange:self_match_prevention"
# Scopes the bootstrap client receives: every one but that permission.
BOOTSTRAP_SCOPES: tuple[str, ...] = tuple(s for s in ALL_SCOPES if s != SELF_MATCH_PREVENTION)
# Scopes a customer created through the sandbox endpoint receives: everything a user's
# integration needs, but not the power to create further tenants.
CUSTOMER_SCOPES: tuple[str, ...] = tuple(
    s for s in BOOTSTRAP_SCOPES if s != "sandbox:write_customer"
)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Seeds the price paths and, when set, the ids: the same seed and commands give the
    # same ids (replays, scenarios, backtests). Not set, a new database's price paths use
    # seed 0 and its ids are keyed by a secret id key from its key file
    # (engine/kernel/ids.py), so no tenant computes another's ids from seed 0.
    seed: int | None = None
    # The key of the execution id permutation (`execution_ids.new_key`), chosen when the
    # database is created: "random" (from the OS CSPRNG) hides the sandbox's trading
    # volume from tenants; "seeded" derives it from the seed, so the same seed and
    # commands show the same ids (backtests and scenario replays), and anyone who knows
    # the seed can count executions from them.
    execution_ids: Literal["random", "seeded"] = "random"
    clock: Literal["wall", "manual"] = "wall"
    clock_start: datetime = Field(default_factory=lambda: datetime(2024, 1, 1, tzinfo=UTC))
    durability: Literal["FULL", "NORMAL"] = "FULL"
    # On PostgreSQL: how long the writer lease outlives a writer that hangs or is cut off
    # (a dead one loses it at once), so how long a standby waits before it takes over.
    writer_lease_seconds: float = Field(default=5.0, ge=1, le=600)
    token_ttl_seconds: int = 3599
    # Whether the bootstrap client, made with a new database, holds the permission that
    # self_match_prevention_id needs (SELF_MATCH_PREVENTION above).
    bootstrap_self_match_prevention: bool = False
    # Whether the bootstrap customer, made with a new database, keeps identity ids as
    # labels (the customer option identity_labels; engine/domain/identity/permissions.py).
    bootstrap_identity_labels: bool = False
    # HTTP guards (the adapter's body guard and `RateLimiter`): the largest request
    # body, and average requests per second per address by family, operation id or
    # "default" (the families without a figure of the real service's).
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    # Request bodies' fields no operation declares: ignored, as the service ignores them
    # (its own examples send some), or, with this on, refused by the whole server with a
    # 400 naming the field.
    strict_fields: bool = False
    # Connections of `sandex serve` (api_adapter/server/connections.py): seconds a client
    # has to send a request's head and then its body, seconds an idle kept-alive connection
    # is held, the most connections held at once and by one client address, the longest
    # request line and request head.
    header_timeout_seconds: float = Field(default=10, gt=0)
    body_timeout_seconds: float = Field(default=10, gt=0)
    keep_alive_timeout_seconds: int = Field(default=5, ge=1)
    max_connections: int = Field(default=1000, ge=1)
    max_connections_per_ip: int = Field(default=100, ge=1)
    max_url_bytes: int = Field(default=16 * 1024, ge=1024, le=65535)
    max_header_bytes: int = Field(default=64 * 1024, ge=4096)
    # The WebSocket market data feeds (api_adapter/routes/market_stream.py): the most
    # connections one client address holds at once, the most messages one connection
    # may leave unread before it is closed, and seconds a send may take.
    stream_connections_per_ip: int = Field(default=10, ge=1)
    stream_queue_messages: int = Field(default=10_000, ge=100)
    stream_send_timeout_seconds: float = Field(default=10, gt=0)
    rate_limits_enabled: bool = True
    rate_limits: dict[str, Annotated[float, Field(gt=0)]] = Field(default_factory=dict)
    # Sandbox wires (the funding module's sandbox deposits), as the real sandbox does them: credited about a
    # minute after they are sent, less its wire fee (its own example: amount 150.33,
    # fee 30, total 120.33).
    fiat_deposit_delay_seconds: Annotated[Decimal, Field(ge=0)] = Decimal(60)
    wire_fee: Annotated[Decimal, Field(ge=0)] = Decimal(30)
    # Crypto withdrawals (the withdrawal fee and withdrawal modules hold the defaults; these
    # override them entry by entry): asset -> network -> flat fee, network -> seconds
    # from request to COMPLETED, asset -> largest and smallest amount of one withdrawal.
    withdrawal_fee_ttl_seconds: Annotated[Decimal, Field(ge=0)] = Decimal(60)
    withdrawal_fees: dict[str, dict[str, Annotated[Decimal, Field(ge=0)]]] = Field(
        default_factory=dict
    )
    withdrawal_confirmation_seconds: dict[str, Annotated[Decimal, Field(ge=0)]] = Field(
        default_factory=dict
    )
    withdrawal_caps: dict[str, Annotated[Decimal, Field(gt=0)]] = Field(default_factory=dict)
    withdrawal_minimums: dict[str, Annotated[Decimal, Field(gt=0)]] = Field(default_factory=dict)
    # Stablecoin conversions (engine/domain/transfers/stablecoin_conversions.py): seconds
    # from CREATED to SETTLED, the window in which one may be cancelled, and the largest
    # amount of one conversion.
    conversion_settle_seconds: Annotated[Decimal, Field(ge=0)] = Decimal(10)
    conversion_max_amount: Annotated[Decimal, Field(gt=0)] = Decimal(1_000_000)
    # Held-rate quotes (GET /v2/quotes): the buy price is the market's reference price
    # plus this spread, the sell price that minus it; each quote holds for the ttl.
    quote_spread_bps: Annotated[Decimal, Field(ge=0, lt=10000)] = Decimal(25)
    quote_ttl_seconds: Annotated[Decimal, Field(gt=0)] = Decimal(30)
    # Crypto deposits (engine/domain/transfers/deposit_addresses.py): one whose USD value
    # is above this is held for travel-rule review (secondary status
    # TRAVEL_RULE_INFO_REQUESTED) until it is updated or rejected; None holds none.
    crypto_deposit_review_usd: Annotated[Decimal, Field(ge=0)] | None = Decimal(10000)
    # Fiat accounts and withdrawals (engine/domain/transfers/fiat_accounts.py,
    # fiat_withdrawals.py): seconds from a fiat account's creation or update (PENDING) to
    # its automated review (APPROVED, or REJECTED when a metadata value is
    # "sandbox:reject"); seconds from a fiat withdrawal's request to COMPLETED; the fee of
    # a wire withdrawal (the real sandbox's wire fee figure; CUBIX and CBIT, intrabank,
    # charge none); the largest amount of one fiat withdrawal, in USD.
    fiat_account_review_seconds: Annotated[Decimal, Field(ge=0)] = Decimal(5)
    fiat_withdrawal_seconds: Annotated[Decimal, Field(ge=0)] = Decimal(60)
    wire_withdrawal_fee: Annotated[Decimal, Field(ge=0)] = Decimal(30)
    fiat_withdrawal_cap: Annotated[Decimal, Field(gt=0)] = Decimal(1_000_000)
    # Trading (engine/domain/trading/). Reference prices: starting prices per market
    # (overrides of sandex.engine.domain.trading.reference_price.START_PRICES), daily volatility
    # of the seeded path (0 keeps prices still until set) and its step. Synthetic liquidity: the full
    # spread, the number of levels per side, their spacing and the quote value of each.
    market_prices: dict[str, Decimal] = Field(default_factory=dict)
    market_volatility: Decimal = Decimal("0.03")
    market_step_seconds: int = Field(default=1, ge=1)
    market_spread_bps: Decimal = Decimal(10)
    market_levels: int = Field(default=10, ge=1, le=100)
    market_level_step_bps: Decimal = Decimal(5)
    market_level_notional: Decimal = Decimal(50000)
    # How many future steps one scan of the path looks at for resting orders to fill.
    market_watch_steps: int = Field(default=900, ge=32)
    # Trading fees as fractions of the notional (0.001 = 10 bps), in the quote asset.
    maker_fee_rate: Decimal = Decimal(0)
    taker_fee_rate: Decimal = Decimal(0)
    # Delay between an order's creation (PENDING_SUBMISSION) and its submission.
    order_submission_latency_ms: int = Field(default=0, ge=0)
    # A group commit holds at most this many commands, and about `group_commit_events`
    # events: the writer takes as many commands as the last group's fit (runtime/writer.py).
    group_commit_max: int = 4096
    group_commit_events: int = Field(default=2048, ge=1)
    # Start-up: the writer has a snapshot of the state built every this many events, and
    # start-up replays only the log after the newest (the runtime's `startup_cache`); 0: never.
    snapshot_every_events: int = Field(default=100_000, ge=0)
    tick_interval_seconds: float = 0.1
    # Webhook destinations (`config.destinations`): besides public addresses, the host
    # names, addresses and networks a webhook may reach. Empty: loopback, private,
    # link-local and other non-public destinations are refused.
    webhook_allowed_hosts: list[str] = Field(default_factory=list)
    # A server's other worlds (docs/worlds.md): at most `max_worlds` of them; at most
    # `max_loaded_worlds` loaded (the least recently used unloaded first), and one unused
    # for `world_idle_unload_seconds` unloaded (its files stay: its next request loads
    # it again); one unused for `world_expires_after_idle_seconds` deleted, unless its
    # creation chose otherwise (None: kept until deleted).
    max_worlds: int = Field(default=1000, ge=0)
    max_loaded_worlds: int = Field(default=200, ge=1)
    world_idle_unload_seconds: float = Field(default=600, gt=0)
    world_expires_after_idle_seconds: int | None = Field(default=None, ge=1)
    # The most events a world's log holds (docs/worlds.md), the default world's too: once
    # it holds this many, every decision that would record one more is refused (403,
    # `"meta": {"limit": "world_max_events"}`), its timers wait and reads go on. A
    # decision is recorded whole, so the log may end up to one decision's events past it.
    # None: no limit. A world may choose a lower figure than its server's.
    world_max_events: int | None = Field(default=None, ge=1)
    # The most requests a world's request log (GET /v2/sandbox/requests) keeps in memory,
    # the oldest dropped first; 0 keeps none.
    request_log_size: int = Field(default=100_000, ge=0)
    # Check every invariant after every command (the test suite turns this on).
    assert_invariants: bool = False

    @field_validator("webhook_allowed_hosts")
    @classmethod
    def _allowed_hosts(cls, entries: list[str]) -> list[str]:
        for entry in entries:
            parse_allowed(entry)
        return entries

    @classmethod
    def from_file(cls, path: str | Path, **overrides: object) -> Settings:
        """The file's settings, `overrides` (None left out) over them; a file that cannot
        be read or holds a wrong setting is a `SettingsFileError` naming line and key."""
        from sandex.engine.config.settings_file import load

        return load(path, overrides)
