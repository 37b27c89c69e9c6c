"""Issue 19: identities (persons and institutions), their documents, institution
members, and the sandbox's verdicts, with the document's shapes, refusals and events."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.identity_helpers import (
    IDENTITIES,
    PERSON,
    approve,
    person,
    put,
    set_status,
)
from tests.support.reference import assert_matches, full_schema

NOW = "2024-01-01T00:00:00.000000Z"


def _institution(sb: Any, members: list[dict[str, Any]], **extra: Any) -> Any:
    body = {
        "institution_details": {"name": "Institution A", "institution_type": "TRUST"},
        "institution_members": members,
        **extra,
    }
    return sb.post(IDENTITIES, body)


def _events(sb: Any, kind: str) -> list[dict[str, Any]]:
    return [e for e in sb.get("/v2/events").json()["events"] if e["type"] == kind]


def test_a_person_is_created_pending_and_shown_without_details_by_default(
    http_sandbox: Any,
) -> None:
    r = http_sandbox.post(
        IDENTITIES, {"person_details": PERSON, "ref_id": "p-1", "metadata": {"k": "v"}}
    )
    assert r.status_code == 200, r.text
    made = r.json()
    assert_matches(made, full_schema("Identity"))
    assert made["type"] == "PERSON" and made["summary_status"] == "PENDING"
    assert made["ref_id"] == "p-1" and made["metadata"] == {"k": "v"}
    assert made["created_at"] == made["updated_at"] == NOW
    details = made["person_details"]
    assert details["first_name"] == "John"
    assert details["id_verification_status"] == "PENDING"
    assert details["sanctions_verification_status"] == "PENDING"
    shown = http_sandbox.get(f"{IDENTITIES}/{made['id']}").json()
    assert "person_details" not in shown and shown["summary_status"] == "PENDING"
    full = http_sandbox.get(f"{IDENTITIES}/{made['id']}", params={"include_details": "true"}).json()
    assert full == made
    assert_matches(http_sandbox.get(IDENTITIES).json(), full_schema("ListIdentitiesResponse"))


def test_a_passthrough_person_has_its_id_verification_done(http_sandbox: Any) -> None:
    made = person(http_sandbox, verifier_type="PASSTHROUGH", passthrough_verifier_type="JUMIO")
    assert made["person_details"]["id_verification_status"] == "APPROVED"
    assert made["summary_status"] == "PENDING"  # sanctions still pending


def test_the_sandbox_approves_denies_and_disables_with_the_feeds_events(sandbox: Any) -> None:
    a, b = person(sandbox)["id"], person(sandbox, first_name="Jane")["id"]
    r = set_status(sandbox, a, sanctions_verification_status="APPROVED")
    assert r.status_code == 200 and r.json() == {}
    assert sandbox.get(f"{IDENTITIES}/{a}").json()["summary_status"] == "PENDING"
    approve(sandbox, a)
    assert sandbox.get(f"{IDENTITIES}/{a}").json()["summary_status"] == "APPROVED"
    set_status(sandbox, b, sanctions_verification_status="DENIED")
    assert sandbox.get(f"{IDENTITIES}/{b}").json()["summary_status"] == "DENIED"
    set_status(sandbox, a, user_disabled={"disabled": True})
    assert sandbox.get(f"{IDENTITIES}/{a}").json()["summary_status"] == "DISABLED"
    approved, denied = _events(sandbox, "identity.approved"), _events(sandbox, "identity.denied")
    disabled = _events(sandbox, "identity.disabled")
    assert [e["object"]["identity_id"] for e in approved] == [a]
    assert approved[0]["object_type"] == "identity_summary_status_change"
    assert approved[0]["object"]["old_summary_status"] == "PENDING"
    assert approved[0]["object"]["new_summary_status"] == "APPROVED"
    assert [e["object"]["identity_id"] for e in denied] == [b]
    assert disabled[0]["object"]["old_summary_status"] == "APPROVED"
    set_status(sandbox, a, user_disabled={"disabled": False})
    assert sandbox.get(f"{IDENTITIES}/{a}").json()["summary_status"] == "APPROVED"
    listed = sandbox.get(IDENTITIES, params={"summary_status": "DENIED"}).json()["items"]
    assert [i["id"] for i in listed] == [b]
    assert sandbox.verify() == []


def test_an_institution_is_approved_by_its_sanctions_check(sandbox: Any) -> None:
    member = person(sandbox)
    r = _institution(sandbox, [{"identity_id": member["id"], "roles": ["TRUSTEE"]}])
    assert r.status_code == 200, r.text
    made = r.json()
    assert_matches(made, full_schema("Identity"))
    assert made["institution_details"]["document_verification_status"] == "PENDING"
    assert made["institution_members"][0]["identity_id"] == member["id"]
    assert made["institution_members"][0]["name"] == "John Doe"
    bad = set_status(sandbox, made["id"], id_verification_status="APPROVED")
    assert bad.status_code == 400 and bad.json()["meta"] == {"field": "id_verification_status"}
    set_status(sandbox, made["id"], sanctions_verification_status="APPROVED")
    shown = sandbox.get(
        f"{IDENTITIES}/{made['id']}", params={"include_institution_members": "true"}
    ).json()
    assert shown["summary_status"] == "APPROVED" and "institution_details" not in shown
    assert shown["institution_members"][0]["summary_status"] == "PENDING"
    approve(sandbox, member["id"])  # the member's status shows on the institution
    shown = sandbox.get(
        f"{IDENTITIES}/{made['id']}", params={"include_institution_members": "true"}
    ).json()
    assert shown["institution_members"][0]["summary_status"] == "APPROVED"
    types = sandbox.get(IDENTITIES, params={"identity_type": "INSTITUTION"}).json()["items"]
    assert [i["id"] for i in types] == [made["id"]]
    assert sandbox.verify() == []


def test_institution_members_are_added_and_removed(http_sandbox: Any) -> None:
    first, second = person(http_sandbox), person(http_sandbox, first_name="Jane")
    institution = _institution(
        http_sandbox, [{"identity_id": first["id"], "roles": ["GRANTOR"]}]
    ).json()
    body = {
        "institution_id": institution["id"],
        "members": [
            {"identity_id": second["id"], "roles": ["BENEFICIAL_OWNER"], "ownership": "30"}
        ],
    }
    r = http_sandbox.post("/v2/identity/institution-members", body)
    assert r.status_code == 200, r.text
    added = r.json()
    assert_matches(added, full_schema("AddInstitutionMembersResponse"))
    assert added["institution_id"] == institution["id"] and added["members"][0]["id"]
    again = http_sandbox.post("/v2/identity/institution-members", body)
    assert again.status_code == 409
    assert again.json()["meta"]["existing"]["id"] == added["members"][0]["id"]
    gone = http_sandbox.delete(f"/v2/identity/institution-members/{added['members'][0]['id']}")
    assert gone.status_code == 200 and gone.json() == {}
    shown = http_sandbox.get(
        f"{IDENTITIES}/{institution['id']}", params={"include_institution_members": "true"}
    ).json()
    assert [m["identity_id"] for m in shown["institution_members"]] == [first["id"]]
    assert (
        http_sandbox.delete(
            f"/v2/identity/institution-members/{added['members'][0]['id']}"
        ).status_code
        == 404
    )
    not_one = http_sandbox.post(
        "/v2/identity/institution-members",
        {
            "institution_id": first["id"],
            "members": [{"identity_id": second["id"], "roles": ["TRUSTEE"]}],
        },
    )
    assert not_one.status_code == 400 and not_one.json()["meta"] == {"field": "institution_id"}


def test_a_reused_ref_id_or_cip_id_is_a_409_naming_the_existing_identity(http_sandbox: Any) -> None:
    cip = {"cip_id": "111-11-1234", "cip_id_type": "SSN", "cip_id_country": "USA"}
    first = http_sandbox.post(
        IDENTITIES, {"person_details": {**PERSON, **cip}, "ref_id": "r"}
    ).json()
    r = http_sandbox.post(IDENTITIES, {"person_details": PERSON, "ref_id": "r"})
    assert r.status_code == 409
    body = r.json()
    assert body["type"] == "https://developer.paxos.com/docs/v2/problems/already-exists"
    assert body["detail"] == "duplicate ref_id provided"
    assert body["meta"] == {"existing": {"id": first["id"]}}
    r = http_sandbox.post(IDENTITIES, {"person_details": {**PERSON, **cip}})
    assert r.status_code == 409
    assert r.json()["detail"] == "duplicate (cip_id, cip_id_type, cip_id_country) provided"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "person_details"),
        ({"person_details": PERSON, "institution_details": {"name": "I"}}, "institution_details"),
        ({"person_details": {**PERSON, "first_name": "J<o>hn"}}, "person_details.first_name"),
        ({"person_details": {**PERSON, "nationality": "us"}}, "person_details.nationality"),
        ({"person_details": {**PERSON, "date_of_birth": "1/1/80"}}, "person_details.date_of_birth"),
        ({"person_details": {"last_name": "Doe"}}, "person_details.first_name"),
        (
            {"person_details": {**PERSON, "id_verification_status": "APPROVED"}},
            "person_details.id_verification_status",
        ),
        ({"person_details": {**PERSON, "verifier_type": "ROBOT"}}, "person_details.verifier_type"),
        ({"institution_details": {"name": "I"}}, "institution_members"),
        ({"person_details": PERSON, "metadata": {str(i): "v" for i in range(7)}}, "metadata"),
        (
            {"person_details": {**PERSON, "passthrough_verified_at": "yesterday"}},
            "person_details.passthrough_verified_at",
        ),
    ],
)
def test_bad_input_names_the_field(http_sandbox: Any, body: dict[str, Any], field: str) -> None:
    r = http_sandbox.post(IDENTITIES, body)
    assert r.status_code == 400, r.text
    assert r.json()["meta"] == {"field": field}


def test_an_update_is_a_delta_and_a_new_name_is_screened_again(sandbox: Any) -> None:
    made = person(sandbox)
    approve(sandbox, made["id"])
    sandbox.advance(5)
    r = put(sandbox, f"{IDENTITIES}/{made['id']}", {"person_details": {"email": "j@example.org"}})
    assert r.status_code == 200, r.text
    updated = r.json()
    assert_matches(updated, full_schema("Identity"))
    assert updated["person_details"]["email"] == "j@example.org"
    assert updated["person_details"]["first_name"] == "John"
    assert updated["summary_status"] == "APPROVED"
    assert updated["updated_at"] == "2024-01-01T00:00:05.000000Z"
    renamed = put(sandbox, f"{IDENTITIES}/{made['id']}", {"person_details": {"last_name": "Roe"}})
    assert renamed.json()["person_details"]["sanctions_verification_status"] == "PENDING"
    assert renamed.json()["summary_status"] == "PENDING"
    disabled = put(sandbox, f"{IDENTITIES}/{made['id']}", {"set_user_disabled": True}).json()
    assert disabled["summary_status"] == "DISABLED" and disabled["user_disabled"] is True
    assert len(_events(sandbox, "identity.disabled")) == 1
    late = put(sandbox, f"{IDENTITIES}/{made['id']}", {"last_kyc_refresh_date": "soon"})
    assert late.status_code == 400 and late.json()["meta"] == {"field": "last_kyc_refresh_date"}
    other = put(sandbox, f"{IDENTITIES}/{made['id']}", {"institution_details": {"name": "I"}})
    assert other.status_code == 400 and other.json()["meta"] == {"field": "institution_details"}
    second = person(sandbox, first_name="Jane")
    put(sandbox, f"{IDENTITIES}/{second['id']}", {"ref_id": "taken"})
    clash = put(sandbox, f"{IDENTITIES}/{made['id']}", {"ref_id": "taken"})
    assert clash.status_code == 409 and clash.json()["meta"] == {"existing": {"id": second["id"]}}
    assert sandbox.verify() == []


def test_documents_are_kept_as_metadata(http_sandbox: Any) -> None:
    made = person(http_sandbox)
    path = f"{IDENTITIES}/{made['id']}/documents"
    http_sandbox.advance(2)
    r = put(
        http_sandbox,
        path,
        {"name": "Proof_of_residence.jpg", "document_types": ["PROOF_OF_RESIDENCY"]},
    )
    assert r.status_code == 200, r.text
    upload = r.json()
    assert_matches(upload, full_schema("DocumentUploadResponse"))
    assert upload["name"] == "Proof_of_residence.jpg"
    assert upload["upload_url"].endswith(upload["file_id"]) and ".invalid/" in upload["upload_url"]
    again = put(http_sandbox, path, {"name": "Proof_of_residence.jpg"})
    assert again.status_code == 409
    assert again.json()["detail"] == 'file named "Proof_of_residence.jpg" already exists'
    assert again.json()["meta"] == {"existing": {"name": "Proof_of_residence.jpg"}}
    assert put(http_sandbox, path, {"name": "x" * 261}).json()["meta"] == {"field": "name"}
    listed = http_sandbox.get(path, params={"include_pending_docs": "true"}).json()
    assert_matches(listed, full_schema("ListIdentityDocumentsResponse"))
    assert listed == {
        "documents": [
            {
                "file_id": upload["file_id"],
                "name": "Proof_of_residence.jpg",
                "document_types": ["PROOF_OF_RESIDENCY"],
                "created_at": "2024-01-01T00:00:02.000000Z",
            }
        ],
        "pending_documents": [],
    }
    assert http_sandbox.get(f"{IDENTITIES}/nope/documents").status_code == 404


def test_another_customers_identities_are_not_found(http_sandbox: Any) -> None:
    mine = person(http_sandbox)
    intruder, _ = http_sandbox.tenant()
    theirs = person(http_sandbox, headers=intruder)
    assert http_sandbox.get(f"{IDENTITIES}/{mine['id']}", headers=intruder).status_code == 404
    assert [i["id"] for i in http_sandbox.get(IDENTITIES, headers=intruder).json()["items"]] == [
        theirs["id"]
    ]
    for r in (
        put(http_sandbox, f"{IDENTITIES}/{mine['id']}", {"metadata": {}}, intruder),
        set_status(http_sandbox, mine["id"], intruder, sanctions_verification_status="APPROVED"),
        put(http_sandbox, f"{IDENTITIES}/{mine['id']}/documents", {"name": "a.pdf"}, intruder),
        http_sandbox.get(f"{IDENTITIES}/{mine['id']}/documents", headers=intruder),
        # a member of another customer's
        _institution(http_sandbox, [{"identity_id": theirs["id"], "roles": ["TRUSTEE"]}]),
    ):
        assert r.status_code == 404, r.text
    assert http_sandbox.get(f"{IDENTITIES}/{mine['id']}").json()["summary_status"] == "PENDING"


def test_a_client_without_the_identity_scopes_is_refused(http_sandbox: Any) -> None:
    narrow = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="exchange:read_order"
    )
    assert http_sandbox.get(IDENTITIES, headers=narrow).status_code == 403
    assert (
        http_sandbox.post(IDENTITIES, {"person_details": PERSON}, headers=narrow).status_code == 403
    )
    reader = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="identity:read_identity"
    )
    assert http_sandbox.get(IDENTITIES, headers=reader).status_code == 200
    assert (
        http_sandbox.post(IDENTITIES, {"person_details": PERSON}, headers=reader).status_code == 403
    )


def test_identities_survive_a_restart(sandbox_factory: Any) -> None:
    sb = sandbox_factory("restart.db")
    made = person(sb)
    approve(sb, made["id"])
    before = sb.get(f"{IDENTITIES}/{made['id']}", params={"include_details": "true"}).json()
    sb.close()
    sb = sandbox_factory("restart.db")
    after = sb.get(f"{IDENTITIES}/{made['id']}", params={"include_details": "true"}).json()
    assert after == before and after["summary_status"] == "APPROVED"
    approve_again = set_status(sb, made["id"], sanctions_verification_status="ERROR")
    assert approve_again.status_code == 200
    assert sb.get(f"{IDENTITIES}/{made['id']}").json()["summary_status"] == "ERROR"


def test_an_empty_optional_address_line_is_a_line_left_out(http_sandbox: Any) -> None:
    address = {**PERSON["address"], "address2": "", "zip_code": ""}  # type: ignore[dict-item]
    made = person(http_sandbox, address=address)
    assert made["person_details"]["address"] == {
        k: v for k, v in address.items() if k not in ("address2", "zip_code")
    }
    r = http_sandbox.post(
        IDENTITIES, {"person_details": {**PERSON, "address": {**address, "city": ""}}}
    )
    assert r.status_code == 400 and r.json()["meta"] == {"field": "person_details.address.city"}
