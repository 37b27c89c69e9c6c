"""Account members: identities tied to an account with roles (BENEFICIAL_OWNER,
AUTHORIZED_USER, FINANCIAL_ADVISOR), added beside the existing ones and removed one by
one; "effectively immutable": a change is a removal and an addition."""

from __future__ import annotations

from typing import Any

from sandex.engine.domain.identity.accounts import accounts, check_account_members, find_account
from sandex.engine.kernel.commands import AddAccountMembers, RemoveAccountMember
from sandex.engine.kernel.errors import AlreadyExists, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State


def add_members(ctx: Ctx, cmd: AddAccountMembers) -> dict[str, Any]:
    """New members beside the existing ones; an identity already a member is 409."""
    state = ctx.state
    if not cmd.account_id:
        raise Invalid("account_id is required", field="account_id")
    account = find_account(state, cmd.actor.customer_id, cmd.account_id)
    members = check_account_members(state, account["customer_id"], cmd.members, "members")
    existing = {m["identity_id"]: m for m in account["members"]}
    for member in members:
        if member["identity_id"] in existing:
            raise AlreadyExists(
                f"identity {member['identity_id']} is already a member of account {account['id']}",
                existing[member["identity_id"]],
            )
    added = [{**m, "id": ctx.ids.uuid()} for m in members]
    ctx.emit(
        "AccountMembersAdded",
        f"account-{account['id']}",
        {"account_id": account["id"], "members": added},
    )
    return {"account_id": account["id"], "members": added}


def remove_member(ctx: Ctx, cmd: RemoveAccountMember) -> dict[str, Any]:
    for account in accounts(ctx.state).values():
        if account["customer_id"] == cmd.actor.customer_id and any(
            m["id"] == cmd.member_id for m in account["members"]
        ):
            ctx.emit(
                "AccountMemberRemoved",
                f"account-{account['id']}",
                {"account_id": account["id"], "member_id": cmd.member_id},
            )
            return {}
    raise NotFound(f"account member not found with id {cmd.member_id[:64]}")


def _added(state: State, e: Event) -> None:
    record = accounts(state)[e.data["account_id"]]
    record["members"] = [*record["members"], *e.data["members"]]
    record["updated_at"] = e.occurred_at
    state.mark("identity_account", record["id"])


def _removed(state: State, e: Event) -> None:
    record = accounts(state)[e.data["account_id"]]
    record["members"] = [m for m in record["members"] if m["id"] != e.data["member_id"]]
    record["updated_at"] = e.occurred_at
    state.mark("identity_account", record["id"])


REGISTRATION = Registration(
    deciders={AddAccountMembers: add_members, RemoveAccountMember: remove_member},
    appliers={"AccountMembersAdded": _added, "AccountMemberRemoved": _removed},
)
