"""Crypto withdrawals: a hold at once, then COMPLETED or FAILED after a network's delay.

A withdrawal moves `total` from the profile's available balance into its withdrawal
hold in the same event that creates the PENDING transfer, so the funds can never be
spent twice. A timer at the network's confirmation delay then either posts the hold to
the outside world (`amount`) and to the platform's fee income (`fee`), with an on-chain
hash drawn from the seeded id source, or voids it back to the profile.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any

from sandex.engine.config.settings import Settings
from sandex.engine.domain import sandbox_pacing, sandbox_triggers
from sandex.engine.domain.customers import active_profile
from sandex.engine.domain.identity.permissions import check_acting
from sandex.engine.domain.ledger import FEES, WORLD, available, withdrawing
from sandex.engine.domain.metadata import check_metadata
from sandex.engine.domain.transfers import transfer_records, withdrawal_fees
from sandex.engine.domain.transfers.networks import EVM_NETWORKS
from sandex.engine.domain.transfers.notional_prices import USD_STABLECOINS, usd_value
from sandex.engine.domain.transfers.transfer_records import HELD_TYPES
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.commands import CreateCryptoWithdrawal
from sandex.engine.kernel.errors import AlreadyExists, Expired, InsufficientFunds, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.ledger import Posting
from sandex.engine.kernel.money import ZERO, check_precision, format_amount, format_normal
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

# Where a withdrawal paid from another balance (USD for a USDC withdrawal) is converted
# at par: an external account, like `world`, whose per-asset balances net each other.
CONVERSION = "conversion"

# Seconds from request to COMPLETED per network: a few blocks, compressed for a sandbox.
DEFAULT_CONFIRMATION_SECONDS: dict[str, Decimal] = {
    "BITCOIN": Decimal(6),
    "BITCOIN_CASH": Decimal(5),
    "LITECOIN": Decimal(4),
    "ETHEREUM": Decimal(4),
    "POLYGON_POS": Decimal(2),
    "BASE": Decimal(2),
    "ARBITRUM_ONE": Decimal(2),
    "INK": Decimal(2),
    "XLAYER": Decimal(2),
    "SOLANA": Decimal(1),
    "STELLAR": Decimal(1),
}

_MAX_REF_ID = 128


def fail_as_asked(
    ctx: Ctx, transfer_id: str, returned: list[Posting], reason: str | None = None
) -> None:
    """A withdrawal (crypto or fiat) whose memo asks for the failure path, or released
    to fail: FAILED, its hold returned by `returned`, and why in its status details."""
    memo = ctx.state.transfers[transfer_id].get("memo")
    asked, named = sandbox_triggers.failure(memo)
    if asked and named is None and reason is None:
        details: dict[str, Any] = {
            "message": f"withdrawal failed because its memo is '{sandbox_triggers.FAIL}';"
            " the held funds are returned",
            "memo": sandbox_triggers.FAIL,
        }
    else:
        why = reason if reason is not None else named
        details = {
            "message": f"withdrawal failed: {why or 'released to fail'};"
            " the held funds are returned",
            **({"memo": memo} if asked else {}),
            **({"reason": why} if why else {}),
        }
    changes = {"status_details": {"sandbox_forced_failure": details}}
    transfer_records.fail(ctx, transfer_id, changes, returned)


def paced(ctx: Ctx, memo: str | None, default_seconds: Decimal) -> sandbox_pacing.Pace:
    """When a new withdrawal settles: never by itself when its memo holds it, else as
    the world paces withdrawals."""
    if sandbox_triggers.held(memo):
        return sandbox_pacing.Pace(None)
    return sandbox_pacing.pace(ctx, "withdrawal", default_seconds)


def confirmation_delay(settings: Settings, network: str) -> Decimal:
    override = settings.withdrawal_confirmation_seconds.get(network)
    return override if override is not None else DEFAULT_CONFIRMATION_SECONDS.get(network, ZERO)


@lru_cache(maxsize=64)
def delay_span(seconds: Decimal) -> timedelta:
    """`seconds` as a timedelta, to the microsecond. A sandbox has a few delays, each
    used by every withdrawal: kept rather than multiplied and built again each time."""
    return timedelta(microseconds=int(seconds * 1_000_000))


def _balance_asset(asset: str, balance_asset: str | None) -> str:
    if balance_asset is None or balance_asset == asset:
        return asset
    if asset in USD_STABLECOINS and (balance_asset == "USD" or balance_asset in USD_STABLECOINS):
        return balance_asset
    if asset in USD_STABLECOINS:
        allowed = ", ".join(["USD", *sorted(USD_STABLECOINS - {asset})])
        reason = f"a {asset} withdrawal may debit {asset} or one of {allowed}"
    else:
        reason = f"only withdrawals of a USD stablecoin may debit another balance than {asset}"
    raise Invalid(
        f"balance_asset invalid: {reason}, not '{balance_asset[:32]}'", field="balance_asset"
    )


def _quoted_fee(ctx: Ctx, cmd: CreateCryptoWithdrawal) -> dict[str, Any]:
    """The guaranteed fee `fee_id` names, if the caller may use it for this withdrawal."""
    fee_id = cmd.fee_id or ""
    quote = withdrawal_fees.quotes(ctx.state).get(fee_id)
    if quote is None or quote["customer_id"] != cmd.actor.customer_id:
        raise NotFound(f"fee not found with id {fee_id[:64]}")
    if withdrawal_fees.is_expired(ctx, quote):
        raise Expired(f"fee {fee_id} expired at {quote['expires_at']}", quote["expires_at"])
    for name in ("asset", "crypto_network", "destination_address"):
        if quote[name] != getattr(cmd, name):
            raise Invalid(
                f"fee_id invalid: fee {fee_id} was quoted for {name} {quote[name]},"
                f" not {str(getattr(cmd, name))[:128]}",
                field="fee_id",
            )
    return quote


def create_withdrawal(ctx: Ctx, cmd: CreateCryptoWithdrawal) -> dict[str, Any]:
    state = ctx.state
    asset = cmd.asset
    withdrawal_fees.check_destination(asset, cmd.crypto_network, cmd.destination_address)
    sizing = withdrawal_fees.parse_sizing(cmd.amount, cmd.total, asset)
    metadata = check_metadata(cmd.metadata)
    balance_asset = _balance_asset(asset, cmd.balance_asset)
    if cmd.ref_id is not None and not 0 < len(cmd.ref_id) <= _MAX_REF_ID:
        raise Invalid(f"ref_id invalid: 1 to {_MAX_REF_ID} characters", field="ref_id")
    profile = active_profile(state, cmd.actor.customer_id, cmd.profile_id)
    profile_id = profile["id"]
    check_acting(state, cmd.actor.customer_id, cmd.identity_id, cmd.account_id, action="withdraw")
    if cmd.ref_id is not None:
        existing = state.transfer_refs.get((profile_id, cmd.ref_id))
        if existing is not None:
            raise AlreadyExists(
                f"transfer already exists with ref_id '{cmd.ref_id}'",
                transfer_records.transfer_view(state.transfers[existing]),
            )
    if cmd.fee_id is not None:
        quote = _quoted_fee(ctx, cmd)
        fee = Decimal(quote["fee"])
    else:
        quote = None
        fee = withdrawal_fees.scheduled_fee(ctx.settings, asset, cmd.crypto_network)
    amount, total = sizing.priced(fee, asset)
    if quote is not None and amount > Decimal(quote["amount"]):
        raise Invalid(
            f"amount invalid: {format_amount(amount)} {asset} is above the amount"
            f" {quote['amount']} {asset} that fee {quote['id']} guarantees",
            field=sizing.field,
        )
    withdrawal_fees.check_minimum(ctx.settings, asset, cmd.crypto_network, amount, sizing.field)
    withdrawal_fees.check_cap(ctx.settings, asset, amount)
    held = state.ledger.balance(available(profile_id), balance_asset)
    if balance_asset != asset:
        field = "total" if sizing.total is not None else "amount"
        check_precision(total, balance_asset, field, held=held)
    if held < total:
        raise InsufficientFunds(
            profile_id, balance_asset, format_normal(held), format_normal(total)
        )
    record = {
        "customer_id": profile["customer_id"],
        "profile_id": profile_id,
        "ref_id": cmd.ref_id,
        "identity_id": cmd.identity_id,
        "account_id": cmd.account_id,
        "amount": format_amount(amount),
        "total": format_amount(total),
        "fee": format_amount(fee),
        "asset": asset,
        "balance_asset": balance_asset,
        "direction": "DEBIT",
        "type": "CRYPTO_WITHDRAWAL",
        "status": "PENDING",
        "destination_address": cmd.destination_address,
        "crypto_network": cmd.crypto_network,
        "memo": cmd.memo,
        "metadata": metadata,
        "notional_value": format_amount(usd_value(state, asset, amount + fee, ctx.price_sources)),
    }
    hold: list[Posting] = [(available(profile_id), withdrawing(profile_id), balance_asset, total)]
    transfer = transfer_records.create(ctx, record, hold)
    pace = paced(ctx, cmd.memo, confirmation_delay(ctx.settings, cmd.crypto_network))
    ctx.emit(
        "CryptoWithdrawalRequested",
        f"transfer-{transfer['id']}",
        {
            "transfer_id": transfer["id"],
            "due_at": pace.due_text,
            "fee_id": cmd.fee_id,
            "beneficiary": cmd.beneficiary,
        },
    )
    if pace.polls is not None:
        sandbox_pacing.await_polls(
            ctx, "withdrawal", transfer["id"], record["customer_id"], pace.polls
        )
    if pace.due is not None and pace.due <= ctx.now:
        confirm(ctx, transfer["id"])
    return transfer_records.transfer_view(state.transfers[transfer["id"]])


_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


_BASE58_PAIRS = [a + b for a in _BASE58 for b in _BASE58]
# 58**4 is below 2**30, one digit of a Python int: dividing the big number by it costs
# no more than by 58, and each remainder gives its two pairs by small divisions.
_BASE58_QUAD = 58**4


def _base58(data: bytes) -> str:
    """Bitcoin-alphabet base58 (a tx hash on every confirmation): four digits per
    division of the big number, half the divisions of two per step (26% less time)."""
    n = int.from_bytes(data, "big")
    pairs: list[str] = []
    add = pairs.append
    while n:
        n, r = divmod(n, _BASE58_QUAD)
        add(_BASE58_PAIRS[r % 3364])
        add(_BASE58_PAIRS[r // 3364])
    pairs.reverse()
    zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * zeros + "".join(pairs).lstrip("1")


def tx_hash(ctx: Ctx, network: str) -> str:
    """A transaction id shaped as the network writes them (a Solana signature: 64 bytes)."""
    if network in EVM_NETWORKS:
        return "0x" + ctx.ids.hex()
    if network == "SOLANA":
        return _base58(bytes.fromhex(ctx.ids.hex() + ctx.ids.hex()))
    return ctx.ids.hex()


def confirm(ctx: Ctx, transfer_id: str) -> None:
    """The network's verdict: post the hold to the world, or void it (sandbox:fail)."""
    t = ctx.state.transfers.get(transfer_id)
    if t is None or t["type"] != "CRYPTO_WITHDRAWAL" or t["status"] != "PENDING":
        return
    settle(ctx, transfer_id, fail=sandbox_triggers.failure(t.get("memo"))[0])


def settle(ctx: Ctx, transfer_id: str, *, fail: bool, reason: str | None = None) -> None:
    """A PENDING crypto withdrawal completed (the hold posted out) or failed (returned)."""
    t = ctx.state.transfers[transfer_id]
    profile_id = t["profile_id"]
    asset, paid_from = t["asset"], t["balance_asset"]
    amount, fee, total = Decimal(t["amount"]), Decimal(t["fee"]), Decimal(t["total"])
    hold = withdrawing(profile_id)
    if fail:
        fail_as_asked(ctx, transfer_id, [(hold, available(profile_id), paid_from, total)], reason)
        return
    source = hold
    postings: list[Posting] = []
    if paid_from != asset:
        postings.append((hold, CONVERSION, paid_from, total))
        source = CONVERSION
    postings.append((source, WORLD, asset, amount))
    if fee > ZERO:
        postings.append((source, FEES, asset, fee))
    changes = {"crypto_tx_hash": tx_hash(ctx, t["crypto_network"]), "crypto_tx_index": "0"}
    transfer_records.complete(ctx, transfer_id, changes, postings)


def _requested(state: State, e: Event) -> None:
    if e.data["due_at"] is not None:  # None: held, or paced by polls or by hand
        state.timers.add(
            parse_time(e.data["due_at"]), "withdrawal_confirmation", e.data["transfer_id"]
        )


def check_holds(state: State) -> list[str]:
    """Every profile's withdrawal hold equals the totals of its PENDING withdrawals,
    crypto and fiat."""
    expected: dict[tuple[str, str], Decimal] = {}
    for t in state.transfers.values():
        if t["type"] in HELD_TYPES and t["status"] == "PENDING":
            key = (withdrawing(t["profile_id"]), t["balance_asset"])
            expected[key] = expected.get(key, ZERO) + Decimal(t["total"])
    problems = []
    for (account, asset), value in state.ledger.balances.items():
        if account.endswith(":withdrawing") and value != expected.pop((account, asset), ZERO):
            problems.append(f"hold {account} {asset} is {value}, pending withdrawals differ")
    for (account, asset), value in expected.items():
        problems.append(f"hold {account} {asset} missing, pending withdrawals total {value}")
    return problems


DECIDERS = {CreateCryptoWithdrawal: create_withdrawal}
APPLIERS = {"CryptoWithdrawalRequested": _requested}
TIMERS = {"withdrawal_confirmation": confirm}
REGISTRATION = Registration(DECIDERS, APPLIERS, TIMERS, checks=(check_holds,))
