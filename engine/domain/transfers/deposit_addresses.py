"""Deposit addresses, and the crypto deposits the sandbox sends to them.

A deposit address belongs to one profile and one network; its address is drawn from the
engine's seeded id source in the network's own format (networks.make_address), so a
replay gives the same addresses and the withdrawal checks accept them.

A sandbox crypto deposit to an address is a PENDING `CRYPTO_DEPOSIT` transfer carrying
its on-chain hash; a timer at the network's confirmation delay (the withdrawals' delays)
completes it and credits the profile through the ledger. A deposit worth more than the
`crypto_deposit_review_usd` setting is held for the travel rule (secondary status
TRAVEL_RULE_INFO_REQUESTED): it stays PENDING until the originator's details are given
(`UpdateCryptoDeposit`, then it completes once confirmed) or it is rejected
(`RejectCryptoDeposit`: FAILED, secondary status TRAVEL_RULE_REJECTED, nothing credited).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import orjson

from sandex.engine.domain import sandbox_pacing, sandbox_triggers
from sandex.engine.domain.customers import resolve_profile
from sandex.engine.domain.identity.permissions import check_acting, check_named
from sandex.engine.domain.ledger import WORLD, available
from sandex.engine.domain.metadata import check_metadata
from sandex.engine.domain.transfers import transfer_records
from sandex.engine.domain.transfers.networks import (
    CRYPTO_NETWORKS,
    check_asset_network,
    make_address,
)
from sandex.engine.domain.transfers.notional_prices import usd_value
from sandex.engine.domain.transfers.withdrawals import (
    CONVERSION,
    confirmation_delay,
    tx_hash,
)
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.commands import (
    CreateDepositAddress,
    RejectCryptoDeposit,
    SandboxCryptoDeposit,
    UpdateCryptoDeposit,
)
from sandex.engine.kernel.errors import AlreadyExists, Conflict, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.ledger import Posting
from sandex.engine.kernel.money import (
    ASSETS,
    FIAT_ASSETS,
    check_precision,
    format_amount,
    parse_amount,
)
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

CONVERSION_TARGETS = ("NO_CONVERSION", "USD")
# Paxos-minted USD stablecoins: what an address with conversion target USD credits as USD.
PAXOS_STABLECOINS = frozenset({"USDP", "PYUSD", "USDG"})
INFO_REQUESTED = "TRAVEL_RULE_INFO_REQUESTED"
REJECTED = "TRAVEL_RULE_REJECTED"
SECONDARY_STATUSES = (INFO_REQUESTED, REJECTED)
_MAX_REF_ID = 128
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_NAME_LENGTH = 100


def addresses(state: State) -> dict[str, dict[str, Any]]:
    """Deposit addresses by id."""
    return state.ext.setdefault("deposit_addresses", {})  # type: ignore[no-any-return]


def _by_address(state: State) -> dict[str, str]:
    """Address text (EVM ones lower-case: their case is only a checksum) -> address id."""
    return state.ext.setdefault("deposit_address_index", {})  # type: ignore[no-any-return]


def _held(state: State) -> dict[str, str]:
    """Deposits held for the travel rule -> when their confirmation is due."""
    return state.ext.setdefault("held_crypto_deposits", {})  # type: ignore[no-any-return]


def _key(address: str) -> str:
    return address.lower() if address.startswith("0x") else address


def address_view(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if v is not None and k != "seq"}


# -- decisions ----------------------------------------------------------------------


def create_deposit_address(ctx: Ctx, cmd: CreateDepositAddress) -> dict[str, Any]:
    state = ctx.state
    network = cmd.crypto_network
    if network not in CRYPTO_NETWORKS:
        raise Invalid(
            f"crypto_network invalid: unknown network '{network[:32]}'", field="crypto_network"
        )
    target = cmd.conversion_target_asset or "NO_CONVERSION"
    if target not in CONVERSION_TARGETS:
        raise Invalid(
            f"conversion_target_asset invalid: must be one of {', '.join(CONVERSION_TARGETS)}",
            field="conversion_target_asset",
        )
    metadata = check_metadata(cmd.metadata)
    if cmd.ref_id is not None and not 0 < len(cmd.ref_id) <= _MAX_REF_ID:
        raise Invalid(f"ref_id invalid: 1 to {_MAX_REF_ID} characters", field="ref_id")
    profile = resolve_profile(state, cmd.actor.customer_id, cmd.profile_id)
    check_acting(
        state,
        cmd.actor.customer_id,
        cmd.identity_id,
        cmd.account_id,
        action="create a deposit address",
    )
    if cmd.ref_id is not None:
        for record in addresses(state).values():
            if (
                record["customer_id"] == profile["customer_id"]
                and record.get("ref_id") == cmd.ref_id
            ):
                raise AlreadyExists(
                    f"deposit address already exists with ref_id '{cmd.ref_id}'",
                    address_view(record),
                )
    index = _by_address(state)
    address = make_address(network, bytes.fromhex(ctx.ids.hex()))
    while _key(address) in index:  # never seen: 160 bits or more drawn each time
        address = make_address(network, bytes.fromhex(ctx.ids.hex()))
    address_id = ctx.ids.uuid()
    record = {
        "id": address_id,
        "profile_id": profile["id"],
        "customer_id": profile["customer_id"],
        "crypto_network": network,
        "identity_id": cmd.identity_id,
        "account_id": cmd.account_id,
        "ref_id": cmd.ref_id,
        "metadata": metadata,
        "address": address,
        "conversion_target_asset": target,
        "compatible_crypto_networks": [network],
        "created_at": ctx.now_text,
    }
    ctx.emit("DepositAddressCreated", f"deposit-address-{address_id}", {"address": record})
    return address_view(addresses(state)[address_id])


def sandbox_crypto_deposit(ctx: Ctx, cmd: SandboxCryptoDeposit) -> dict[str, Any]:
    """The outside world sends `amount` of `asset` to one of the caller's addresses."""
    state = ctx.state
    asset = cmd.asset
    if asset not in ASSETS or asset in FIAT_ASSETS:
        raise Invalid(f"asset invalid: unknown crypto asset '{asset[:32]}'", field="asset")
    amount = parse_amount(cmd.amount, "amount")
    check_precision(amount, asset, "amount")
    address_id = _by_address(state).get(_key(cmd.address))
    target = addresses(state).get(address_id) if address_id else None
    if target is None or target["customer_id"] != cmd.actor.customer_id:
        raise NotFound(f"deposit address not found: {cmd.address[:128]}")
    network = cmd.crypto_network or target["crypto_network"]
    if network not in target["compatible_crypto_networks"]:
        raise Invalid(
            f"crypto_network invalid: address {target['address']} receives on"
            f" {', '.join(target['compatible_crypto_networks'])}, not {network[:32]}",
            field="crypto_network",
        )
    problem = check_asset_network(asset, network)
    if problem:
        raise Invalid(f"asset invalid: {problem}", field="asset")
    converts = target["conversion_target_asset"] == "USD" and asset in PAXOS_STABLECOINS
    notional = usd_value(state, asset, amount, ctx.price_sources)
    threshold = ctx.settings.crypto_deposit_review_usd
    record: dict[str, Any] = {
        "customer_id": target["customer_id"],
        "profile_id": target["profile_id"],
        "identity_id": target.get("identity_id"),
        "account_id": target.get("account_id"),
        "amount": format_amount(amount),
        "total": format_amount(amount),
        "fee": "0",
        "asset": asset,
        "balance_asset": "USD" if converts else asset,
        "direction": "CREDIT",
        "type": "CRYPTO_DEPOSIT",
        "status": "PENDING",
        "destination_address": target["address"],
        "crypto_network": network,
        "crypto_tx_hash": tx_hash(ctx, network),
        "crypto_tx_index": "0",
        "metadata": target.get("metadata"),
        "notional_value": format_amount(notional),
    }
    if cmd.memo == sandbox_triggers.REVIEW:
        record["secondary_status"] = {
            "name": INFO_REQUESTED,
            "detail": f"held for review as its memo '{sandbox_triggers.REVIEW}' asks:"
            " the originator's travel rule information is needed",
        }
    elif threshold is not None and notional > threshold:
        record["secondary_status"] = {
            "name": INFO_REQUESTED,
            "detail": f"a deposit worth more than {format_amount(threshold)} USD needs the"
            " originator's travel rule information",
        }
    transfer = transfer_records.create(ctx, record, [])
    if sandbox_triggers.held(cmd.memo):
        pace = sandbox_pacing.Pace(None)
    else:
        pace = sandbox_pacing.pace(ctx, "deposit", confirmation_delay(ctx.settings, network))
    ctx.emit(
        "CryptoDepositReceived",
        f"transfer-{transfer['id']}",
        {
            "transfer_id": transfer["id"],
            "deposit_address_id": target["id"],
            "due_at": pace.due_text,
        },
    )
    if pace.polls is not None:
        sandbox_pacing.await_polls(
            ctx, "deposit", transfer["id"], record["customer_id"], pace.polls
        )
    if pace.due is not None and pace.due <= ctx.now:
        confirm(ctx, transfer["id"])
    return transfer_records.transfer_view(state.transfers[transfer["id"]])


def confirm(ctx: Ctx, transfer_id: str) -> None:
    """The network confirms: credit the profile, unless the deposit is held for review."""
    t = ctx.state.transfers.get(transfer_id)
    if t is None or t["type"] != "CRYPTO_DEPOSIT" or t["status"] != "PENDING":
        return
    if transfer_id in _held(ctx.state):
        return
    amount = Decimal(t["amount"])
    credited = available(t["profile_id"])
    postings: list[Posting]
    if t["balance_asset"] != t["asset"]:
        postings = [
            (WORLD, CONVERSION, t["asset"], amount),
            (CONVERSION, credited, t["balance_asset"], amount),
        ]
    else:
        postings = [(WORLD, credited, t["asset"], amount)]
    transfer_records.complete(ctx, transfer_id, {}, postings)


def under_review(state: State, transfer_id: str) -> bool:
    """Whether the deposit waits for travel rule information (only an update or a
    rejection ends that)."""
    return transfer_id in _held(state)


def _deposit_needing_info(ctx: Ctx, customer_id: str, transfer_id: str, identity_id: str) -> None:
    """The caller's deposit `transfer_id`, if it waits for travel rule information, and
    `identity_id` one of the caller's identities."""
    if not _UUID.match(transfer_id):
        raise Invalid(f"id must be uuid, given {transfer_id[:64]}", field="id")
    check_named(ctx.state, customer_id, identity_id)
    t = ctx.state.transfers.get(transfer_id)
    if (
        t is None
        or t["type"] != "CRYPTO_DEPOSIT"
        or t["customer_id"] != customer_id
        or (t.get("identity_id") is not None and t["identity_id"] != identity_id)
    ):
        raise NotFound(f"no crypto deposit found for id: {transfer_id}")
    if transfer_id not in _held(ctx.state):
        raise Conflict(f"crypto deposit {transfer_id} does not need info")


def _identity(identity_id: str) -> str:
    if not identity_id:
        raise Invalid("identity_id is required", field="identity_id")
    return identity_id


def _originator(info: Any) -> dict[str, Any]:
    """A person's first and last name, or an institution's name, as the service asks."""
    field = "originator_address_info"
    if not isinstance(info, dict) or not info:
        raise Invalid(f"{field} is required", field=field)
    person, institution = info.get("individual_info"), info.get("institution_info")
    if (person is None) == (institution is None):
        raise Invalid(
            f"{field} invalid: exactly one of individual_info and institution_info", field=field
        )
    if person is not None:
        names: tuple[str, ...] = ("first_name", "last_name")
        part, kind = person, "individual_info"
    else:
        names, part, kind = ("institution_name",), institution, "institution_info"
    for name in names:
        value = part.get(name) if isinstance(part, dict) else None
        if not isinstance(value, str) or not value.strip() or len(value) > _NAME_LENGTH:
            raise Invalid(
                f"{field}.{kind}.{name} invalid: 1 to {_NAME_LENGTH} characters",
                field=f"{field}.{kind}.{name}",
            )
    return {kind: {name: part[name] for name in names}}


def update_crypto_deposit(ctx: Ctx, cmd: UpdateCryptoDeposit) -> dict[str, Any]:
    identity_id = _identity(cmd.identity_id)
    originator = _originator(cmd.originator_address_info)
    _deposit_needing_info(ctx, cmd.actor.customer_id, cmd.transfer_id, identity_id)
    due = parse_time(_held(ctx.state)[cmd.transfer_id])
    ctx.emit(
        "CryptoDepositUpdated",
        f"transfer-{cmd.transfer_id}",
        {
            "transfer_id": cmd.transfer_id,
            "identity_id": identity_id,
            "originator_address_info": originator,
        },
    )
    if due <= ctx.now:
        confirm(ctx, cmd.transfer_id)
    return {}


def reject_crypto_deposit(ctx: Ctx, cmd: RejectCryptoDeposit) -> dict[str, Any]:
    identity_id = _identity(cmd.identity_id)
    _deposit_needing_info(ctx, cmd.actor.customer_id, cmd.transfer_id, identity_id)
    ctx.emit(
        "CryptoDepositRejected",
        f"transfer-{cmd.transfer_id}",
        {"transfer_id": cmd.transfer_id, "identity_id": identity_id},
    )
    secondary = {"name": REJECTED, "detail": f"rejected by identity {identity_id}"}
    transfer_records.fail(ctx, cmd.transfer_id, {"secondary_status": secondary}, [])
    return {}


# -- appliers -------------------------------------------------------------------------


def _address_created(state: State, e: Event) -> None:
    record = dict(e.data["address"])
    record["seq"] = e.position
    addresses(state)[record["id"]] = record
    _by_address(state)[_key(record["address"])] = record["id"]
    state.mark("deposit_address", record["id"])


def _received(state: State, e: Event) -> None:
    tid = e.data["transfer_id"]
    if state.transfers[tid].get("secondary_status") is not None:
        _held(state)[tid] = e.data["due_at"]
    if e.data["due_at"] is not None:  # None: held, or paced by polls or by hand
        state.timers.add(parse_time(e.data["due_at"]), "crypto_deposit_confirmation", tid)


def _released(state: State, e: Event) -> None:
    """Updated: the hold ends and the secondary status goes; rejected: the hold ends
    (TransferFailed that follows records the rejection)."""
    tid = e.data["transfer_id"]
    _held(state).pop(tid, None)
    if e.type == "CryptoDepositUpdated":
        record = state.transfers[tid]
        record.pop("secondary_status", None)
        record["updated_at"] = e.occurred_at
        state.mark("transfer", tid)


def check_held(state: State) -> list[str]:
    """Every deposit held for review is a PENDING crypto deposit that says so."""
    problems = []
    for tid in _held(state):
        t = state.transfers.get(tid)
        if t is None or t["status"] != "PENDING" or not t.get("secondary_status"):
            problems.append(f"held crypto deposit {tid} is not a pending deposit under review")
    return problems


DECIDERS = {
    CreateDepositAddress: create_deposit_address,
    SandboxCryptoDeposit: sandbox_crypto_deposit,
    UpdateCryptoDeposit: update_crypto_deposit,
    RejectCryptoDeposit: reject_crypto_deposit,
}
APPLIERS = {
    "DepositAddressCreated": _address_created,
    "CryptoDepositReceived": _received,
    "CryptoDepositUpdated": _released,
    "CryptoDepositRejected": _released,
}
TIMERS = {"crypto_deposit_confirmation": confirm}


def _row(state: State, key: str) -> dict[str, Any] | None:
    r = addresses(state).get(key)
    if r is None:
        return None
    return {
        "id": r["id"],
        "customer_id": r["customer_id"],
        "profile_id": r["profile_id"],
        "identity_id": r.get("identity_id"),
        "account_id": r.get("account_id"),
        "ref_id": r.get("ref_id"),
        "created_at": r["created_at"],
        "seq": r["seq"],
        "body": orjson.dumps(address_view(r)).decode(),
    }


TABLE = ReadModelTable(
    "deposit_addresses",
    {
        "id": str,
        "customer_id": str,
        "profile_id": str,
        "identity_id": str,
        "account_id": str,
        "ref_id": str,
        "created_at": str,
        "seq": int,
        "body": str,
    },
    pk=("id",),
    kind="deposit_address",
    row=_row,
    key_columns=("id",),
    keys=lambda s: addresses(s).keys(),
)
REGISTRATION = Registration(DECIDERS, APPLIERS, TIMERS, tables=(TABLE,), checks=(check_held,))
