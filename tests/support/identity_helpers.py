"""Identities and accounts made through the API, for the tests of issue 19's identity
area and of the rule that an identity acts for an account only when allowed to."""

from __future__ import annotations

from typing import Any

IDENTITIES = "/v2/identity/identities"
ACCOUNTS = "/v2/identity/accounts"
PERSON = {
    "first_name": "John",
    "last_name": "Doe",
    "date_of_birth": "1980-01-01",
    "nationality": "USA",
    "address": {
        "country": "USA",
        "address1": "1 Example St",
        "city": "New York",
        "province": "NY",
        "zip_code": "10001",
    },
}


def put(sb: Any, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
    return sb.http.put(path, json=body, headers=headers or sb.headers)


def person(sb: Any, headers: dict[str, str] | None = None, **details: Any) -> dict[str, Any]:
    """A new PENDING person identity."""
    r = sb.post(
        IDENTITIES, {"person_details": {**PERSON, **details}}, headers=headers or sb.headers
    )
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def set_status(
    sb: Any, identity_id: str, headers: dict[str, str] | None = None, **statuses: Any
) -> Any:
    return put(sb, f"{IDENTITIES}/{identity_id}/sandbox-status", statuses, headers)


def approve(sb: Any, identity_id: str, headers: dict[str, str] | None = None) -> None:
    """The sandbox's approval: both checks of a person APPROVED."""
    r = set_status(
        sb,
        identity_id,
        headers,
        id_verification_status="APPROVED",
        sanctions_verification_status="APPROVED",
    )
    assert r.status_code == 200, r.text


def account(
    sb: Any,
    owner_id: str,
    members: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
    **fields: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"account": {"identity_id": owner_id, **fields}}
    if members is not None:
        body["account"]["members"] = members
    r = sb.post(ACCOUNTS, body, headers=headers or sb.headers)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def approved_account(sb: Any, headers: dict[str, str] | None = None) -> tuple[str, str]:
    """(identity id, account id): an approved person owning an account."""
    owner = person(sb, headers)
    approve(sb, owner["id"], headers)
    return owner["id"], account(sb, owner["id"], headers=headers)["id"]
