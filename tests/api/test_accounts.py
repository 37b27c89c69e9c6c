"""Issue 19: accounts (an identity's tie to a profile) and their members, with the
document's shapes, its member rules and its refusals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.identity_helpers import ACCOUNTS, account, approve, person, put
from tests.support.reference import assert_matches, full_schema

MEMBERS = "/v2/identity/account-members"


def test_an_account_is_created_with_members_and_shown(sandbox: Any) -> None:
    owner, joint = person(sandbox), person(sandbox, first_name="Jane")
    made = account(
        sandbox,
        owner["id"],
        [{"identity_id": joint["id"], "roles": ["BENEFICIAL_OWNER"]}],
        ref_id="acct-1",
        description="joint account",
        metadata={"k": "v"},
    )
    assert_matches(made, full_schema("Account"))
    assert made["identity_id"] == owner["id"] and made["ref_id"] == "acct-1"
    assert made["members"][0]["identity_id"] == joint["id"] and made["members"][0]["id"]
    assert made["summary_status"] == "PENDING" and made["type"] == "BROKERAGE"
    assert made["user_disabled"] is False and "profile_id" not in made
    assert sandbox.get(f"{ACCOUNTS}/{made['id']}").json() == made
    approve(sandbox, owner["id"])  # the account shows its owner's status
    assert sandbox.get(f"{ACCOUNTS}/{made['id']}").json()["summary_status"] == "APPROVED"
    listed = sandbox.get(ACCOUNTS).json()
    assert_matches(listed, full_schema("ListAccountsResponse"))
    other = account(sandbox, joint["id"])
    mine = sandbox.get(ACCOUNTS, params={"identity_id": joint["id"]}).json()["items"]
    assert [a["id"] for a in mine] == [other["id"]]
    assert [a["id"] for a in sandbox.get(ACCOUNTS, params={"order": "ASC"}).json()["items"]] == [
        made["id"],
        other["id"],
    ]
    assert sandbox.verify() == []


def test_create_profile_gives_the_account_a_profile(http_sandbox: Any) -> None:
    owner = person(http_sandbox)
    r = http_sandbox.post(
        ACCOUNTS, {"account": {"identity_id": owner["id"]}, "create_profile": True}
    )
    assert r.status_code == 200, r.text
    made = r.json()
    profile = http_sandbox.get(f"/v2/profiles/{made['profile_id']}").json()
    assert profile["type"] == "NORMAL"
    http_sandbox.deposit("USD", "10", profile=made["profile_id"])
    assert http_sandbox.balance("USD", profile=made["profile_id"])["available"] == "10"


def test_a_reused_ref_id_is_a_409_with_the_existing_account(http_sandbox: Any) -> None:
    owner = person(http_sandbox)
    first = account(http_sandbox, owner["id"], ref_id="r")
    r = http_sandbox.post(ACCOUNTS, {"account": {"identity_id": owner["id"], "ref_id": "r"}})
    assert r.status_code == 409
    assert r.json()["detail"] == "account already exists with ref_id 'r'"
    assert r.json()["meta"]["existing"]["id"] == first["id"]


def _member(identity_id: str, *roles: str, **extra: Any) -> dict[str, Any]:
    return {"identity_id": identity_id, "roles": list(roles), **extra}


# (the account of a create request, given its owner's id; the field its 400 names)
BAD_ACCOUNTS: list[tuple[Callable[[str], dict[str, Any]], str]] = [
    (lambda owner: {}, "account.identity_id"),
    (lambda owner: {"identity_id": owner, "id": "x"}, "account.id"),
    (lambda owner: {"identity_id": owner, "user_disabled": True}, "account.user_disabled"),
    (lambda owner: {"identity_id": owner, "members": []}, "account.members"),
    (lambda owner: {"identity_id": owner, "members": [_member(owner)]}, "account.members[0].roles"),
    (
        lambda owner: {"identity_id": owner, "members": [_member(owner, "BOSS")]},
        "account.members[0].roles[0]",
    ),
    (
        lambda owner: {
            "identity_id": owner,
            "members": [_member(owner, "AUTHORIZED_USER", id="m")],
        },
        "account.members[0].id",
    ),
]


@pytest.mark.parametrize(("make", "field"), BAD_ACCOUNTS)
def test_bad_input_names_the_field(
    http_sandbox: Any, make: Callable[[str], dict[str, Any]], field: str
) -> None:
    r = http_sandbox.post(ACCOUNTS, {"account": make(person(http_sandbox)["id"])})
    assert r.status_code == 400, r.text
    assert r.json()["meta"] == {"field": field}


def test_an_unknown_owner_is_not_found(http_sandbox: Any) -> None:
    r = http_sandbox.post(ACCOUNTS, {"account": {"identity_id": "nope"}})
    assert r.status_code == 404 and r.json()["detail"] == "identity not found with id nope"


def test_an_update_replaces_what_it_names_and_may_only_change_the_lesser_roles(
    sandbox: Any,
) -> None:
    owner, joint, adviser = (person(sandbox, first_name=n) for n in ("John", "Jane", "Ann"))
    joint_member = {"identity_id": joint["id"], "roles": ["BENEFICIAL_OWNER"]}
    made = account(sandbox, owner["id"], [joint_member])
    sandbox.advance(3)
    with_adviser = [joint_member, {"identity_id": adviser["id"], "roles": ["FINANCIAL_ADVISOR"]}]
    r = put(
        sandbox,
        ACCOUNTS,
        {"account": {"id": made["id"], "description": "d", "members": with_adviser}},
    )
    assert r.status_code == 200, r.text
    updated = r.json()
    assert_matches(updated, full_schema("Account"))
    assert updated["description"] == "d" and updated["updated_at"] == "2024-01-01T00:00:03.000000Z"
    assert updated["members"][0]["id"] == made["members"][0]["id"]  # the same member kept
    assert [m["roles"] for m in updated["members"]] == [["BENEFICIAL_OWNER"], ["FINANCIAL_ADVISOR"]]
    dropped = put(sandbox, ACCOUNTS, {"account": {"id": made["id"], "members": with_adviser[1:]}})
    assert dropped.status_code == 400 and dropped.json()["meta"] == {"field": "account.members"}
    disabled = put(sandbox, ACCOUNTS, {"account": {"id": made["id"]}, "set_user_disabled": True})
    assert (
        disabled.json()["user_disabled"] is True and disabled.json()["summary_status"] == "DISABLED"
    )
    no_id = put(sandbox, ACCOUNTS, {"account": {"description": "x"}})
    assert no_id.status_code == 400 and no_id.json()["meta"] == {"field": "account.id"}
    owner_change = put(
        sandbox, ACCOUNTS, {"account": {"id": made["id"], "identity_id": joint["id"]}}
    )
    assert owner_change.json()["meta"] == {"field": "account.identity_id"}
    assert sandbox.verify() == []


def test_members_are_added_and_removed_one_by_one(sandbox: Any) -> None:
    owner, user = person(sandbox), person(sandbox, first_name="Jane")
    made = account(sandbox, owner["id"])
    body = {
        "account_id": made["id"],
        "members": [{"identity_id": user["id"], "roles": ["AUTHORIZED_USER"]}],
    }
    r = sandbox.post(MEMBERS, body)
    assert r.status_code == 200, r.text
    added = r.json()
    assert_matches(added, full_schema("AddAccountMembersResponse"))
    assert added["account_id"] == made["id"]
    member_id = added["members"][0]["id"]
    again = sandbox.post(MEMBERS, body)
    assert again.status_code == 409 and again.json()["meta"]["existing"]["id"] == member_id
    shown = sandbox.get(f"{ACCOUNTS}/{made['id']}").json()
    assert [m["id"] for m in shown["members"]] == [member_id]
    gone = sandbox.delete(f"{MEMBERS}/{member_id}")
    assert gone.status_code == 200 and gone.json() == {}
    assert sandbox.get(f"{ACCOUNTS}/{made['id']}").json()["members"] == []
    assert sandbox.delete(f"{MEMBERS}/{member_id}").status_code == 404
    unknown = sandbox.post(MEMBERS, {"account_id": "nope", "members": body["members"]})
    assert unknown.status_code == 404
    assert sandbox.verify() == []


def test_another_customers_accounts_and_members_are_not_found(http_sandbox: Any) -> None:
    owner, user = person(http_sandbox), person(http_sandbox, first_name="Jane")
    made = account(
        http_sandbox, owner["id"], [{"identity_id": user["id"], "roles": ["AUTHORIZED_USER"]}]
    )
    intruder, _ = http_sandbox.tenant()
    theirs = person(http_sandbox, headers=intruder)
    assert http_sandbox.get(f"{ACCOUNTS}/{made['id']}", headers=intruder).status_code == 404
    assert http_sandbox.get(ACCOUNTS, headers=intruder).json()["items"] == []
    for r in (
        put(http_sandbox, ACCOUNTS, {"account": {"id": made["id"], "description": "x"}}, intruder),
        http_sandbox.post(
            MEMBERS,
            {
                "account_id": made["id"],
                "members": [{"identity_id": theirs["id"], "roles": ["AUTHORIZED_USER"]}],
            },
            headers=intruder,
        ),
        http_sandbox.delete(f"{MEMBERS}/{made['members'][0]['id']}", headers=intruder),
        # an account for another customer's identity, or naming one as a member
        http_sandbox.post(ACCOUNTS, {"account": {"identity_id": owner["id"]}}, headers=intruder),
        http_sandbox.post(
            ACCOUNTS,
            {
                "account": {
                    "identity_id": owner["id"],
                    "members": [{"identity_id": theirs["id"], "roles": ["AUTHORIZED_USER"]}],
                }
            },
        ),
    ):
        assert r.status_code == 404, r.text
    assert len(http_sandbox.get(f"{ACCOUNTS}/{made['id']}").json()["members"]) == 1


def test_a_client_without_the_account_scopes_is_refused(http_sandbox: Any) -> None:
    owner = person(http_sandbox)
    narrow = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="identity:read_identity"
    )
    assert http_sandbox.get(ACCOUNTS, headers=narrow).status_code == 403
    r = http_sandbox.post(ACCOUNTS, {"account": {"identity_id": owner["id"]}}, headers=narrow)
    assert r.status_code == 403
