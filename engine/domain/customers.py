"""Customers, their API clients and their profiles."""

from __future__ import annotations

import hashlib
import hmac
from decimal import Decimal
from typing import Any

import orjson

from sandex.engine.config.settings import (
    ALL_SCOPES,
    BOOTSTRAP_SCOPES,
    CUSTOMER_SCOPES,
    KNOWN_SCOPES,
    SELF_MATCH_PREVENTION,
)
from sandex.engine.domain.ledger import available, converting, trading, withdrawing
from sandex.engine.kernel.commands import (
    CreateCustomer,
    CreateProfile,
    DeactivateProfile,
    RevokeClient,
    UpdateProfile,
)
from sandex.engine.kernel.errors import AlreadyExists, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.money import ASSETS, format_normal
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

_HASH_ROUNDS = 20_000
PROFILE_TYPES = ("NORMAL", "DEFAULT")


def hash_secret(secret: str, salt: str) -> str:
    return hashlib.pbkdf2_hmac("sha256", secret.encode(), salt.encode(), _HASH_ROUNDS).hex()


def secret_matches(secret: str, salt: str, expected_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret, salt), expected_hash)


def profile_view(profile: dict[str, Any]) -> dict[str, Any]:
    view = {"id": profile["id"], "nickname": profile["nickname"], "type": profile["type"]}
    if profile.get("description") is not None:
        view["description"] = profile["description"]
    return view


def resolve_profile(state: State, customer_id: str, profile_id: str) -> dict[str, Any]:
    """The caller's profile by id or the `default` alias; another customer's is 'not found'."""
    if profile_id == "default":
        pid = state.customers.get(customer_id, {}).get("default_profile_id")
        profile = state.profiles.get(pid) if pid else None
    else:
        profile = state.profiles.get(profile_id)
    if profile is None or profile["customer_id"] != customer_id:
        raise NotFound(f"profile not found with id {profile_id}")
    return profile


def active_profile(
    state: State, customer_id: str, profile_id: str, field: str = "profile_id"
) -> dict[str, Any]:
    """`resolve_profile` for an operation that moves funds or trades: a deactivated
    profile refuses orders and transfers until it is active again."""
    profile = resolve_profile(state, customer_id, profile_id)
    if profile.get("deactivated"):
        raise Invalid(
            f"{field} invalid: profile {profile['id']} is deactivated",
            meta={"field": field, "profile_id": profile["id"]},
        )
    return profile


def profile_holdings(state: State, profile_id: str) -> dict[str, str]:
    """What the profile holds, by asset: available, held for orders and withdrawals, and
    debited for conversions not yet settled."""
    ledger = state.ledger
    held: dict[str, Decimal] = {}
    for asset in ASSETS:
        accounts = (available, trading, withdrawing, converting)
        for account in (owned(profile_id) for owned in accounts):
            amount = ledger.balance(account, asset)
            if amount:
                held[asset] = held.get(asset, Decimal(0)) + amount
    return {asset: format_normal(amount) for asset, amount in held.items()}


# -- decisions ----------------------------------------------------------------------


def create_customer(ctx: Ctx, cmd: CreateCustomer) -> dict[str, Any]:
    state = ctx.state
    client_id = cmd.client_id or ctx.ids.uuid()
    if client_id in state.clients:
        raise AlreadyExists(
            f"client already exists with id '{client_id}'", {"client_id": client_id}
        )
    unknown = [s for s in cmd.scopes if s not in KNOWN_SCOPES]
    if unknown:
        raise Invalid(f"scopes invalid: unknown scope {unknown[0]}", field="scopes")
    if cmd.scopes:
        scopes = cmd.scopes
    elif cmd.bootstrap:
        scopes = ALL_SCOPES if ctx.settings.bootstrap_self_match_prevention else BOOTSTRAP_SCOPES
    else:
        scopes = CUSTOMER_SCOPES
    if cmd.self_match_prevention and SELF_MATCH_PREVENTION not in scopes:
        scopes = (*scopes, SELF_MATCH_PREVENTION)
    # From the OS, not the seeded ids: a tenant who knows the seed must learn nothing.
    secret = cmd.client_secret or ctx.secrets.token(40)
    salt = ctx.secrets.salt()
    customer_id = ctx.ids.uuid()
    profile_id = ctx.ids.uuid()
    created: dict[str, Any] = {"customer_id": customer_id, "bootstrap": cmd.bootstrap}
    if cmd.identity_labels or (cmd.bootstrap and ctx.settings.bootstrap_identity_labels):
        created["identity_labels"] = True  # only when set: other customers' events unchanged
    ctx.emit("CustomerCreated", f"customer-{customer_id}", created)
    ctx.emit(
        "ClientCreated",
        f"client-{client_id}",
        {
            "client_id": client_id,
            "customer_id": customer_id,
            "salt": salt,
            "secret_hash": hash_secret(secret, salt),
            "scopes": list(scopes),
        },
    )
    ctx.emit(
        "ProfileCreated",
        f"profile-{profile_id}",
        {
            "profile_id": profile_id,
            "customer_id": customer_id,
            "nickname": "default",
            "type": "DEFAULT",
            "description": None,
        },
    )
    return {
        "customer_id": customer_id,
        "client_id": client_id,
        "client_secret": secret,
        "profile_id": profile_id,
    }


def revoke_client(ctx: Ctx, cmd: RevokeClient) -> dict[str, Any]:
    client = ctx.state.clients.get(cmd.client_id)
    if client is None:
        raise NotFound(f"client not found with id {cmd.client_id}")
    if not client["revoked"]:
        ctx.emit("ClientRevoked", f"client-{cmd.client_id}", {"client_id": cmd.client_id})
    return {"client_id": cmd.client_id, "revoked": True}


def _check_nickname(nickname: str) -> None:
    if not nickname or not nickname.strip():
        raise Invalid("nickname invalid: must not be empty", field="nickname")
    if len(nickname) > 100:
        raise Invalid("nickname invalid: at most 100 characters", field="nickname")


def _nickname_taken(state: State, customer: dict[str, Any], nickname: str) -> None:
    for pid in customer["profile_ids"]:
        existing = state.profiles[pid]
        if existing["nickname"] == nickname:
            raise AlreadyExists(
                f"profile already exists with nickname '{nickname}'", profile_view(existing)
            )


def create_profile(ctx: Ctx, cmd: CreateProfile) -> dict[str, Any]:
    state = ctx.state
    nickname = cmd.nickname
    _check_nickname(nickname)
    if cmd.description is not None and len(cmd.description) > 1000:
        raise Invalid("description invalid: at most 1000 characters", field="description")
    customer = state.customers.get(cmd.actor.customer_id)
    if customer is None:
        raise NotFound(f"customer not found with id {cmd.actor.customer_id}")
    _nickname_taken(state, customer, nickname)
    profile_id = ctx.ids.uuid()
    ctx.emit(
        "ProfileCreated",
        f"profile-{profile_id}",
        {
            "profile_id": profile_id,
            "customer_id": customer["id"],
            "nickname": nickname,
            "type": "NORMAL",
            "description": cmd.description,
        },
    )
    return profile_view(state.profiles[profile_id])


def update_profile(ctx: Ctx, cmd: UpdateProfile) -> dict[str, Any]:
    """A new nickname; unique among the customer's profiles as at creation. The same
    nickname again changes nothing and records nothing."""
    state = ctx.state
    profile = resolve_profile(state, cmd.actor.customer_id, cmd.profile_id)
    _check_nickname(cmd.nickname)
    if profile["nickname"] != cmd.nickname:
        _nickname_taken(state, state.customers[profile["customer_id"]], cmd.nickname)
        ctx.emit(
            "ProfileUpdated",
            f"profile-{profile['id']}",
            {"profile_id": profile["id"], "nickname": cmd.nickname},
        )
    return profile_view(profile)


def deactivate_profile(ctx: Ctx, cmd: DeactivateProfile) -> dict[str, Any]:
    """The service's rules: never the DEFAULT profile, never one that holds anything
    (available, or held for orders or withdrawals). Deactivating twice is a no-op."""
    state = ctx.state
    profile = resolve_profile(state, cmd.actor.customer_id, cmd.profile_id)
    if profile["type"] == "DEFAULT":
        raise Invalid(
            "profile_id invalid: the default profile cannot be deactivated",
            meta={"field": "profile_id", "profile_id": profile["id"]},
        )
    holdings = profile_holdings(state, profile["id"])
    if holdings:
        raise Invalid(
            f"profile_id invalid: profile {profile['id']} has a non-zero balance"
            " and cannot be deactivated",
            meta={"field": "profile_id", "profile_id": profile["id"], "balances": holdings},
        )
    if not profile.get("deactivated"):
        ctx.emit("ProfileDeactivated", f"profile-{profile['id']}", {"profile_id": profile["id"]})
    return {}


# -- appliers -------------------------------------------------------------------------


def _customer_created(state: State, e: Event) -> None:
    cid = e.data["customer_id"]
    state.customers[cid] = {
        "id": cid,
        "created_at": e.occurred_at,
        "profile_ids": [],
        "default_profile_id": None,
        "bootstrap": e.data.get("bootstrap", False),
        "identity_labels": e.data.get("identity_labels", False),
    }
    state.mark("customer", cid)


def _client_created(state: State, e: Event) -> None:
    d = e.data
    state.clients[d["client_id"]] = {
        "client_id": d["client_id"],
        "customer_id": d["customer_id"],
        "salt": d["salt"],
        "secret_hash": d["secret_hash"],
        "scopes": tuple(d["scopes"]),
        "revoked": False,
        "created_at": e.occurred_at,
    }
    state.mark("client", d["client_id"])


def _client_revoked(state: State, e: Event) -> None:
    state.clients[e.data["client_id"]]["revoked"] = True
    state.mark("client", e.data["client_id"])


def _profile_created(state: State, e: Event) -> None:
    d = e.data
    pid = d["profile_id"]
    state.profiles[pid] = {
        "id": pid,
        "customer_id": d["customer_id"],
        "nickname": d["nickname"],
        "type": d["type"],
        "description": d.get("description"),
        "created_at": e.occurred_at,
        "seq": e.position,
    }
    customer = state.customers[d["customer_id"]]
    customer["profile_ids"].append(pid)
    if d["type"] == "DEFAULT":
        customer["default_profile_id"] = pid
    state.mark("profile", pid)


def _profile_updated(state: State, e: Event) -> None:
    state.profiles[e.data["profile_id"]]["nickname"] = e.data["nickname"]
    state.mark("profile", e.data["profile_id"])


def _profile_deactivated(state: State, e: Event) -> None:
    profile = state.profiles[e.data["profile_id"]]
    profile["deactivated"] = True
    profile["deactivated_at"] = e.occurred_at
    state.mark("profile", e.data["profile_id"])
    state.mark("deactivated_profile", e.data["profile_id"])


DECIDERS = {
    CreateCustomer: create_customer,
    RevokeClient: revoke_client,
    CreateProfile: create_profile,
    UpdateProfile: update_profile,
    DeactivateProfile: deactivate_profile,
}

APPLIERS = {
    "CustomerCreated": _customer_created,
    "ClientCreated": _client_created,
    "ClientRevoked": _client_revoked,
    "ProfileCreated": _profile_created,
    "ProfileUpdated": _profile_updated,
    "ProfileDeactivated": _profile_deactivated,
}


def _customer_row(state: State, key: str) -> dict[str, Any] | None:
    c = state.customers.get(key)
    if c is None:
        return None
    return {"id": c["id"], "created_at": c["created_at"], "bootstrap": int(bool(c["bootstrap"]))}


def _client_row(state: State, key: str) -> dict[str, Any] | None:
    c = state.clients.get(key)
    if c is None:
        return None
    return {
        "client_id": c["client_id"],
        "customer_id": c["customer_id"],
        "salt": c["salt"],
        "secret_hash": c["secret_hash"],
        "scopes": " ".join(c["scopes"]),
        "revoked": int(c["revoked"]),
        "created_at": c["created_at"],
    }


def _profile_row(state: State, key: str) -> dict[str, Any] | None:
    p = state.profiles.get(key)
    if p is None:
        return None
    return {
        "id": p["id"],
        "customer_id": p["customer_id"],
        "nickname": p["nickname"],
        "type": p["type"],
        "created_at": p["created_at"],
        "seq": p["seq"],
        "body": orjson.dumps(profile_view(p)).decode(),
    }


def _deactivated_row(state: State, key: str) -> dict[str, Any] | None:
    p = state.profiles.get(key)
    if p is None or not p.get("deactivated"):
        return None
    return {"profile_id": p["id"], "customer_id": p["customer_id"], "at": p["deactivated_at"]}


TABLES = (
    ReadModelTable(
        "customers",
        {"id": str, "created_at": str, "bootstrap": int},
        pk=("id",),
        kind="customer",
        row=_customer_row,
        key_columns=("id",),
        keys=lambda s: s.customers.keys(),
    ),
    ReadModelTable(
        "clients",
        {
            "client_id": str,
            "customer_id": str,
            "salt": str,
            "secret_hash": str,
            "scopes": str,
            "revoked": int,
            "created_at": str,
        },
        pk=("client_id",),
        kind="client",
        row=_client_row,
        key_columns=("client_id",),
        keys=lambda s: s.clients.keys(),
    ),
    ReadModelTable(
        "profiles",
        {
            "id": str,
            "customer_id": str,
            "nickname": str,
            "type": str,
            "created_at": str,
            "seq": int,
            "body": str,
        },
        pk=("id",),
        kind="profile",
        row=_profile_row,
        key_columns=("id",),
        keys=lambda s: s.profiles.keys(),
    ),
    # Its own table, not a column of `profiles`: a database written before it opens
    # with the table added and nothing to migrate.
    ReadModelTable(
        "deactivated_profiles",
        {"profile_id": str, "customer_id": str, "at": str},
        pk=("profile_id",),
        kind="deactivated_profile",
        row=_deactivated_row,
        key_columns=("profile_id",),
        keys=lambda s: [k for k, p in s.profiles.items() if p.get("deactivated")],
    ),
)
REGISTRATION = Registration(DECIDERS, APPLIERS, tables=TABLES)
