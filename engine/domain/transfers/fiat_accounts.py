"""Fiat accounts: the bank (or intrabank) accounts a customer withdraws fiat to.

An account holds one network's instructions (a wire with its routing details, or a
CUBIX, CBIT, DBS or SCB account), checked as a bank would check them: an ABA routing
number's checksum, a SWIFT BIC's form, an IBAN's mod-97 check. It is created, and
updated, PENDING; an automated review on the engine clock (`fiat_account_review_seconds`
later, a timer, or as the world paces reviews) makes it APPROVED, or REJECTED when a
metadata value is "sandbox:reject" (sandex.engine.domain.sandbox_triggers: how a user tests that
path). Only an APPROVED account takes withdrawals; a deleted one
is gone for every operation but a read with `include_deleted`.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from sandex.engine.domain import sandbox_pacing, sandbox_triggers
from sandex.engine.domain.identity.permissions import check_acting
from sandex.engine.domain.metadata import check_metadata
from sandex.engine.domain.transfers.networks import FIAT_NETWORKS
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.commands import CreateFiatAccount, DeleteFiatAccount, UpdateFiatAccount
from sandex.engine.kernel.errors import AlreadyExists, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

# The request's network keys and the service's FiatNetwork names.
# instructions key -> network
NETWORKS = {n.lower(): n for n in FIAT_NETWORKS}
STATUSES = ("PENDING", "APPROVED", "REJECTED")
_MAX_REF_ID = 128
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_ABA = re.compile(r"^[0-9]{9}$")
_BIC = re.compile(r"^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$")
_IBAN = re.compile(r"^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$")
_US_ACCOUNT = re.compile(r"^[0-9]{4,17}$")
_ACCOUNT = re.compile(r"^[A-Za-z0-9]{1,34}$")
_NAME_LENGTH = 100
# Fields of a record that are the engine's, not the service's FiatAccount.
_INTERNAL = frozenset({"seq", "customer_id", "deleted", "review_due_at"})


def accounts(state: State) -> dict[str, dict[str, Any]]:
    """Fiat accounts by id."""
    return state.ext.setdefault("fiat_accounts", {})  # type: ignore[no-any-return]


def account_view(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if v is not None and k not in _INTERNAL}


def network_of(record: dict[str, Any]) -> str:
    """The account's FiatNetwork name (WIRE, CUBIX, ...)."""
    return NETWORKS[next(iter(record["fiat_network_instructions"]))]


def _masked(number: str) -> str:
    return "XXXX" + number[-4:]


def summary_view(view: dict[str, Any]) -> dict[str, Any]:
    """The list's abbreviated account, as the service lists them: no beneficiary name or
    address details (an address keeps only its required country), and only the last four
    digits of an account number."""
    short = {k: v for k, v in view.items() if k != "fiat_account_owner"}
    instructions: dict[str, Any] = {}
    for key, details in view["fiat_network_instructions"].items():
        details = dict(details)
        if "account_number" in details:
            details["account_number"] = _masked(details["account_number"])
        if key == "wire":
            country = details["fiat_account_owner_address"]["country"]
            details["fiat_account_owner_address"] = {"country": country}
            for name in ("routing_details", "intermediary_routing_details"):
                if name in details:
                    routing = dict(details[name])
                    routing["bank_address"] = {"country": routing["bank_address"]["country"]}
                    details[name] = routing
        instructions[key] = details
    short["fiat_network_instructions"] = instructions
    return short


# -- checks ---------------------------------------------------------------------------


def aba_checksum_ok(number: str) -> bool:
    """The ABA routing number's check digit: 3, 7, 1 weights, sum divisible by 10."""
    weights = (3, 7, 1) * 3
    return sum(int(d) * w for d, w in zip(number, weights, strict=True)) % 10 == 0


def iban_ok(iban: str) -> bool:
    """ISO 13616: the first four characters moved to the end, letters as 10..35, mod 97 is 1."""
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"{field} must be set", field=field)
    if len(value) > _NAME_LENGTH:
        raise Invalid(f"{field} invalid: at most {_NAME_LENGTH} characters", field=field)
    return value


def _check_owner(owner: dict[str, Any], field: str = "fiat_account_owner") -> str:
    """Exactly one of a person's names or an institution's name: which one it is."""
    person, institution = owner.get("person_details"), owner.get("institution_details")
    if (person is None) == (institution is None):
        raise Invalid(
            f"{field} invalid: exactly one of person_details and institution_details",
            field=field,
        )
    if person is not None:
        _text(person.get("first_name"), f"{field}.person_details.first_name")
        _text(person.get("last_name"), f"{field}.person_details.last_name")
        return "person_details"
    _text((institution or {}).get("name"), f"{field}.institution_details.name")
    return "institution_details"


def _check_routing(routing: dict[str, Any], field: str) -> str:
    kind = routing.get("routing_number_type")
    number = routing.get("routing_number", "")
    if kind == "ABA":
        if not _ABA.match(number):
            raise Invalid(
                f"{field}.routing_number invalid: an ABA routing number is 9 digits",
                field=f"{field}.routing_number",
            )
        if not aba_checksum_ok(number):
            raise Invalid(
                f"{field}.routing_number invalid: {number} fails the ABA checksum",
                field=f"{field}.routing_number",
            )
    elif kind == "SWIFT":
        if not _BIC.match(number):
            raise Invalid(
                f"{field}.routing_number invalid: a SWIFT BIC is 8 or 11 letters and digits"
                " (bank, country, location, optional branch)",
                field=f"{field}.routing_number",
            )
    else:
        raise Invalid(
            f"{field}.routing_number_type invalid: must be one of ABA, SWIFT",
            field=f"{field}.routing_number_type",
        )
    _text(routing.get("bank_name"), f"{field}.bank_name")
    return str(kind)


def _check_wire(wire: dict[str, Any]) -> None:
    field = "fiat_network_instructions.wire"
    kind = _check_routing(wire.get("routing_details") or {}, f"{field}.routing_details")
    if wire.get("intermediary_routing_details") is not None:
        _check_routing(
            wire["intermediary_routing_details"], f"{field}.intermediary_routing_details"
        )
    number = wire.get("account_number", "")
    name = f"{field}.account_number"
    if not number:
        raise Invalid(f"{name} must be set", field=name)
    if kind == "ABA" and not _US_ACCOUNT.match(number):
        raise Invalid(f"{name} invalid: a US account number is 4 to 17 digits", field=name)
    if kind == "SWIFT":
        if _IBAN.match(number):
            if not iban_ok(number):
                raise Invalid(f"{name} invalid: {number} fails the IBAN checksum", field=name)
        elif not _ACCOUNT.match(number):
            raise Invalid(f"{name} invalid: an IBAN, or 1 to 34 letters and digits", field=name)


def _check_instructions(instructions: dict[str, Any]) -> None:
    field = "fiat_network_instructions"
    given = [k for k, v in instructions.items() if v is not None]
    if len(given) != 1 or given[0] not in NETWORKS:
        raise Invalid(f"{field} invalid: exactly one of {', '.join(NETWORKS)}", field=field)
    key = given[0]
    details = instructions[key]
    if key == "wire":
        _check_wire(details)
    elif key == "cubix":
        value = details.get("account_id", "")
        if not _UUID.match(value):
            raise Invalid(
                f"{field}.cubix.account_id invalid: the CUBIX account id is a UUID",
                field=f"{field}.cubix.account_id",
            )
    elif key == "cbit":
        _text(details.get("wallet_address"), f"{field}.cbit.wallet_address")
    else:
        value = details.get("account_number", "")
        if not _ACCOUNT.match(value):
            raise Invalid(
                f"{field}.{key}.account_number invalid: 1 to 34 letters and digits",
                field=f"{field}.{key}.account_number",
            )


def _review_pace(ctx: Ctx) -> sandbox_pacing.Pace:
    return sandbox_pacing.pace(ctx, "fiat_account_review", ctx.settings.fiat_account_review_seconds)


def _paced_review(ctx: Ctx, pace: sandbox_pacing.Pace, account_id: str, customer_id: str) -> None:
    """After a creation or an update: count the polls the pace asks for, or review now."""
    if pace.polls is not None:
        sandbox_pacing.await_polls(ctx, "fiat_account_review", account_id, customer_id, pace.polls)
    if pace.due is not None and pace.due <= ctx.now:
        review(ctx, account_id)


def owned_account(state: State, customer_id: str, account_id: str) -> dict[str, Any] | None:
    """The caller's account, if it exists and is not deleted."""
    record = accounts(state).get(account_id)
    if record is None or record["customer_id"] != customer_id or record.get("deleted"):
        return None
    return record


# -- decisions ------------------------------------------------------------------------


def create_fiat_account(ctx: Ctx, cmd: CreateFiatAccount) -> dict[str, Any]:
    state = ctx.state
    _check_owner(cmd.fiat_account_owner)
    _check_instructions(cmd.fiat_network_instructions)
    metadata = check_metadata(cmd.metadata)
    check_acting(
        state,
        cmd.actor.customer_id,
        cmd.identity_id,
        cmd.account_id,
        action="hold a fiat account",
    )
    if cmd.ref_id is not None:
        if not 0 < len(cmd.ref_id) <= _MAX_REF_ID:
            raise Invalid(f"ref_id invalid: 1 to {_MAX_REF_ID} characters", field="ref_id")
        for record in accounts(state).values():
            if (
                record["customer_id"] == cmd.actor.customer_id
                and record.get("ref_id") == cmd.ref_id
            ):
                raise AlreadyExists(
                    f"fiat account already exists with ref_id '{cmd.ref_id}'",
                    account_view(record),
                )
    account_id = ctx.ids.uuid()
    record = {
        "id": account_id,
        "customer_id": cmd.actor.customer_id,
        "ref_id": cmd.ref_id,
        "identity_id": cmd.identity_id,
        "account_id": cmd.account_id,
        "fiat_account_owner": cmd.fiat_account_owner,
        "fiat_network_instructions": cmd.fiat_network_instructions,
        "status": "PENDING",
        "metadata": metadata,
        "created_at": ctx.now_text,
        "updated_at": ctx.now_text,
    }
    pace = _review_pace(ctx)
    ctx.emit(
        "FiatAccountCreated",
        f"fiat-account-{account_id}",
        {"account": record, "due_at": pace.due_text},
    )
    _paced_review(ctx, pace, account_id, cmd.actor.customer_id)
    return account_view(accounts(state)[account_id])


def _merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`old` with `new`'s values over it, at every depth but an address's (a new address
    replaces the old one whole); empty strings are ignored, as the service ignores them."""
    merged = dict(old)
    for key, value in new.items():
        whole = key.endswith("address")
        if isinstance(value, dict) and isinstance(old.get(key), dict) and not whole:
            merged[key] = _merged(old[key], value)
        elif value is not None and value != "":
            merged[key] = value
    return merged


def update_fiat_account(ctx: Ctx, cmd: UpdateFiatAccount) -> dict[str, Any]:
    record = owned_account(ctx.state, cmd.actor.customer_id, cmd.fiat_account_id)
    if record is None:
        raise NotFound(f"fiat_account with id {cmd.fiat_account_id[:64]} not found")
    changes: dict[str, Any] = {}
    owner = cmd.fiat_account_owner
    if owner:
        kind = _check_owner(owner)
        had = next(iter(record["fiat_account_owner"]))
        if kind != had:
            words = {"person_details": "person", "institution_details": "institution"}
            raise Invalid(
                f"fiat_account_owner cannot be changed from {words[had]} to {words[kind]}",
                field="fiat_account_owner",
            )
        changes["fiat_account_owner"] = _merged(record["fiat_account_owner"], owner)
    wire = (cmd.fiat_network_instructions or {}).get("wire")
    if wire:
        held = record["fiat_network_instructions"]
        if "wire" not in held:
            raise Invalid(
                f"fiat_network_instructions.wire invalid: fiat account {record['id']} is a"
                f" {network_of(record)} account, not a wire account",
                field="fiat_network_instructions.wire",
            )
        if (
            wire.get("intermediary_routing_details")
            and "intermediary_routing_details" not in (held["wire"])
        ):
            raise Invalid(
                "fiat_network_instructions.wire.intermediary_routing_details invalid: the"
                " account has no intermediary bank to update",
                field="fiat_network_instructions.wire.intermediary_routing_details",
            )
        instructions = {"wire": _merged(held["wire"], wire)}
        _check_instructions(instructions)
        changes["fiat_network_instructions"] = instructions
    if cmd.metadata is not None:
        changes["metadata"] = check_metadata(cmd.metadata)
    pace = _review_pace(ctx)
    ctx.emit(
        "FiatAccountUpdated",
        f"fiat-account-{record['id']}",
        {"fiat_account_id": record["id"], "changes": changes, "due_at": pace.due_text},
    )
    _paced_review(ctx, pace, record["id"], record["customer_id"])
    return account_view(record)


def delete_fiat_account(ctx: Ctx, cmd: DeleteFiatAccount) -> dict[str, Any]:
    account_id = cmd.fiat_account_id
    if not _UUID.match(account_id):
        raise Invalid(f"id must be uuid, given '{account_id[:64]}'", field="id")
    record = owned_account(ctx.state, cmd.actor.customer_id, account_id)
    if record is None:
        raise NotFound(f"no fiat account found for id: '{account_id}'")
    ctx.emit("FiatAccountDeleted", f"fiat-account-{account_id}", {"fiat_account_id": account_id})
    return {}


def review(ctx: Ctx, account_id: str) -> None:
    """The automated review of a PENDING account, once its latest change is due."""
    record = accounts(ctx.state).get(account_id)
    if record is None or record.get("deleted") or record["status"] != "PENDING":
        return
    due = record["review_due_at"]
    if due is None or ctx.now < parse_time(due):
        # a review of an earlier version: the latest one is due later, or is paced by
        # polls or by hand
        return
    decide_review(ctx, account_id, approve=not sandbox_triggers.rejects(record.get("metadata")))


def decide_review(ctx: Ctx, account_id: str, *, approve: bool) -> None:
    """The review's verdict on a PENDING account: APPROVED or REJECTED."""
    ctx.emit(
        "FiatAccountReviewed",
        f"fiat-account-{account_id}",
        {"fiat_account_id": account_id, "status": "APPROVED" if approve else "REJECTED"},
    )


# -- appliers -------------------------------------------------------------------------


def _created(state: State, e: Event) -> None:
    record = dict(e.data["account"])
    record["seq"] = e.position
    record["review_due_at"] = e.data["due_at"]
    accounts(state)[record["id"]] = record
    if e.data["due_at"] is not None:  # None: paced by polls or by hand
        state.timers.add(parse_time(e.data["due_at"]), "fiat_account_review", record["id"])
    state.mark("fiat_account", record["id"])


def _updated(state: State, e: Event) -> None:
    record = accounts(state)[e.data["fiat_account_id"]]
    record.update(e.data["changes"])
    record["status"] = "PENDING"
    record["updated_at"] = e.occurred_at
    record["review_due_at"] = e.data["due_at"]
    if e.data["due_at"] is not None:  # None: paced by polls or by hand
        state.timers.add(parse_time(e.data["due_at"]), "fiat_account_review", record["id"])
    state.mark("fiat_account", record["id"])


def _reviewed(state: State, e: Event) -> None:
    record = accounts(state)[e.data["fiat_account_id"]]
    record["status"] = e.data["status"]
    record["updated_at"] = e.occurred_at
    state.mark("fiat_account", record["id"])


def _deleted(state: State, e: Event) -> None:
    record = accounts(state)[e.data["fiat_account_id"]]
    record["deleted"] = True
    record["updated_at"] = e.occurred_at
    state.mark("fiat_account", record["id"])


DECIDERS = {
    CreateFiatAccount: create_fiat_account,
    UpdateFiatAccount: update_fiat_account,
    DeleteFiatAccount: delete_fiat_account,
}
APPLIERS = {
    "FiatAccountCreated": _created,
    "FiatAccountUpdated": _updated,
    "FiatAccountReviewed": _reviewed,
    "FiatAccountDeleted": _deleted,
}
TIMERS = {"fiat_account_review": review}


def _row(state: State, key: str) -> dict[str, Any] | None:
    r = accounts(state).get(key)
    if r is None:
        return None
    return {
        "id": r["id"],
        "customer_id": r["customer_id"],
        "ref_id": r.get("ref_id"),
        "status": r["status"],
        "deleted": 1 if r.get("deleted") else 0,
        "created_at": r["created_at"],
        "seq": r["seq"],
        "body": orjson.dumps(account_view(r)).decode(),
    }


TABLE = ReadModelTable(
    "fiat_accounts",
    {
        "id": str,
        "customer_id": str,
        "ref_id": str,
        "status": str,
        "deleted": int,
        "created_at": str,
        "seq": int,
        "body": str,
    },
    pk=("id",),
    kind="fiat_account",
    row=_row,
    key_columns=("id",),
    keys=lambda s: accounts(s).keys(),
)
REGISTRATION = Registration(DECIDERS, APPLIERS, TIMERS, tables=(TABLE,))
