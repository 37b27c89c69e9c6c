"""Institution members: the persons (or institutions) tied to an institution identity,
each with its roles. Kept on the institution, whose row shows them."""

from __future__ import annotations

from typing import Any

from sandex.engine.domain.identity.identities import (
    check_members,
    find_identity,
    identities,
    mark_identity,
)
from sandex.engine.kernel.commands import AddInstitutionMembers, RemoveInstitutionMember
from sandex.engine.kernel.errors import AlreadyExists, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State


def add_members(ctx: Ctx, cmd: AddInstitutionMembers) -> dict[str, Any]:
    """New members beside the existing ones; one already a member is 409."""
    state = ctx.state
    if not cmd.institution_id:
        raise Invalid("institution_id is required", field="institution_id")
    institution = find_identity(state, cmd.actor.customer_id, cmd.institution_id)
    if institution["type"] != "INSTITUTION":
        raise Invalid(
            f"institution_id invalid: identity {institution['id']} is a person",
            field="institution_id",
        )
    members = check_members(
        state, institution["customer_id"], cmd.members, "members", institution["id"]
    )
    existing = {m["identity_id"]: m for m in institution.get("institution_members") or []}
    for member in members:
        if member["identity_id"] in existing:
            raise AlreadyExists(
                f"identity {member['identity_id']} is already a member of institution"
                f" {institution['id']}",
                existing[member["identity_id"]],
            )
    added = [{**m, "id": ctx.ids.uuid()} for m in members]
    ctx.emit(
        "InstitutionMembersAdded",
        f"identity-{institution['id']}",
        {"institution_id": institution["id"], "members": added},
    )
    return {"institution_id": institution["id"], "members": added}


def _owner(state: State, customer_id: str, member_id: str) -> dict[str, Any]:
    for record in identities(state).values():
        if record["customer_id"] != customer_id:
            continue
        if any(m["id"] == member_id for m in record.get("institution_members") or []):
            return record
    raise NotFound(f"institution member not found with id {member_id[:64]}")


def remove_member(ctx: Ctx, cmd: RemoveInstitutionMember) -> dict[str, Any]:
    institution = _owner(ctx.state, cmd.actor.customer_id, cmd.member_id)
    ctx.emit(
        "InstitutionMemberRemoved",
        f"identity-{institution['id']}",
        {"institution_id": institution["id"], "member_id": cmd.member_id},
    )
    return {}


def _added(state: State, e: Event) -> None:
    record = identities(state)[e.data["institution_id"]]
    record["institution_members"] = [
        *(record.get("institution_members") or []),
        *e.data["members"],
    ]
    record["updated_at"] = e.occurred_at
    mark_identity(state, record["id"])


def _removed(state: State, e: Event) -> None:
    record = identities(state)[e.data["institution_id"]]
    record["institution_members"] = [
        m for m in record.get("institution_members") or [] if m["id"] != e.data["member_id"]
    ]
    record["updated_at"] = e.occurred_at
    mark_identity(state, record["id"])


REGISTRATION = Registration(
    deciders={AddInstitutionMembers: add_members, RemoveInstitutionMember: remove_member},
    appliers={"InstitutionMembersAdded": _added, "InstitutionMemberRemoved": _removed},
)
