"""Identities: a person or an institution that acts on the platform, as the service
keeps them (tag Identity, and Sandbox Identity for its verdicts).

An identity is created PENDING. Its `summary_status` follows from its verification
statuses, set in the sandbox by `SetIdentitySandboxStatus` (the service's own checks
are not simulated): a person is APPROVED once `id_verification_status` and
`sanctions_verification_status` are, an institution once its sanctions check is; any
check DENIED (ERROR) makes it DENIED (ERROR), and an identity disabled by its user or
an admin is DISABLED. A change of summary status is its own event
(`IdentitySummaryStatusChanged`), announced in the event feed as `identity.approved`,
`identity.denied` or `identity.disabled` where the service lists the type.
"""

from __future__ import annotations

from typing import Any

import orjson

from sandex.engine.domain.metadata import check_metadata
from sandex.engine.kernel.clock import format_time, parse_time
from sandex.engine.kernel.commands import CreateIdentity, SetIdentitySandboxStatus, UpdateIdentity
from sandex.engine.kernel.errors import AlreadyExists, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

STATUSES = ("PENDING", "ERROR", "APPROVED", "DENIED", "DISABLED")
# identity.approved, .denied and .disabled: the summary statuses the service announces
ANNOUNCED_STATUSES = STATUSES[2:]
PERSON_CHECKS: tuple[str, ...] = ("id_verification_status", "sanctions_verification_status")
INSTITUTION_CHECKS: tuple[str, ...] = ("sanctions_verification_status",)
# Checks a verdict may block but whose approval is not needed to transact.
OTHER_CHECKS: dict[str, tuple[str, ...]] = {
    "PERSON": ("additional_screening_status",),
    "INSTITUTION": ("document_verification_status", "additional_screening_status"),
}
# Fields of the details that only the platform sets (the sandbox through sandbox-status).
_PLATFORM_FIELDS = frozenset(
    {
        "id_verification_status",
        "sanctions_verification_status",
        "additional_screening_status",
        "document_verification_status",
        "passthrough_verification_status",
        "id_verification_url",
    }
)
_MAX_REF_ID = 128
_DETAILS = {"PERSON": "person_details", "INSTITUTION": "institution_details"}
_INTERNAL = frozenset({"customer_id", "seq"})


def identities(state: State) -> dict[str, dict[str, Any]]:
    """Identities by id."""
    return state.ext.setdefault("identities", {})  # type: ignore[no-any-return]


def uses_identities(state: State, customer_id: str) -> bool:
    """Whether the customer integrates with identities: has created one."""
    return customer_id in state.ext.get("identity_customers", ())


def find_identity(state: State, customer_id: str, identity_id: str) -> dict[str, Any]:
    """The customer's identity; another customer's is not found."""
    record = identities(state).get(identity_id)
    if record is None or record["customer_id"] != customer_id:
        raise NotFound(f"identity not found with id {identity_id[:64]}")
    return record


def checks_of(record: dict[str, Any]) -> dict[str, str]:
    """The identity's verification statuses by name."""
    details = record.get(_DETAILS[record["type"]]) or {}
    return {n: details[n] for n in _all_checks(record["type"]) if n in details}


def summary_status(record: dict[str, Any]) -> str:
    """What the verification statuses and the disabling flags make of the identity."""
    if record.get("user_disabled") or record.get("admin_disabled"):
        return "DISABLED"
    checks = checks_of(record)
    for verdict in ("DENIED", "ERROR", "DISABLED"):
        if verdict in checks.values():
            return verdict
    needed = PERSON_CHECKS if record["type"] == "PERSON" else INSTITUTION_CHECKS
    if all(checks.get(n) == "APPROVED" for n in needed):
        return "APPROVED"
    return "PENDING"


def identity_view(
    record: dict[str, Any],
    state: State | None = None,
    *,
    details: bool = True,
    members: bool = True,
) -> dict[str, Any]:
    """The service's Identity: details and institution members only when asked for
    (GetIdentity leaves them out by default), each member with its name and status."""
    view = {k: v for k, v in record.items() if v is not None and k not in _INTERNAL}
    if not details:
        view.pop("person_details", None)
        view.pop("institution_details", None)
    if not members or record["type"] != "INSTITUTION":
        view.pop("institution_members", None)
    elif state is not None:
        view["institution_members"] = [
            _member_view(state, m) for m in record.get("institution_members") or []
        ]
    return view


def _member_view(state: State, member: dict[str, Any]) -> dict[str, Any]:
    shown = dict(member)
    person = identities(state).get(member["identity_id"])
    if person is not None:
        shown["summary_status"] = person["summary_status"]
        name = _name(person)
        if name:
            shown["name"] = name
    return shown


def _name(record: dict[str, Any]) -> str:
    if record["type"] == "INSTITUTION":
        return str((record.get("institution_details") or {}).get("name", ""))
    person = record.get("person_details") or {}
    parts = (person.get("first_name"), person.get("middle_name"), person.get("last_name"))
    return " ".join(p for p in parts if p)


# -- checks shared by create and update ---------------------------------------------------


def _no_platform_fields(details: dict[str, Any], field: str) -> None:
    for name in sorted(_PLATFORM_FIELDS & details.keys()):
        raise Invalid(
            f"{field}.{name} invalid: set by the platform, not by a request (in the sandbox:"
            " PUT /v2/identity/identities/{id}/sandbox-status)",
            field=f"{field}.{name}",
        )


# Date-time fields of the details, RFC 3339 as the document types them.
_TIMES = {
    "person_details": ("passthrough_verified_at",),
    "institution_details": ("govt_registration_date",),
}


def check_time(value: str | None, field: str) -> None:
    if value is None:
        return
    try:
        parse_time(value)
    except ValueError as exc:
        raise Invalid(f"{field} invalid: not an RFC 3339 time", field=field) from exc


def _check_details(details: dict[str, Any], field: str) -> None:
    _no_platform_fields(details, field)
    for name in _TIMES[field]:
        check_time(details.get(name), f"{field}.{name}")


def _ref_id(ref_id: str | None) -> None:
    if ref_id is not None and not 0 < len(ref_id) <= _MAX_REF_ID:
        raise Invalid(f"ref_id invalid: 1 to {_MAX_REF_ID} characters", field="ref_id")


def _ref_taken(state: State, customer_id: str, ref_id: str, other_than: str = "") -> None:
    for record in identities(state).values():
        if (
            record["customer_id"] == customer_id
            and record.get("ref_id") == ref_id
            and record["id"] != other_than
        ):
            raise AlreadyExists("duplicate ref_id provided", {"id": record["id"]})


def _cip_taken(
    state: State, customer_id: str, details: dict[str, Any], other_than: str = ""
) -> None:
    """(cip_id, cip_id_type, cip_id_country) is unique among the customer's identities."""
    key = (details.get("cip_id"), details.get("cip_id_type"), details.get("cip_id_country"))
    if key[0] is None:
        return
    for record in identities(state).values():
        if record["customer_id"] != customer_id or record["id"] == other_than:
            continue
        theirs = record.get(_DETAILS[record["type"]]) or {}
        if (theirs.get("cip_id"), theirs.get("cip_id_type"), theirs.get("cip_id_country")) == key:
            raise AlreadyExists(
                "duplicate (cip_id, cip_id_type, cip_id_country) provided", {"id": record["id"]}
            )


def _required(details: dict[str, Any], names: tuple[str, ...], field: str) -> None:
    for name in names:
        value = details.get(name)
        if not isinstance(value, str) or not value.strip():
            raise Invalid(f"{field}.{name} is required", field=f"{field}.{name}")


def check_members(
    state: State, customer_id: str, members: Any, field: str, institution_id: str = ""
) -> list[dict[str, Any]]:
    """Institution members as given: each names another identity of the customer and at
    least one role; an id is the platform's to give."""
    if not members:
        raise Invalid(f"{field} invalid: at least one member", field=field)
    seen: set[str] = set()
    checked = []
    for i, member in enumerate(members):
        where = f"{field}[{i}]"
        if member.get("id") is not None:
            raise Invalid(f"{where}.id invalid: given by the platform", field=f"{where}.id")
        for name in ("name", "summary_status"):
            if member.get(name) is not None:
                raise Invalid(f"{where}.{name} invalid: not writable", field=f"{where}.{name}")
        identity_id = member.get("identity_id") or ""
        if not identity_id:
            raise Invalid(f"{where}.identity_id is required", field=f"{where}.identity_id")
        find_identity(state, customer_id, identity_id)
        if identity_id == institution_id:
            raise Invalid(
                f"{where}.identity_id invalid: an institution is not its own member",
                field=f"{where}.identity_id",
            )
        if identity_id in seen:
            raise Invalid(
                f"{where}.identity_id invalid: {identity_id} is named twice",
                field=f"{where}.identity_id",
            )
        seen.add(identity_id)
        if not member.get("roles"):
            raise Invalid(f"{where}.roles invalid: at least one role", field=f"{where}.roles")
        checked.append({k: v for k, v in member.items() if v is not None})
    return checked


# -- decisions ------------------------------------------------------------------------


def create_identity(ctx: Ctx, cmd: CreateIdentity) -> dict[str, Any]:
    state = ctx.state
    customer_id = cmd.actor.customer_id
    person, institution = cmd.person_details, cmd.institution_details
    if (person is None) == (institution is None):
        raise Invalid(
            "person_details or institution_details is required, not both",
            field="person_details" if person is None else "institution_details",
        )
    kind = "PERSON" if person is not None else "INSTITUTION"
    field = _DETAILS[kind]
    details = dict(person if person is not None else institution or {})
    _check_details(details, field)
    _required(details, ("first_name", "last_name") if kind == "PERSON" else ("name",), field)
    metadata = check_metadata(cmd.metadata)
    _ref_id(cmd.ref_id)
    if kind == "PERSON" and cmd.institution_members is not None:
        raise Invalid(
            "institution_members invalid: only an institution has members",
            field="institution_members",
        )
    members = (
        check_members(state, customer_id, cmd.institution_members, "institution_members")
        if kind == "INSTITUTION"
        else None
    )
    if cmd.ref_id is not None:
        _ref_taken(state, customer_id, cmd.ref_id)
    _cip_taken(state, customer_id, details)
    if kind == "PERSON":
        # A passthrough identity was verified by the client: its ID check is done.
        passthrough = details.get("verifier_type") == "PASSTHROUGH"
        details["id_verification_status"] = "APPROVED" if passthrough else "PENDING"
    else:
        details["document_verification_status"] = "PENDING"
    details["sanctions_verification_status"] = "PENDING"
    details["additional_screening_status"] = "PENDING"
    identity_id = ctx.ids.uuid()
    record: dict[str, Any] = {
        "id": identity_id,
        "customer_id": customer_id,
        "type": kind,
        "ref_id": cmd.ref_id,
        "metadata": metadata,
        field: details,
        "institution_members": [{**m, "id": ctx.ids.uuid()} for m in members or []]
        if members is not None
        else None,
        "tax_details": list(cmd.tax_details) if cmd.tax_details is not None else None,
        "tax_details_not_required": cmd.tax_details_not_required,
        "customer_due_diligence": cmd.customer_due_diligence,
        "is_merchant": cmd.is_merchant,
        "user_disabled": False,
        "admin_disabled": False,
        "summary_status": "PENDING",
        "created_at": ctx.now_text,
        "updated_at": ctx.now_text,
    }
    record["summary_status"] = summary_status(record)
    ctx.emit("IdentityCreated", f"identity-{identity_id}", {"identity": record})
    return identity_view(identities(state)[identity_id], state)


def update_identity(ctx: Ctx, cmd: UpdateIdentity) -> dict[str, Any]:
    """A delta: what the request names replaces what the identity has; details merge
    field by field. A changed name is screened again (sanctions back to PENDING)."""
    state = ctx.state
    record = find_identity(state, cmd.actor.customer_id, cmd.identity_id)
    field = _DETAILS[record["type"]]
    other = _DETAILS["PERSON" if record["type"] == "INSTITUTION" else "INSTITUTION"]
    if getattr(cmd, other) is not None:
        raise Invalid(
            f"{other} invalid: changing an {record['type'].lower()} identity to another type"
            " is not supported",
            field=other,
        )
    changes: dict[str, Any] = {}
    given = getattr(cmd, field)
    if given is not None:
        _check_details(given, field)
        merged = {**(record.get(field) or {}), **given}
        _required(
            merged, ("first_name", "last_name") if field == "person_details" else ("name",), field
        )
        _cip_taken(state, record["customer_id"], merged, record["id"])
        renamed = any(
            given.get(n) is not None and given.get(n) != (record.get(field) or {}).get(n)
            for n in ("first_name", "middle_name", "last_name", "name")
        )
        if renamed:
            merged["sanctions_verification_status"] = "PENDING"
        changes[field] = merged
    if cmd.metadata is not None:
        changes["metadata"] = check_metadata(cmd.metadata)
    if cmd.ref_id is not None:
        _ref_id(cmd.ref_id)
        _ref_taken(state, record["customer_id"], cmd.ref_id, record["id"])
        changes["ref_id"] = cmd.ref_id
    if cmd.tax_details is not None:
        changes["tax_details"] = list(cmd.tax_details)
    if cmd.set_tax_details_not_required is not None:
        changes["tax_details_not_required"] = cmd.set_tax_details_not_required
    if cmd.customer_due_diligence is not None:
        changes["customer_due_diligence"] = cmd.customer_due_diligence
    if cmd.is_merchant is not None:
        changes["is_merchant"] = cmd.is_merchant
    if cmd.last_kyc_refresh_date is not None:
        check_time(cmd.last_kyc_refresh_date, "last_kyc_refresh_date")
        changes["last_kyc_refresh_date"] = cmd.last_kyc_refresh_date
    if cmd.set_user_disabled is not None:
        changes["user_disabled"] = cmd.set_user_disabled
    changes = {k: v for k, v in changes.items() if record.get(k) != v}
    if changes:
        ctx.emit(
            "IdentityUpdated",
            f"identity-{record['id']}",
            {"identity_id": record["id"], "changes": changes},
        )
        announce_status(ctx, record)
    return identity_view(record, state)


def set_sandbox_status(ctx: Ctx, cmd: SetIdentitySandboxStatus) -> dict[str, Any]:
    """The sandbox's verdicts: approve (both checks APPROVED), deny, disable; now, or at
    `effective_at` of engine time (a timer: IdentityStatusesScheduled)."""
    state = ctx.state
    record = find_identity(state, cmd.actor.customer_id, cmd.identity_id)
    changes = _status_changes(record, cmd.statuses)
    if cmd.effective_at is not None and cmd.effective_at > ctx.now:
        ctx.emit(
            "IdentityStatusesScheduled",
            f"identity-{record['id']}",
            {
                "identity_id": record["id"],
                "statuses": cmd.statuses,
                "due_at": format_time(cmd.effective_at),
            },
        )
        return {}
    _set_statuses(ctx, record, changes)
    return {}


def _status_changes(record: dict[str, Any], statuses: dict[str, Any]) -> dict[str, Any]:
    """What `statuses` change in the identity, each checked."""
    field = _DETAILS[record["type"]]
    own = set(_all_checks(record["type"]))
    changes: dict[str, Any] = {}
    details = dict(record.get(field) or {})
    for name, value in statuses.items():
        if name in ("user_disabled", "admin_disabled"):
            if value is not None:
                changes[name] = bool(value.get("disabled"))
            continue
        if value is None:
            continue
        if name not in own:
            raise Invalid(
                f"{name} invalid: an identity of type {record['type']} has no {name}",
                field=name,
            )
        if value not in STATUSES:
            raise Invalid(f"{name} invalid: must be one of {', '.join(STATUSES)}", field=name)
        details[name] = value
    if details != (record.get(field) or {}):
        changes[field] = details
    return {k: v for k, v in changes.items() if record.get(k) != v}


def _set_statuses(
    ctx: Ctx, record: dict[str, Any], changes: dict[str, Any], schedule: str | None = None
) -> None:
    if changes or schedule is not None:
        data: dict[str, Any] = {"identity_id": record["id"], "changes": changes}
        if schedule is not None:
            data["schedule"] = schedule
        ctx.emit("IdentityStatusesSet", f"identity-{record['id']}", data)
        announce_status(ctx, record)


def scheduled_statuses(ctx: Ctx, key: str) -> None:
    """The timer of IdentityStatusesScheduled: the statuses, as they change the identity
    now (checked when they were scheduled)."""
    entry = _schedules(ctx.state).get(key)
    if entry is None:
        return
    record = identities(ctx.state)[entry["identity_id"]]
    _set_statuses(ctx, record, _status_changes(record, entry["statuses"]), schedule=key)


def _schedules(state: State) -> dict[str, dict[str, Any]]:
    """Statuses set for later, by the position of the event that scheduled them."""
    return state.ext.setdefault("identity_schedules", {})  # type: ignore[no-any-return]


def _all_checks(kind: str) -> tuple[str, ...]:
    return (PERSON_CHECKS if kind == "PERSON" else INSTITUTION_CHECKS) + OTHER_CHECKS[kind]


def announce_status(ctx: Ctx, record: dict[str, Any]) -> None:
    """Record the summary status the identity's statuses now make, if it moved."""
    new = summary_status(record)
    if new != record["summary_status"]:
        ctx.emit(
            "IdentitySummaryStatusChanged",
            f"identity-{record['id']}",
            {
                "identity_id": record["id"],
                "old_summary_status": record["summary_status"],
                "new_summary_status": new,
            },
        )


# -- appliers -------------------------------------------------------------------------


def mark_identity(state: State, identity_id: str) -> None:
    """The identity's row, and the rows that show its name or status (the institutions
    it is a member of, the accounts it owns)."""
    state.mark("identity", identity_id)
    for record in identities(state).values():
        if any(m["identity_id"] == identity_id for m in record.get("institution_members") or []):
            state.mark("identity", record["id"])
    for account in state.ext.get("identity_accounts", {}).values():
        if account["identity_id"] == identity_id:
            state.mark("identity_account", account["id"])


def _created(state: State, e: Event) -> None:
    record = dict(e.data["identity"])
    record["seq"] = e.position
    identities(state)[record["id"]] = record
    customers = state.ext.setdefault("identity_customers", {})
    customers[record["customer_id"]] = customers.get(record["customer_id"], 0) + 1
    state.mark("identity", record["id"])


def _changed(state: State, e: Event) -> None:
    record = identities(state)[e.data["identity_id"]]
    record.update(e.data["changes"])
    record["updated_at"] = e.occurred_at
    if "schedule" in e.data:
        _schedules(state).pop(e.data["schedule"], None)
    mark_identity(state, record["id"])


def _scheduled(state: State, e: Event) -> None:
    key = str(e.position)
    _schedules(state)[key] = {
        "identity_id": e.data["identity_id"],
        "statuses": e.data["statuses"],
    }
    state.timers.add(parse_time(e.data["due_at"]), "identity_status", key)


def _summary_changed(state: State, e: Event) -> None:
    record = identities(state)[e.data["identity_id"]]
    record["summary_status"] = e.data["new_summary_status"]
    record["updated_at"] = e.occurred_at
    mark_identity(state, record["id"])


def _row(state: State, key: str) -> dict[str, Any] | None:
    r = identities(state).get(key)
    if r is None:
        return None
    return {
        "id": r["id"],
        "customer_id": r["customer_id"],
        "type": r["type"],
        "summary_status": r["summary_status"],
        "ref_id": r.get("ref_id"),
        "created_at": r["created_at"],
        "updated_at": r["updated_at"],
        "seq": r["seq"],
        "body": orjson.dumps(identity_view(r, state)).decode(),
    }


TABLE = ReadModelTable(
    "identities",
    {
        "id": str,
        "customer_id": str,
        "type": str,
        "summary_status": str,
        "ref_id": str,
        "created_at": str,
        "updated_at": str,
        "seq": int,
        "body": str,
    },
    pk=("id",),
    kind="identity",
    row=_row,
    key_columns=("id",),
    keys=lambda s: identities(s).keys(),
)

REGISTRATION = Registration(
    deciders={
        CreateIdentity: create_identity,
        UpdateIdentity: update_identity,
        SetIdentitySandboxStatus: set_sandbox_status,
    },
    appliers={
        "IdentityCreated": _created,
        "IdentityUpdated": _changed,
        "IdentityStatusesSet": _changed,
        "IdentityStatusesScheduled": _scheduled,
        "IdentitySummaryStatusChanged": _summary_changed,
    },
    timers={"identity_status": scheduled_statuses},
    tables=(TABLE,),
)
