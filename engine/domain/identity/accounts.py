"""Accounts: what ties identities to a profile (tag Accounts). An account has a primary
identity (its owner for tax purposes, treated as a BENEFICIAL_OWNER), members with
roles (account_members.py), and optionally a profile of its own (`create_profile`)."""

from __future__ import annotations

from typing import Any

import orjson

from sandex.engine.domain.customers import create_profile
from sandex.engine.domain.identity.identities import find_identity, identities
from sandex.engine.domain.metadata import check_metadata
from sandex.engine.kernel.commands import CreateAccount, CreateProfile, UpdateAccount
from sandex.engine.kernel.errors import AlreadyExists, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

ROLES = ("BENEFICIAL_OWNER", "AUTHORIZED_USER", "FINANCIAL_ADVISOR")
# What an update may add to or remove from a member (the document's rule).
UPDATABLE_ROLES = frozenset({"FINANCIAL_ADVISOR", "AUTHORIZED_USER"})
# The fields each request may name in `account`; any other is refused.
_CREATE_FIELDS = ("identity_id", "description", "metadata", "ref_id", "members")
_UPDATE_FIELDS = ("id", "description", "ref_id", "metadata", "members")
_MAX_REF_ID = 128
_MAX_DESCRIPTION = 1000
_INTERNAL = frozenset({"customer_id", "seq"})


def accounts(state: State) -> dict[str, dict[str, Any]]:
    """Accounts by id."""
    return state.ext.setdefault("identity_accounts", {})  # type: ignore[no-any-return]


def find_account(state: State, customer_id: str, account_id: str) -> dict[str, Any]:
    record = accounts(state).get(account_id)
    if record is None or record["customer_id"] != customer_id:
        raise NotFound(f"account not found with id {account_id[:64]}")
    return record


def account_status(state: State, record: dict[str, Any]) -> str:
    """DISABLED when disabled, else its primary identity's summary status."""
    if record.get("user_disabled") or record.get("admin_disabled"):
        return "DISABLED"
    owner = identities(state).get(record["identity_id"])
    return str(owner["summary_status"]) if owner else "PENDING"


def account_view(state: State, record: dict[str, Any]) -> dict[str, Any]:
    view = {k: v for k, v in record.items() if v is not None and k not in _INTERNAL}
    view["summary_status"] = account_status(state, record)
    return view


def check_account_members(
    state: State, customer_id: str, members: Any, field: str
) -> list[dict[str, Any]]:
    """Members as given: each an identity of the customer, named once, with roles of
    the document's; an id is the platform's to give."""
    if not isinstance(members, list | tuple) or not members:
        raise Invalid(f"{field} invalid: at least one member", field=field)
    seen: set[str] = set()
    checked = []
    for i, member in enumerate(members):
        where = f"{field}[{i}]"
        if member.get("id") is not None:
            raise Invalid(f"{where}.id invalid: given by the platform", field=f"{where}.id")
        identity_id = member.get("identity_id") or ""
        if not identity_id:
            raise Invalid(f"{where}.identity_id is required", field=f"{where}.identity_id")
        find_identity(state, customer_id, identity_id)
        if identity_id in seen:
            raise Invalid(
                f"{where}.identity_id invalid: {identity_id} is named twice",
                field=f"{where}.identity_id",
            )
        seen.add(identity_id)
        roles = list(member.get("roles") or ([member["type"]] if member.get("type") else []))
        if not roles:
            raise Invalid(f"{where}.roles invalid: at least one role", field=f"{where}.roles")
        for role in roles:
            if role not in ROLES:
                raise Invalid(
                    f"{where}.roles invalid: must be one of {', '.join(ROLES)}",
                    field=f"{where}.roles",
                )
        checked.append({"identity_id": identity_id, "roles": sorted(set(roles), key=ROLES.index)})
    return checked


def _only(account: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for name in account:
        if name not in allowed and account[name] is not None:
            raise Invalid(
                f"account.{name} invalid: not allowed in this request", field=f"account.{name}"
            )


def _text_fields(account: dict[str, Any]) -> None:
    ref_id, description = account.get("ref_id"), account.get("description")
    if ref_id is not None and not 0 < len(ref_id) <= _MAX_REF_ID:
        raise Invalid(
            f"account.ref_id invalid: 1 to {_MAX_REF_ID} characters", field="account.ref_id"
        )
    if description is not None and len(description) > _MAX_DESCRIPTION:
        raise Invalid(
            f"account.description invalid: at most {_MAX_DESCRIPTION} characters",
            field="account.description",
        )


def _ref_taken(state: State, customer_id: str, ref_id: str, other_than: str = "") -> None:
    for record in accounts(state).values():
        if (
            record["customer_id"] == customer_id
            and record.get("ref_id") == ref_id
            and record["id"] != other_than
        ):
            raise AlreadyExists(
                f"account already exists with ref_id '{ref_id}'", account_view(state, record)
            )


def create_account(ctx: Ctx, cmd: CreateAccount) -> dict[str, Any]:
    state = ctx.state
    customer_id = cmd.actor.customer_id
    account = cmd.account
    _only(account, _CREATE_FIELDS)
    if not account.get("identity_id"):
        raise Invalid("account.identity_id is required", field="account.identity_id")
    _text_fields(account)
    metadata = check_metadata(account.get("metadata"), "account.metadata")
    owner = find_identity(state, customer_id, account["identity_id"])
    members = (
        check_account_members(state, customer_id, account["members"], "account.members")
        if account.get("members") is not None
        else []
    )
    if account.get("ref_id") is not None:
        _ref_taken(state, customer_id, account["ref_id"])
    account_id = ctx.ids.uuid()
    profile_id = None
    if cmd.create_profile:
        made = create_profile(ctx, CreateProfile(actor=cmd.actor, nickname=f"account {account_id}"))
        profile_id = made["id"]
    record = {
        "id": account_id,
        "customer_id": customer_id,
        "identity_id": owner["id"],
        "description": account.get("description"),
        "metadata": metadata,
        "ref_id": account.get("ref_id"),
        "members": [{**m, "id": ctx.ids.uuid()} for m in members],
        "admin_disabled": False,
        "user_disabled": False,
        "type": "BROKERAGE",
        "profile_id": profile_id,
        "created_at": ctx.now_text,
        "updated_at": ctx.now_text,
    }
    ctx.emit("AccountCreated", f"account-{account_id}", {"account": record})
    return account_view(state, accounts(state)[account_id])


def _beneficial(members: list[dict[str, Any]]) -> set[str]:
    return {m["identity_id"] for m in members if "BENEFICIAL_OWNER" in m["roles"]}


def update_account(ctx: Ctx, cmd: UpdateAccount) -> dict[str, Any]:
    """What the request names replaces what the account has; `members`, the whole list,
    may only add or remove FINANCIAL_ADVISOR and AUTHORIZED_USER roles."""
    state = ctx.state
    account = cmd.account
    _only(account, _UPDATE_FIELDS)
    if not account.get("id"):
        raise Invalid("account.id is required", field="account.id")
    record = find_account(state, cmd.actor.customer_id, account["id"])
    _text_fields(account)
    changes: dict[str, Any] = {}
    for name in ("description", "ref_id"):
        if account.get(name) is not None:
            changes[name] = account[name]
    if account.get("metadata") is not None:
        changes["metadata"] = check_metadata(account["metadata"], "account.metadata")
    if account.get("members") is not None:
        given = check_account_members(
            state, record["customer_id"], account["members"], "account.members"
        )
        before = record["members"]
        owners_before = _beneficial(before)
        if _beneficial(given) != owners_before:
            raise Invalid(
                "account.members invalid: only the FINANCIAL_ADVISOR and AUTHORIZED_USER roles"
                " can be added or removed (Add and Remove Account Members change the rest)",
                field="account.members",
            )
        ids = {m["identity_id"]: m["id"] for m in before}
        changes["members"] = [
            {**m, "id": ids.get(m["identity_id"]) or ctx.ids.uuid()} for m in given
        ]
    if cmd.set_user_disabled is not None:
        changes["user_disabled"] = cmd.set_user_disabled
    if changes.get("ref_id") is not None:
        _ref_taken(state, record["customer_id"], changes["ref_id"], record["id"])
    changes = {k: v for k, v in changes.items() if record.get(k) != v}
    if changes:
        ctx.emit(
            "AccountUpdated",
            f"account-{record['id']}",
            {"account_id": record["id"], "changes": changes},
        )
    return account_view(state, record)


def _created(state: State, e: Event) -> None:
    record = dict(e.data["account"])
    record["seq"] = e.position
    accounts(state)[record["id"]] = record
    state.mark("identity_account", record["id"])


def _updated(state: State, e: Event) -> None:
    record = accounts(state)[e.data["account_id"]]
    record.update(e.data["changes"])
    record["updated_at"] = e.occurred_at
    state.mark("identity_account", record["id"])


def _row(state: State, key: str) -> dict[str, Any] | None:
    r = accounts(state).get(key)
    if r is None:
        return None
    return {
        "id": r["id"],
        "customer_id": r["customer_id"],
        "identity_id": r["identity_id"],
        "created_at": r["created_at"],
        "updated_at": r["updated_at"],
        "seq": r["seq"],
        "body": orjson.dumps(account_view(state, r)).decode(),
    }


TABLE = ReadModelTable(
    "identity_accounts",
    {
        "id": str,
        "customer_id": str,
        "identity_id": str,
        "created_at": str,
        "updated_at": str,
        "seq": int,
        "body": str,
    },
    pk=("id",),
    kind="identity_account",
    row=_row,
    key_columns=("id",),
    keys=lambda s: accounts(s).keys(),
)
REGISTRATION = Registration(
    deciders={CreateAccount: create_account, UpdateAccount: update_account},
    appliers={"AccountCreated": _created, "AccountUpdated": _updated},
    tables=(TABLE,),
)
