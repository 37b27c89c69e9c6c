"""Fiat accounts and fiat withdrawals to them (engine/domain/transfers/fiat_accounts.py,
fiat_withdrawals.py): the document's shapes, the bank checks, the review on the engine
clock, the hold, its fee and its end, tenancy-free refusals (tenancy is walked in
tests/system/test_security.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.identity_helpers import approved_account, person
from tests.support.reference import assert_matches, full_schema
from tests.support.transfer_helpers import PERSON, PROBLEMS, WIRE
from tests.support.webhook_receivers import LOCAL, Receiver, opened, start_deliverer, wait

ACCOUNTS = "/v2/transfer/fiat-accounts"
WITHDRAWALS = "/v2/transfer/fiat-withdrawals"
REVIEW = 5  # seconds, the default fiat_account_review_seconds
SETTLE = 60  # seconds, the default fiat_withdrawal_seconds
CUBIX_ID = "caa82b32-8abd-4899-afdc-f9d4bf9b4e98"


def _wire(**changes: Any) -> dict[str, Any]:
    wire = json.loads(json.dumps(WIRE))
    routing = changes.pop("routing", None)
    if routing:
        wire["routing_details"].update(routing)
    wire.update(changes)
    return wire


def _create(sb: Any, instructions: dict[str, Any] | None = None, **kw: Any) -> Any:
    body = {
        "fiat_account_owner": kw.pop("owner", PERSON),
        "fiat_network_instructions": instructions or {"wire": WIRE},
        **kw,
    }
    return sb.post(ACCOUNTS, body)


def _account(sb: Any, instructions: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    r = _create(sb, instructions, **kw)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _approved(sb: Any, instructions: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    made = _account(sb, instructions, **kw)
    sb.advance(REVIEW)
    got = sb.get(f"{ACCOUNTS}/{made['id']}").json()
    assert got["status"] == "APPROVED", got
    return got  # type: ignore[no-any-return]


def _withdraw(sb: Any, account_id: str, amount: str | None = "100.00", **kw: Any) -> Any:
    body = {"profile_id": "default", "asset": "USD", "fiat_account_id": account_id, **kw}
    if amount is not None:
        body["amount"] = amount
    return sb.post(WITHDRAWALS, body)


def _transfer(sb: Any, transfer_id: str) -> dict[str, Any]:
    r = sb.get(f"/v2/transfer/transfers/{transfer_id}")
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _bad(r: Any, field: str, words: str, status: int = 400) -> None:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["meta"]["field"] == field, body
    assert words in body["detail"], body


# -- fiat accounts ----------------------------------------------------------------------


def test_an_account_is_created_pending_and_approved_by_its_review(http_sandbox: Any) -> None:
    made = _account(http_sandbox, ref_id="acct-1", metadata={"desk": "ops"})
    assert made["status"] == "PENDING"
    assert made["fiat_account_owner"] == PERSON
    assert made["fiat_network_instructions"] == {"wire": WIRE}
    assert made["ref_id"] == "acct-1" and made["metadata"] == {"desk": "ops"}
    assert made["created_at"] == made["updated_at"] == "2024-01-01T00:00:00.000000Z"
    assert_matches(made, full_schema("FiatAccount"))
    http_sandbox.advance(REVIEW - 1)
    assert http_sandbox.get(f"{ACCOUNTS}/{made['id']}").json()["status"] == "PENDING"
    http_sandbox.advance(1)
    got = http_sandbox.get(f"{ACCOUNTS}/{made['id']}").json()
    assert got["status"] == "APPROVED"
    assert got["updated_at"] == "2024-01-01T00:00:05.000000Z"
    assert_matches(got, full_schema("FiatAccount"))


def test_the_list_is_abbreviated_and_the_account_whole(http_sandbox: Any) -> None:
    made = _account(http_sandbox)
    cubix = _account(http_sandbox, {"cubix": {"account_id": CUBIX_ID}})
    listed = http_sandbox.get(ACCOUNTS).json()
    assert_matches(listed, full_schema("ListFiatAccountsResponse"))
    assert [a["id"] for a in listed["items"]] == [cubix["id"], made["id"]]  # newest first
    wire = listed["items"][1]
    assert "fiat_account_owner" not in wire
    assert wire["fiat_network_instructions"]["wire"]["account_number"] == "XXXX5678"
    assert wire["fiat_network_instructions"]["wire"]["fiat_account_owner_address"] == {
        "country": "USA"
    }
    routing = wire["fiat_network_instructions"]["wire"]["routing_details"]
    assert routing["bank_address"] == {"country": "USA"}
    assert routing["routing_number"] == "031302971"
    assert listed["items"][0]["fiat_network_instructions"] == {"cubix": {"account_id": CUBIX_ID}}
    full = http_sandbox.get(f"{ACCOUNTS}/{made['id']}").json()
    assert full["fiat_network_instructions"]["wire"]["account_number"] == "12345678"
    page = http_sandbox.get(ACCOUNTS, params={"limit": 1, "order": "ASC"}).json()
    assert [a["id"] for a in page["items"]] == [made["id"]] and page["next_page_cursor"]
    assert (
        http_sandbox.get(ACCOUNTS, params={"ids": cubix["id"]}).json()["items"][0]["id"]
        == (cubix["id"])
    )


def test_a_reused_ref_id_is_409_with_the_existing_account(http_sandbox: Any) -> None:
    made = _account(http_sandbox, ref_id="same")
    again = _create(http_sandbox, {"cubix": {"account_id": CUBIX_ID}}, ref_id="same")
    assert again.status_code == 409, again.text
    body = again.json()
    assert body["type"] == PROBLEMS + "already-exists"
    assert body["meta"]["existing"]["id"] == made["id"]
    other, _ = http_sandbox.tenant()
    r = http_sandbox.post(
        ACCOUNTS,
        {
            "fiat_account_owner": PERSON,
            "fiat_network_instructions": {"wire": WIRE},
            "ref_id": "same",
        },
        headers=other,
    )
    assert r.status_code == 200, r.text  # ref_ids are per customer
    assert (
        http_sandbox.get(ACCOUNTS, params={"ref_ids": "same"}).json()["items"][0]["id"]
        == made["id"]
    )


@pytest.mark.parametrize(
    ("instructions", "field", "words"),
    [
        (
            {"wire": _wire(routing={"routing_number": "123456789"})},
            "fiat_network_instructions.wire.routing_details.routing_number",
            "fails the ABA checksum",
        ),
        (
            {"wire": _wire(routing={"routing_number": "03130297"})},
            "fiat_network_instructions.wire.routing_details.routing_number",
            "9 digits",
        ),
        (
            {"wire": _wire(routing={"routing_number_type": "SWIFT", "routing_number": "DEUT-DE"})},
            "fiat_network_instructions.wire.routing_details.routing_number",
            "SWIFT BIC",
        ),
        (
            {
                "wire": _wire(
                    account_number="DE89370400440532013001",
                    routing={"routing_number_type": "SWIFT", "routing_number": "DEUTDEFFXXX"},
                )
            },
            "fiat_network_instructions.wire.account_number",
            "fails the IBAN checksum",
        ),
        (
            {"wire": _wire(account_number="12-34")},
            "fiat_network_instructions.wire.account_number",
            "4 to 17 digits",
        ),
        (
            {"wire": _wire(routing={"bank_name": " "})},
            "fiat_network_instructions.wire.routing_details.bank_name",
            "must be set",
        ),
        (
            {"cubix": {"account_id": "12345"}},
            "fiat_network_instructions.cubix.account_id",
            "UUID",
        ),
        (
            {"wire": WIRE, "cubix": {"account_id": CUBIX_ID}},
            "fiat_network_instructions",
            "exactly one of",
        ),
        ({}, "fiat_network_instructions", "exactly one of"),
    ],
)
def test_instructions_a_bank_would_refuse_are_400_naming_the_field(
    http_sandbox: Any, instructions: dict[str, Any], field: str, words: str
) -> None:
    body = {"fiat_account_owner": PERSON, "fiat_network_instructions": instructions}
    _bad(http_sandbox.post(ACCOUNTS, body), field, words)


def test_good_swift_and_other_networks_are_taken(http_sandbox: Any) -> None:
    iban = _wire(
        account_number="DE89370400440532013000",
        routing={"routing_number_type": "SWIFT", "routing_number": "DEUTDEFFXXX"},
    )
    for instructions in (
        {"wire": iban},
        {"cbit": {"wallet_address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}},
        {"dbs_act": {"account_number": "0720123456"}},
        {"scb": {"account_number": "01234567890"}},
    ):
        made = _account(http_sandbox, instructions)
        assert made["fiat_network_instructions"] == instructions


def test_a_missing_or_double_owner_and_a_missing_wire_field_are_400(http_sandbox: Any) -> None:
    r = http_sandbox.post(ACCOUNTS, {"fiat_network_instructions": {"wire": WIRE}})
    _bad(r, "fiat_account_owner", "is required")
    both = {**PERSON, "institution_details": {"name": "Big Tech Inc"}}
    _bad(_create(http_sandbox, owner=both), "fiat_account_owner", "exactly one of")
    _bad(_create(http_sandbox, owner={}), "fiat_account_owner", "exactly one of")
    wire = {k: v for k, v in WIRE.items() if k != "routing_details"}
    r = _create(http_sandbox, {"wire": wire})
    _bad(r, "fiat_network_instructions.wire.routing_details", "is required")
    r = _create(http_sandbox, {"wire": _wire(routing={"routing_number_type": "IBAN"})})
    _bad(r, "fiat_network_instructions.wire.routing_details.routing_number_type", "ABA, SWIFT")


def test_an_update_goes_back_to_pending_and_is_reviewed_again(http_sandbox: Any) -> None:
    made = _approved(http_sandbox)
    http_sandbox.advance(10)
    change = {
        "fiat_account_owner": {"person_details": {"first_name": "John", "last_name": "Smith"}},
        "fiat_network_instructions": {
            "wire": {
                "routing_details": {"bank_name": "Other Bank", "bank_address": {"country": "US"}}
            }
        },
        "metadata": {"k": "v"},
    }
    r = http_sandbox.http.put(f"{ACCOUNTS}/{made['id']}", json=change, headers=http_sandbox.headers)
    assert r.status_code == 200, r.text
    updated = r.json()
    assert updated["status"] == "PENDING"
    assert updated["fiat_account_owner"] == change["fiat_account_owner"]
    routing = updated["fiat_network_instructions"]["wire"]["routing_details"]
    assert routing == {
        **WIRE["routing_details"],
        "bank_name": "Other Bank",
        "bank_address": {"country": "US"},
    }  # type: ignore[dict-item]
    assert updated["metadata"] == {"k": "v"}
    assert_matches(updated, full_schema("FiatAccount"))
    http_sandbox.advance(REVIEW)
    assert http_sandbox.get(f"{ACCOUNTS}/{made['id']}").json()["status"] == "APPROVED"


def test_an_earlier_review_does_not_approve_a_later_update(http_sandbox: Any) -> None:
    made = _account(http_sandbox)
    http_sandbox.advance(REVIEW - 1)
    r = http_sandbox.http.put(
        f"{ACCOUNTS}/{made['id']}", json={"metadata": {"a": "b"}}, headers=http_sandbox.headers
    )
    assert r.status_code == 200, r.text
    http_sandbox.advance(1)  # the creation's review is due: the update's is not yet
    assert http_sandbox.get(f"{ACCOUNTS}/{made['id']}").json()["status"] == "PENDING"
    http_sandbox.advance(REVIEW)
    assert http_sandbox.get(f"{ACCOUNTS}/{made['id']}").json()["status"] == "APPROVED"


def test_an_update_refuses_another_owner_kind_and_a_wire_change_of_cubix(http_sandbox: Any) -> None:
    made = _account(http_sandbox)
    url = f"{ACCOUNTS}/{made['id']}"
    r = http_sandbox.http.put(
        url,
        json={"fiat_account_owner": {"institution_details": {"name": "Big Tech Inc"}}},
        headers=http_sandbox.headers,
    )
    assert r.status_code == 400, r.text
    assert r.json()["detail"] == "fiat_account_owner cannot be changed from person to institution"
    cubix = _account(http_sandbox, {"cubix": {"account_id": CUBIX_ID}})
    r = http_sandbox.http.put(
        f"{ACCOUNTS}/{cubix['id']}",
        json={"fiat_network_instructions": {"wire": {"routing_details": {"bank_name": "X"}}}},
        headers=http_sandbox.headers,
    )
    _bad(r, "fiat_network_instructions.wire", "not a wire account")
    r = http_sandbox.http.put(
        f"{ACCOUNTS}/2d929a0d-e1e3-4781-b7f8-7b34e66f7832",
        json={"metadata": {"a": "b"}},
        headers=http_sandbox.headers,
    )
    assert r.status_code == 404 and "not found" in r.json()["detail"], r.text


def test_a_deleted_account_is_gone_but_for_include_deleted(http_sandbox: Any) -> None:
    made = _approved(http_sandbox)
    url = f"{ACCOUNTS}/{made['id']}"
    r = http_sandbox.delete(url)
    assert r.status_code == 200 and r.json() == {}, r.text
    assert http_sandbox.get(url).status_code == 404
    kept = http_sandbox.get(url, params={"include_deleted": "true"})
    assert kept.status_code == 200 and kept.json()["id"] == made["id"]
    assert http_sandbox.get(ACCOUNTS).json()["items"] == []
    listed = http_sandbox.get(ACCOUNTS, params={"include_deleted": "true"}).json()["items"]
    assert [a["id"] for a in listed] == [made["id"]]
    assert http_sandbox.delete(url).status_code == 404
    bad = http_sandbox.delete(f"{ACCOUNTS}/123456")
    assert bad.status_code == 400 and bad.json()["detail"] == "id must be uuid, given '123456'"
    http_sandbox.deposit("USD", "1000")
    r = _withdraw(http_sandbox, made["id"])
    assert r.status_code == 404, r.text
    assert r.json()["detail"] == "fiat account not found with requested ID"
    r = http_sandbox.http.put(url, json={"metadata": {"a": "b"}}, headers=http_sandbox.headers)
    assert r.status_code == 404, r.text


def test_a_rejected_or_pending_account_refuses_withdrawals(http_sandbox: Any) -> None:
    http_sandbox.deposit("USD", "1000")
    rejected = _account(http_sandbox, metadata={"sandbox": "sandbox:reject"})
    pending = _account(http_sandbox)
    r = _withdraw(http_sandbox, pending["id"])
    _bad(r, "fiat_account_id", "fiat account has invalid status PENDING, must be approved")
    http_sandbox.advance(REVIEW)
    assert http_sandbox.get(f"{ACCOUNTS}/{rejected['id']}").json()["status"] == "REJECTED"
    r = _withdraw(http_sandbox, rejected["id"])
    assert r.json()["detail"] == "fiat account has invalid status REJECTED, must be approved"
    assert _withdraw(http_sandbox, pending["id"]).status_code == 200
    assert http_sandbox.balance("USD")["available"] == "870"


# -- fiat withdrawals -------------------------------------------------------------------


def test_a_wire_withdrawal_holds_amount_and_fee_then_completes(http_sandbox: Any) -> None:
    account = _approved(http_sandbox)
    http_sandbox.deposit("USD", "1000")
    r = _withdraw(
        http_sandbox, account["id"], "100.00", ref_id="w-1", memo="rent", metadata={"a": "b"}
    )
    assert r.status_code == 200, r.text
    made = r.json()
    assert_matches(made, full_schema("Transfer"))
    assert made["type"] == "WIRE_WITHDRAWAL" and made["direction"] == "DEBIT"
    assert made["status"] == "PENDING" and made["fiat_account_id"] == account["id"]
    assert (made["amount"], made["fee"], made["total"]) == ("100.00", "30", "130.00")
    assert (made["asset"], made["balance_asset"], made["memo"]) == ("USD", "USD", "rent")
    assert http_sandbox.balance("USD")["available"] == "870"
    listed = http_sandbox.get("/v2/transfer/transfers", params={"type": "WIRE_WITHDRAWAL"}).json()
    assert [t["id"] for t in listed["items"]] == [made["id"]]
    http_sandbox.advance(SETTLE - 1)
    assert _transfer(http_sandbox, made["id"])["status"] == "PENDING"
    http_sandbox.advance(1)
    done = _transfer(http_sandbox, made["id"])
    assert done["status"] == "COMPLETED" and done["updated_at"] == "2024-01-01T00:01:05.000000Z"
    assert_matches(done, full_schema("Transfer"))
    assert http_sandbox.balance("USD")["available"] == "870"
    events = http_sandbox.get("/v2/events", params={"order": "ASC"}).json()["events"]
    kinds = [(e["type"], e["object"]["id"]) for e in events if e["object"]["id"] == made["id"]]
    assert kinds == [
        ("transfer.wire_withdrawal.pending", made["id"]),
        ("transfer.wire_withdrawal.completed", made["id"]),
    ]


def test_a_total_pays_the_fee_out_of_itself(http_sandbox: Any) -> None:
    account = _approved(http_sandbox)
    http_sandbox.deposit("USD", "100")
    r = _withdraw(http_sandbox, account["id"], None, total="100.00")
    assert r.status_code == 200, r.text
    assert (r.json()["amount"], r.json()["total"]) == ("70.00", "100.00")
    assert http_sandbox.balance("USD")["available"] == "0"
    _bad(
        _withdraw(http_sandbox, account["id"], None, total="30"), "total", "does not cover the fee"
    )
    _bad(_withdraw(http_sandbox, account["id"], "1", total="31"), "amount", "exactly one of")
    _bad(_withdraw(http_sandbox, account["id"], "1.001"), "amount", "at most 2 decimal places")
    _bad(_withdraw(http_sandbox, account["id"], "1", asset="BTC"), "asset", "only USD")


def test_a_cubix_withdrawal_has_no_fee_and_a_shorter_memo(http_sandbox: Any) -> None:
    account = _approved(http_sandbox, {"cubix": {"account_id": CUBIX_ID}})
    http_sandbox.deposit("USD", "50")
    r = _withdraw(http_sandbox, account["id"], "10.00")
    assert r.status_code == 200, r.text
    assert (r.json()["type"], r.json()["fee"], r.json()["total"]) == (
        "CUBIX_WITHDRAWAL",
        "0",
        "10.00",
    )
    _bad(
        _withdraw(http_sandbox, account["id"], "1", memo="x" * 41), "memo", "at most 40 characters"
    )
    dbs = _approved(http_sandbox, {"dbs_act": {"account_number": "0720123456"}})
    _bad(_withdraw(http_sandbox, dbs["id"], "1"), "fiat_account_id", "not simulated")
    _bad(_withdraw(http_sandbox, account["id"], "1", memo="no_underscore"), "memo", "only letters")


def test_sandbox_fail_in_the_memo_fails_it_and_returns_the_hold(http_sandbox: Any) -> None:
    account = _approved(http_sandbox)
    http_sandbox.deposit("USD", "200")
    made = _withdraw(http_sandbox, account["id"], "50", memo="sandbox:fail").json()
    assert http_sandbox.balance("USD")["available"] == "120"
    http_sandbox.advance(SETTLE)
    failed = _transfer(http_sandbox, made["id"])
    assert failed["status"] == "FAILED"
    assert failed["status_details"]["sandbox_forced_failure"]["memo"] == "sandbox:fail"
    assert http_sandbox.balance("USD")["available"] == "200"
    types = [e["type"] for e in http_sandbox.get("/v2/events").json()["events"]]
    assert "transfer.wire_withdrawal.failed" in types


@pytest.mark.sandex(settings={"fiat_withdrawal_cap": "500"})
def test_the_refusals_of_a_withdrawal(http_sandbox: Any) -> None:
    sb = http_sandbox
    account = _approved(sb)
    sb.deposit("USD", "100")
    r = _withdraw(sb, account["id"], "80")
    assert r.status_code == 403, r.text
    body = r.json()
    assert body["type"] == PROBLEMS + "insufficient-funds"
    assert body["meta"] == {
        "profile_id": body["meta"]["profile_id"],
        "asset": "USD",
        "available": "100",
        "needed": "110",
    }
    sb.deposit("USD", "1000")
    r = _withdraw(sb, account["id"], "500.01")
    assert r.status_code == 400 and r.json()["type"] == PROBLEMS + "exceed-max-withdraw-limit"
    assert r.json()["meta"] == {"asset": "USD", "limit": "500", "amount": "500.01"}
    first = _withdraw(sb, account["id"], "10", ref_id="once").json()
    again = _withdraw(sb, account["id"], "20", ref_id="once")
    assert again.status_code == 409, again.text
    assert again.json()["detail"] == "activity with external id once already exists"
    assert again.json()["meta"]["existing"]["id"] == first["id"]
    missing = _withdraw(sb, "2d929a0d-e1e3-4781-b7f8-7b34e66f7832")
    assert missing.status_code == 404, missing.text
    limits = sb.get("/v2/transfer/limits/utilizations", params={"transfer_type": "WIRE_WITHDRAWAL"})
    assert limits.json() == {
        "items": [
            {
                "rule_id": "sandbox-per-fiat-withdrawal-USD",
                "transfer_types": ["CBIT_WITHDRAWAL", "CUBIX_WITHDRAWAL", "WIRE_WITHDRAWAL"],
                "period_seconds": "0",
                "limit": "500",
                "remaining": "500",
                "limit_asset": "USD",
            }
        ]
    }


def test_a_deactivated_profile_refuses_a_fiat_withdrawal(http_sandbox: Any) -> None:
    account = _approved(http_sandbox)
    profile = http_sandbox.post("/v2/profiles", {"nickname": "side"}).json()
    r = http_sandbox.http.put(
        f"/v2/profiles/{profile['id']}/deactivate", headers=http_sandbox.headers
    )
    assert r.status_code == 200, r.text
    r = _withdraw(http_sandbox, account["id"], "1", profile_id=profile["id"])
    _bad(r, "profile_id", "is deactivated")


def test_a_pending_withdrawal_and_a_pending_review_survive_a_restart(
    sandbox_factory: Any,
) -> None:
    sb = sandbox_factory()
    account = _approved(sb)
    waiting = _account(sb)
    sb.deposit("USD", "100")
    made = _withdraw(sb, account["id"], "10").json()
    sb.close()
    again = sandbox_factory()
    again.advance(SETTLE)
    assert _transfer(again, made["id"])["status"] == "COMPLETED"
    assert again.get(f"{ACCOUNTS}/{waiting['id']}").json()["status"] == "APPROVED"
    assert again.balance("USD")["available"] == "60"


def test_a_withdrawals_changes_are_posted_to_the_webhook(sandbox_factory: Any) -> None:
    sb = sandbox_factory(webhook_allowed_hosts=LOCAL)
    account = _approved(sb)
    with opened() as make:
        receiver = make(Receiver)
        r = sb.post("/v2/sandbox/webhooks", {"url": receiver.url})
        assert r.status_code == 200, r.text
        sb.deposit("USD", "100")
        made = _withdraw(sb, account["id"], "10").json()
        sb.advance(SETTLE)
        deliverer = start_deliverer(sb)
        try:
            wait(lambda: len(receiver.received) >= 3)
        finally:
            deliverer.stop()
    posted = [json.loads(body) for _, body in receiver.received]
    mine = [e["type"] for e in posted if e["object"]["id"] == made["id"]]
    assert mine == ["transfer.wire_withdrawal.pending", "transfer.wire_withdrawal.completed"]


def _named(sb: Any, fiat_account_id: str, identity_id: str, account_id: str) -> Any:
    """A withdrawal naming an identity and its account (the body's `account_id`)."""
    body = {"profile_id": "default", "asset": "USD", "fiat_account_id": fiat_account_id}
    body |= {"amount": "100.00", "identity_id": identity_id, "account_id": account_id}
    return sb.post(WITHDRAWALS, body)


def test_a_fiat_withdrawal_naming_an_identity_follows_the_create_order_rule(
    http_sandbox: Any,
) -> None:
    """As crypto withdrawals: the identity must be the caller's, APPROVED, and act for
    the account."""
    http_sandbox.deposit("USD", "1000")
    target = _approved(http_sandbox)["id"]
    identity, acct = approved_account(http_sandbox)
    r = _named(http_sandbox, target, identity, acct)
    assert r.status_code == 200, r.text
    assert (r.json()["identity_id"], r.json()["account_id"]) == (identity, acct)
    pending = person(http_sandbox, first_name="Pat")["id"]
    refused = _named(http_sandbox, target, pending, acct)
    assert refused.status_code == 403, refused.text
    assert "only an APPROVED identity may withdraw" in refused.json()["detail"]
    unknown = _named(http_sandbox, target, "nope", acct)
    assert unknown.status_code == 404, unknown.text
    held = http_sandbox.balance("USD")["available"]
    assert held == "870", held  # only the first (100 and the 30 wire fee) was held
