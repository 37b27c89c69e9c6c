"""Issue 19, the create-order rule: "the identity must be allowed to trade for the
account". An order, a crypto withdrawal or a deposit address (and, since issue 29, every
other operation that names an identity and an account) is refused unless the identity is
the caller's, APPROVED, and a member of the account with a role that acts for it; each
refusal with the document's status and problem type (403 Forbidden, as its `user account
is disabled` example; 404 Not Found for an id the caller does not have; 400 naming a
field sent without its partner). Only a customer created with `identity_labels` keeps
the ids as labels, until it creates an identity."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.identity_helpers import (
    ACCOUNTS,
    IDENTITIES,
    account,
    approve,
    approved_account,
    person,
    put,
    set_status,
)

ORDERS = "/v2/profiles/default/orders"
LIMIT = {
    "side": "BUY",
    "market": "BTCUSD",
    "type": "LIMIT",
    "price": "40000",
    "base_amount": "0.01",
}
ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
WITHDRAWAL = {
    "profile_id": "default",
    "asset": "BTC",
    "destination_address": ADDRESS,
    "crypto_network": "BITCOIN",
    "amount": "0.001",
}
FORBIDDEN = {"type": "about:blank", "title": "Forbidden", "status": 403}


@pytest.fixture
def sb(sandbox: Any) -> Any:
    sandbox.deposit("USD", "10000")
    sandbox.deposit("BTC", "1")
    return sandbox


def _order(sb: Any, identity_id: str | None, account_id: str | None, **kw: Any) -> Any:
    headers = kw.pop("headers", sb.headers)
    body: dict[str, Any] = {k: v for k, v in {**LIMIT, **kw}.items() if v is not None}
    if identity_id is not None:
        body["identity_id"] = identity_id
    if account_id is not None:
        body["identity_account_id"] = account_id
    return sb.post(ORDERS, body, headers=headers)


def _refused(r: Any, status: int, words: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body: dict[str, Any] = r.json()
    assert r.headers["content-type"] == "application/problem+json"
    if status == 403:
        assert {k: body[k] for k in FORBIDDEN} == FORBIDDEN
    assert words in body["detail"], body
    return body


def _orders(sb: Any) -> int:
    return len(sb.get(ORDERS).json()["items"])


def test_an_approved_owner_trades_for_its_account_and_the_order_keeps_the_ids(sb: Any) -> None:
    identity, acct = approved_account(sb)
    r = _order(sb, identity, acct, type="MARKET", price=None, base_amount=None, quote_amount="100")
    assert r.status_code == 200, r.text
    order = r.json()
    assert order["status"] == "FILLED"
    assert (order["identity_id"], order["identity_account_id"]) == (identity, acct)


def test_an_authorized_user_trades_and_a_financial_advisor_does_not(sb: Any) -> None:
    identity, acct = approved_account(sb)
    user, adviser = person(sb, first_name="Jane"), person(sb, first_name="Ann")
    approve(sb, user["id"])
    approve(sb, adviser["id"])
    members = [
        {"identity_id": user["id"], "roles": ["AUTHORIZED_USER"]},
        {"identity_id": adviser["id"], "roles": ["FINANCIAL_ADVISOR"]},
    ]
    assert (
        sb.post(
            "/v2/identity/account-members", {"account_id": acct, "members": members}
        ).status_code
        == 200
    )
    assert _order(sb, user["id"], acct).status_code == 200
    before = _orders(sb)
    body = _refused(_order(sb, adviser["id"], acct), 403, "is not allowed to trade for account")
    assert "FINANCIAL_ADVISOR" in body["detail"]
    assert body["meta"] == {"identity_id": adviser["id"], "account_id": acct}
    assert _orders(sb) == before


@pytest.mark.parametrize(
    ("verdict", "status"),
    [
        ({}, "PENDING"),
        ({"sanctions_verification_status": "DENIED"}, "DENIED"),
        ({"sanctions_verification_status": "ERROR"}, "ERROR"),
        ({"user_disabled": {"disabled": True}}, "DISABLED"),
        ({"admin_disabled": {"disabled": True}}, "DISABLED"),
    ],
)
def test_an_identity_that_is_not_approved_may_not_trade(
    sb: Any, verdict: dict[str, Any], status: str
) -> None:
    identity, acct = approved_account(sb)
    if verdict:
        assert set_status(sb, identity, **verdict).status_code == 200
    else:  # a new identity, still pending, owning its own account
        identity = person(sb, first_name="Pat")["id"]
        acct = account(sb, identity)["id"]
    before = _orders(sb)
    body = _refused(_order(sb, identity, acct), 403, f"is {status}: only an APPROVED identity")
    assert body["meta"] == {"identity_id": identity, "summary_status": status}
    assert _orders(sb) == before
    assert sb.balance("USD")["available"] == "10000"


def test_an_identity_that_is_not_a_member_may_not_trade(sb: Any) -> None:
    _, acct = approved_account(sb)
    stranger = person(sb, first_name="Sam")
    approve(sb, stranger["id"])
    _refused(_order(sb, stranger["id"], acct), 403, "it is not a member of the account")


def test_a_removed_member_may_not_trade_any_more(sb: Any) -> None:
    _, acct = approved_account(sb)
    user = person(sb, first_name="Jane")
    approve(sb, user["id"])
    added = sb.post(
        "/v2/identity/account-members",
        {
            "account_id": acct,
            "members": [{"identity_id": user["id"], "roles": ["AUTHORIZED_USER"]}],
        },
    ).json()
    assert _order(sb, user["id"], acct).status_code == 200
    sb.delete(f"/v2/identity/account-members/{added['members'][0]['id']}")
    _refused(_order(sb, user["id"], acct), 403, "it is not a member of the account")


def test_a_disabled_account_may_not_be_traded_for(sb: Any) -> None:
    identity, acct = approved_account(sb)
    put(sb, ACCOUNTS, {"account": {"id": acct}, "set_user_disabled": True})
    _refused(_order(sb, identity, acct), 403, f"account {acct} is disabled")


def test_an_unknown_or_another_customers_identity_or_account_is_not_found(sb: Any) -> None:
    identity, acct = approved_account(sb)
    intruder, _ = sb.tenant()
    sb.deposit("USD", "100", headers=intruder)
    their_identity, their_account = approved_account(sb, intruder)
    for who, identity_id, account_id, words in (
        (sb.headers, "nope", acct, "identity not found with id nope"),
        (sb.headers, identity, "nope", "account not found with id nope"),
        (sb.headers, their_identity, acct, f"identity not found with id {their_identity}"),
        (sb.headers, identity, their_account, f"account not found with id {their_account}"),
        (intruder, identity, acct, f"identity not found with id {identity}"),
    ):
        body = _refused(_order(sb, identity_id, account_id, headers=who), 404, words)
        assert body["type"] == "about:blank" and body["title"] == "Not Found"


@pytest.mark.parametrize("missing", ["identity_id", "identity_account_id"])
def test_an_identity_without_its_account_or_the_reverse_is_a_400_naming_it(
    sb: Any, missing: str
) -> None:
    identity, acct = approved_account(sb)
    r = _order(
        sb,
        None if missing == "identity_id" else identity,
        None if missing == "identity_account_id" else acct,
    )
    body = _refused(r, 400, "identity_id and identity_account_id must be sent together")
    assert body["meta"] == {"field": missing}


def test_an_order_naming_neither_is_placed_as_before(sb: Any) -> None:
    approved_account(sb)
    assert _order(sb, None, None).status_code == 200


# -- crypto withdrawals ------------------------------------------------------------------


def _withdraw(sb: Any, **ids: str) -> Any:
    return sb.post("/v2/transfer/crypto-withdrawals", {**WITHDRAWAL, **ids})


def test_a_withdrawal_follows_the_same_rule(sb: Any) -> None:
    identity, acct = approved_account(sb)
    r = _withdraw(sb, identity_id=identity, account_id=acct)
    assert r.status_code == 200, r.text
    assert (r.json()["identity_id"], r.json()["account_id"]) == (identity, acct)
    pending = person(sb, first_name="Pat")["id"]
    _refused(
        _withdraw(sb, identity_id=pending, account_id=acct),
        403,
        "only an APPROVED identity may withdraw",
    )
    stranger = person(sb, first_name="Sam")["id"]
    approve(sb, stranger)
    _refused(
        _withdraw(sb, identity_id=stranger, account_id=acct), 403, "is not allowed to withdraw"
    )
    _refused(_withdraw(sb, identity_id="nope", account_id=acct), 404, "identity not found")
    _refused(_withdraw(sb, identity_id=identity, account_id="nope"), 404, "account not found")
    assert sb.balance("BTC")["available"] != "1"  # only the first was held
    assert _withdraw(sb).status_code == 200


@pytest.mark.parametrize("missing", ["identity_id", "account_id"])
def test_a_withdrawal_naming_one_of_the_two_is_a_400_naming_the_other(
    sb: Any, missing: str
) -> None:
    identity, acct = approved_account(sb)
    ids = {"identity_id": identity, "account_id": acct}
    del ids[missing]
    body = _refused(_withdraw(sb, **ids), 400, "identity_id and account_id must be sent together")
    assert body["meta"] == {"field": missing}


# -- deposit addresses -------------------------------------------------------------------


def _address(sb: Any, **ids: str) -> Any:
    return sb.post(
        "/v2/transfer/deposit-addresses",
        {"profile_id": "default", "crypto_network": "BITCOIN", **ids},
    )


def test_a_deposit_address_follows_the_same_rule(sb: Any) -> None:
    identity, acct = approved_account(sb)
    r = _address(sb, identity_id=identity, account_id=acct)
    assert r.status_code == 200, r.text
    assert (r.json()["identity_id"], r.json()["account_id"]) == (identity, acct)
    denied = person(sb, first_name="Dan")["id"]
    set_status(sb, denied, sanctions_verification_status="DENIED")
    other = account(sb, denied)["id"]
    _refused(
        _address(sb, identity_id=denied, account_id=other),
        403,
        "is DENIED: only an APPROVED identity may create a deposit address",
    )
    intruder, _ = sb.tenant()
    _, their_account = approved_account(sb, intruder)
    _refused(_address(sb, identity_id=identity, account_id=their_account), 404, "account not found")
    body = _refused(_address(sb, account_id=acct), 400, "must be sent together")
    assert body["meta"] == {"field": "identity_id"}
    assert len(sb.get("/v2/transfer/deposit-addresses").json()["items"]) == 1


def test_an_approval_withdrawn_stops_the_next_order(sb: Any) -> None:
    identity, acct = approved_account(sb)
    assert _order(sb, identity, acct).status_code == 200
    put(sb, f"{IDENTITIES}/{identity}", {"person_details": {"last_name": "Roe"}})  # screened again
    _refused(_order(sb, identity, acct), 403, "is PENDING")
    approve(sb, identity)
    assert _order(sb, identity, acct).status_code == 200


# -- issue 29: unknown identities refused by default, labels by choice --------------------


def test_an_unknown_identity_or_account_is_refused_by_a_customer_without_identities(
    sb: Any,
) -> None:
    """Nothing that does not exist can be allowed to trade: a customer that has created no
    identity is refused as one that has (404), unless it chose labels."""
    before = _orders(sb)
    _refused(_order(sb, "id-b", "acct-b"), 404, "identity not found with id id-b")
    _refused(_withdraw(sb, identity_id="id-b", account_id="acct-b"), 404, "identity not found")
    identity, _ = approved_account(sb)
    _refused(_order(sb, identity, "acct-b"), 404, "account not found with id acct-b")
    assert _orders(sb) == before


def test_a_customer_created_with_identity_labels_keeps_the_ids_as_labels(sb: Any) -> None:
    """An integration without identities chooses labels; once it creates an identity of
    its own, the rule holds for it too."""
    labels, _ = sb.tenant(identity_labels=True)
    sb.deposit("USD", "10000", headers=labels)
    r = _order(sb, "id-b", "acct-b", headers=labels)
    assert r.status_code == 200, r.text
    assert (r.json()["identity_id"], r.json()["identity_account_id"]) == ("id-b", "acct-b")
    person(sb, labels)
    _refused(_order(sb, "id-b", "acct-b", headers=labels), 404, "identity not found with id id-b")


def test_the_bootstrap_customer_keeps_labels_when_the_settings_say_so(
    sandbox_factory: Any,
) -> None:
    labels = sandbox_factory(bootstrap_identity_labels=True)
    labels.deposit("USD", "10000")
    assert _order(labels, "id-b", "acct-b").status_code == 200
    other, _ = labels.tenant()
    labels.deposit("USD", "10000", headers=other)
    _refused(_order(labels, "id-b", "acct-b", headers=other), 404, "identity not found")
