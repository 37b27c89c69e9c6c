"""Guaranteed crypto withdrawal fees: the fee schedule and the quotes drawn from it.

A quote fixes the fee of a withdrawal of one asset, on one network, to one address, for
at most one amount, until `expires_at`. It is an event (`WithdrawalFeeQuoted`), and so
is its expiry (`WithdrawalFeeExpired`, fired by a timer at `expires_at`), so a replayed
log answers "was this fee still valid" exactly as the live engine did.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

import orjson

from sandex.engine.config.settings import Settings
from sandex.engine.domain.transfers.networks import (
    CRYPTO_NETWORKS,
    check_address,
    check_asset_network,
)
from sandex.engine.kernel.clock import format_time, parse_time
from sandex.engine.kernel.commands import CreateWithdrawalFee
from sandex.engine.kernel.errors import BelowMinWithdraw, ExceedMaxWithdraw, Invalid
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.money import (
    ASSET_PRECISION,
    FIAT_ASSETS,
    check_precision,
    format_amount,
    format_normal,
    parse_amount,
)
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

_D = Decimal

# Flat fee per withdrawal, in units of the asset sent: the order of magnitude of each
# network's transaction cost in early 2024 (a plain transfer on Bitcoin, an ERC-20
# transfer on Ethereum, fractions of a cent on Solana, Stellar and the rollups).
DEFAULT_FEES: dict[str, dict[str, Decimal]] = {
    "BTC": {"BITCOIN": _D("0.00002")},
    "BCH": {"BITCOIN_CASH": _D("0.00001")},
    "LTC": {"LITECOIN": _D("0.0001")},
    "SOL": {"SOLANA": _D("0.000005")},
    "ETH": {
        "ETHEREUM": _D("0.0005"),
        "ARBITRUM_ONE": _D("0.00002"),
        "BASE": _D("0.00001"),
        "INK": _D("0.00001"),
    },
    "USDP": {"ETHEREUM": _D("3"), "SOLANA": _D("0.01")},
    "PYUSD": {
        "ETHEREUM": _D("3"),
        "SOLANA": _D("0.01"),
        "ARBITRUM_ONE": _D("0.05"),
        "STELLAR": _D("0.01"),
    },
    "USDG": {"ETHEREUM": _D("3"), "SOLANA": _D("0.01"), "INK": _D("0.01"), "XLAYER": _D("0.01")},
    "USDC": {
        "ETHEREUM": _D("3"),
        "SOLANA": _D("0.01"),
        "POLYGON_POS": _D("0.02"),
        "BASE": _D("0.01"),
        "ARBITRUM_ONE": _D("0.05"),
        "STELLAR": _D("0.01"),
    },
    "PAXG": {"ETHEREUM": _D("0.0015")},
    "AAVE": {"ETHEREUM": _D("0.03")},
    "LINK": {"ETHEREUM": _D("0.2")},
    "UNI": {"ETHEREUM": _D("0.5")},
    "MATIC": {"ETHEREUM": _D("3"), "POLYGON_POS": _D("0.01")},
}


def scheduled_fee(settings: Settings, asset: str, network: str) -> Decimal:
    """The fee the schedule charges now; settings override the defaults entry by entry."""
    override = settings.withdrawal_fees.get(asset, {}).get(network)
    if override is not None:
        return override
    return DEFAULT_FEES.get(asset, {}).get(network, Decimal(0))


# -- validation shared with withdrawals -----------------------------------------------

# Integrations send to the same few addresses again and again; a checksum check is a
# pure function of its input, so its answer is kept.
_address_problem = lru_cache(maxsize=4096)(check_address)


# Sandbox per-withdrawal caps of the real service, in units of the asset sent.
DEFAULT_CAPS: dict[str, Decimal] = {
    "BTC": Decimal("0.002"),
    "ETH": Decimal("0.05"),
    "BCH": Decimal("0.05"),
    "LTC": Decimal("0.05"),
    "SOL": Decimal("0.5"),
    "AAVE": Decimal(10),
    "MATIC": Decimal(10),
    "LINK": Decimal(10),
    "UNI": Decimal(10),
    "PAXG": Decimal(1_000_000),
    "USDP": Decimal(1_000_000),
    "PYUSD": Decimal(1_000_000),
    "USDC": Decimal(1_000_000),
    "USDG": Decimal(1_000_000),
}


def cap(settings: Settings, asset: str) -> Decimal | None:
    return settings.withdrawal_caps.get(asset, DEFAULT_CAPS.get(asset))


def check_cap(settings: Settings, asset: str, amount: Decimal) -> None:
    """400 exceed-max-withdraw-limit when `amount` is above the asset's cap: a withdrawal
    of it would be refused, and so is a quote for it (the same problem)."""
    limit = cap(settings, asset)
    if limit is not None and amount > limit:
        raise ExceedMaxWithdraw(
            f"withdrawal amount {format_amount(amount)} {asset} exceeds the sandbox limit"
            f" of {format_normal(limit)} {asset} per withdrawal",
            meta={"asset": asset, "limit": format_normal(limit), "amount": format_amount(amount)},
        )


# Smallest amount of one withdrawal, in units of the asset sent: the reference's own
# figure for BTC; other assets have none unless `withdrawal_minimums` sets one.
DEFAULT_MINIMUMS: dict[str, Decimal] = {"BTC": Decimal("0.00001")}


def minimum(settings: Settings, asset: str) -> Decimal | None:
    return settings.withdrawal_minimums.get(asset, DEFAULT_MINIMUMS.get(asset))


def check_minimum(
    settings: Settings, asset: str, network: str, amount: Decimal, field: str
) -> None:
    """400 below-min-withdraw-limit naming `field` when `amount` is below the asset's
    minimum: too little to be worth a transaction on the network."""
    limit = minimum(settings, asset)
    if limit is not None and amount < limit:
        raise BelowMinWithdraw(
            f"amount too small for network {network} minimum amount is {format_normal(limit)}",
            meta={
                "asset": asset,
                "limit": format_normal(limit),
                "amount": format_amount(amount),
                "field": field,
            },
            field=field,
        )


def check_destination(asset: str, network: str, address: str) -> None:
    """400 unless `asset` is a crypto asset that travels on `network` to `address`."""
    if asset not in ASSET_PRECISION or asset in FIAT_ASSETS:
        raise Invalid(f"asset invalid: unknown crypto asset '{asset[:32]}'", field="asset")
    if network not in CRYPTO_NETWORKS:
        raise Invalid(
            f"crypto_network invalid: unknown network '{network[:32]}'", field="crypto_network"
        )
    problem = check_asset_network(asset, network)
    if problem:
        raise Invalid(f"crypto_network invalid: {problem}", field="crypto_network")
    problem = _address_problem(network, address)
    if problem:
        raise Invalid(f"destination_address invalid: {problem}", field="destination_address")


@dataclass(frozen=True, slots=True)
class Sizing:
    """What a request asked for: exactly one of an amount sent or a total debited."""

    amount: Decimal | None
    total: Decimal | None

    @property
    def field(self) -> str:
        """The request field that sized the withdrawal."""
        return "amount" if self.amount is not None else "total"

    def priced(self, fee: Decimal, asset: str) -> tuple[Decimal, Decimal]:
        """(amount, total) at `fee`; 400 when a total does not leave a positive amount."""
        if self.amount is not None:
            return self.amount, self.amount + fee
        assert self.total is not None
        amount = self.total - fee
        if amount <= 0:
            raise Invalid(
                f"total invalid: {format_amount(self.total)} {asset} does not cover the fee"
                f" of {format_amount(fee)} {asset}",
                field="total",
            )
        return amount, self.total


def parse_sizing(amount: str | None, total: str | None, asset: str) -> Sizing:
    if (amount is None) == (total is None):
        raise Invalid("exactly one of amount and total is required", field="amount")
    field, text = ("amount", amount) if amount is not None else ("total", total)
    value = parse_amount(text, field)
    check_precision(value, asset, field)
    return Sizing(value, None) if field == "amount" else Sizing(None, value)


# -- quotes ---------------------------------------------------------------------------

_PUBLIC = (
    "id",
    "fee",
    "asset",
    "amount",
    "total",
    "expires_at",
    "destination_address",
    "crypto_network",
)


def quote_view(quote: dict[str, Any]) -> dict[str, Any]:
    return {k: quote[k] for k in _PUBLIC}


def quotes(state: State) -> dict[str, dict[str, Any]]:
    return state.ext.setdefault("withdrawal_fees", {})  # type: ignore[no-any-return]


def create_fee(ctx: Ctx, cmd: CreateWithdrawalFee) -> dict[str, Any]:
    check_destination(cmd.asset, cmd.crypto_network, cmd.destination_address)
    sizing = parse_sizing(cmd.amount, cmd.total, cmd.asset)
    fee = scheduled_fee(ctx.settings, cmd.asset, cmd.crypto_network)
    amount, total = sizing.priced(fee, cmd.asset)
    check_minimum(ctx.settings, cmd.asset, cmd.crypto_network, amount, sizing.field)
    check_cap(ctx.settings, cmd.asset, amount)
    ttl = ctx.settings.withdrawal_fee_ttl_seconds
    expires = ctx.now + timedelta(microseconds=int(ttl * 1_000_000))
    fee_id = ctx.ids.uuid()
    quote = {
        "id": fee_id,
        "customer_id": cmd.actor.customer_id,
        "fee": format_amount(fee),
        "asset": cmd.asset,
        "amount": format_amount(amount),
        "total": format_amount(total),
        "expires_at": format_time(expires),
        "destination_address": cmd.destination_address,
        "crypto_network": cmd.crypto_network,
        "created_at": ctx.now_text,
        "status": "ACTIVE",
    }
    ctx.emit("WithdrawalFeeQuoted", f"fee-{fee_id}", {"quote": quote})
    return quote_view(quote)


def expire_fee(ctx: Ctx, fee_id: str) -> None:
    quote = quotes(ctx.state).get(fee_id)
    if quote is None or quote["status"] != "ACTIVE":
        return
    ctx.emit("WithdrawalFeeExpired", f"fee-{fee_id}", {"fee_id": fee_id})


def is_expired(ctx: Ctx, quote: dict[str, Any]) -> bool:
    return quote["status"] != "ACTIVE" or ctx.now >= parse_time(quote["expires_at"])


# -- appliers -------------------------------------------------------------------------


def _quoted(state: State, e: Event) -> None:
    quote = dict(e.data["quote"])
    quote["seq"] = e.position
    quotes(state)[quote["id"]] = quote
    state.timers.add(parse_time(quote["expires_at"]), "withdrawal_fee_expiry", quote["id"])
    state.mark("withdrawal_fee", quote["id"])


def _expired(state: State, e: Event) -> None:
    quotes(state)[e.data["fee_id"]]["status"] = "EXPIRED"
    state.mark("withdrawal_fee", e.data["fee_id"])


DECIDERS = {CreateWithdrawalFee: create_fee}
APPLIERS = {"WithdrawalFeeQuoted": _quoted, "WithdrawalFeeExpired": _expired}
TIMERS = {"withdrawal_fee_expiry": expire_fee}


# -- read model: quotes are inspectable with sqlite-utils and rebuilt like the rest ----


def _row(state: State, key: str) -> dict[str, Any] | None:
    q = quotes(state).get(key)
    if q is None:
        return None
    return {
        "id": q["id"],
        "customer_id": q["customer_id"],
        "asset": q["asset"],
        "crypto_network": q["crypto_network"],
        "status": q["status"],
        "expires_at": q["expires_at"],
        "created_at": q["created_at"],
        "seq": q["seq"],
        "body": orjson.dumps(quote_view(q)).decode(),
    }


TABLE = ReadModelTable(
    "withdrawal_fees",
    {
        "id": str,
        "customer_id": str,
        "asset": str,
        "crypto_network": str,
        "status": str,
        "expires_at": str,
        "created_at": str,
        "seq": int,
        "body": str,
    },
    pk=("id",),
    kind="withdrawal_fee",
    row=_row,
    key_columns=("id",),
    keys=lambda s: quotes(s).keys(),
)
REGISTRATION = Registration(DECIDERS, APPLIERS, TIMERS, tables=(TABLE,))
