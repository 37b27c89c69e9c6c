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
from tests.support.trading_helpers import get_order, limit, placed, set_price, still

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


# -- issue 29: every operation that names an identity and an account -----------------------


def _quote_execution(sb: Any, ids: dict[str, str], headers: dict[str, str]) -> Any:
    quotes = sb.get("/v2/quotes", params={"markets": ["BTCUSD"]}, headers=headers).json()
    buy = next(q for q in quotes["items"] if q["side"] == "BUY")
    body = {"quote_id": buy["id"], "quote_amount": "100", **ids}
    return sb.post("/v2/profiles/default/quote-executions", body, headers=headers)


def _conversion(sb: Any, ids: dict[str, str], headers: dict[str, str]) -> Any:
    body = {"profile_id": "default", "amount": "10", "source_asset": "USD", "target_asset": "USDP"}
    return sb.post("/v2/conversion/stablecoins", {**body, **ids}, headers=headers)


def _internal(prefix: str) -> Any:
    """An internal transfer to a second profile, the ids named for the `prefix` side."""

    def send(sb: Any, ids: dict[str, str], headers: dict[str, str]) -> Any:
        made = sb.post("/v2/profiles", {"nickname": "desk"}, headers=headers).json()
        desk = made.get("id") or made["meta"]["existing"]["id"]  # 409 once it exists
        body = {"from_profile_id": "default", "to_profile_id": desk, "asset": "USD"}
        named = {f"{prefix}_{name}": value for name, value in ids.items()}
        return sb.post("/v2/transfer/internal", {**body, "amount": "10", **named}, headers=headers)

    return send


def _instructions(sb: Any, ids: dict[str, str], headers: dict[str, str]) -> Any:
    body = {"profile_id": "default", "fiat_network": "WIRE", **ids}
    return sb.post("/v2/transfer/fiat-deposit-instructions", body, headers=headers)


def _fiat_account(sb: Any, ids: dict[str, str], headers: dict[str, str]) -> Any:
    wire = {
        "account_number": "12345678",
        "fiat_account_owner_address": {"country": "USA", "address1": "1 Main St", "city": "NY"},
        "routing_details": {
            "routing_number_type": "ABA",
            "routing_number": "031302971",
            "bank_name": "Customers Bank",
            "bank_address": {"country": "USA", "city": "New York"},
        },
    }
    body = {
        "fiat_account_owner": {"person_details": {"first_name": "Jane", "last_name": "Doe"}},
        "fiat_network_instructions": {"wire": wire},
        **ids,
    }
    return sb.post("/v2/transfer/fiat-accounts", body, headers=headers)


# name: (send, the refusal's verb, where what it makes is listed, the ids' field prefix)
OPERATIONS = {
    "quote execution": (_quote_execution, "trade", "/v2/profiles/default/quote-executions", ""),
    "stablecoin conversion": (_conversion, "convert", "/v2/conversion/stablecoins", ""),
    "internal transfer, sender": (_internal("from"), "transfer", "/v2/transfer/transfers", "from_"),
    "internal transfer, recipient": (_internal("to"), "transfer", "/v2/transfer/transfers", "to_"),
    "fiat deposit instructions": (
        _instructions,
        "deposit",
        "/v2/transfer/fiat-deposit-instructions",
        "",
    ),
    "fiat account": (_fiat_account, "hold a fiat account", "/v2/transfer/fiat-accounts", ""),
}


def _listed(sb: Any, path: str, headers: dict[str, str]) -> int:
    r = sb.get(path, headers=headers)
    assert r.status_code == 200, r.text
    return len(r.json()["items"])


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_every_operation_naming_an_identity_follows_the_rule(sb: Any, operation: str) -> None:
    """Item 6: a DISABLED identity, another customer's ids, an unknown one or one of the two
    alone are refused as for an order, and nothing is made; an approved owner is served."""
    send, action, listing, prefix = OPERATIONS[operation]
    identity, acct = approved_account(sb)
    intruder, _ = sb.tenant()
    their_identity, their_account = approved_account(sb, intruder)
    disabled = person(sb, first_name="Dee")["id"]
    approve(sb, disabled)
    disabled_account = account(sb, disabled)["id"]
    assert set_status(sb, disabled, user_disabled={"disabled": True}).status_code == 200
    before = _listed(sb, listing, sb.headers)

    body = _refused(
        send(sb, {"identity_id": disabled, "account_id": disabled_account}, sb.headers),
        403,
        f"is DISABLED: only an APPROVED identity may {action}",
    )
    assert body["meta"] == {"identity_id": disabled, "summary_status": "DISABLED"}
    for ids, words in (
        ({"identity_id": their_identity, "account_id": acct}, "identity not found"),
        ({"identity_id": identity, "account_id": their_account}, "account not found"),
        ({"identity_id": "nope", "account_id": "nope"}, "identity not found with id nope"),
    ):
        _refused(send(sb, ids, sb.headers), 404, words)
    body = _refused(send(sb, {"identity_id": identity}, sb.headers), 400, "sent together")
    assert body["meta"] == {"field": f"{prefix}account_id"}
    assert _listed(sb, listing, sb.headers) == before

    r = send(sb, {"identity_id": identity, "account_id": acct}, sb.headers)
    assert r.status_code == 200, r.text
    assert _listed(sb, listing, sb.headers) > before


def test_a_held_deposit_is_updated_or_rejected_only_by_one_of_the_customers_identities(
    sandbox_factory: Any,
) -> None:
    sb = sandbox_factory(crypto_deposit_review_usd="10000")
    identity, _ = approved_account(sb)
    intruder, _ = sb.tenant()
    their_identity, _ = approved_account(sb, intruder)
    made = sb.post(
        "/v2/transfer/deposit-addresses", {"profile_id": "default", "crypto_network": "BITCOIN"}
    ).json()
    sent = sb.post(
        "/v2/sandbox/crypto-deposits", {"address": made["address"], "asset": "BTC", "amount": "1"}
    ).json()  # worth more than 10,000 USD: held for the travel rule
    base = f"/v2/transfer/crypto-deposits/{sent['id']}"
    for who in ("nope", their_identity):
        _refused(sb.post(f"{base}/reject", {"identity_id": who}), 404, f"not found with id {who}")
    assert sb.get(f"/v2/transfer/transfers/{sent['id']}").json()["status"] == "PENDING"
    assert sb.post(f"{base}/reject", {"identity_id": identity}).status_code == 200


def test_a_disabled_identitys_resting_and_stop_orders_stay_and_execute(
    sandbox_factory: Any,
) -> None:
    """The service's status grid lets a DISABLED identity execute its open orders: they
    are neither cancelled nor refused when they fill or trigger; only new ones are."""
    sb = still(sandbox_factory)
    sb.deposit("BTC", "2")
    identity, acct = approved_account(sb)
    ids = {"identity_id": identity, "identity_account_id": acct}
    resting = placed(sb, **limit("SELL", "42510", "0.5"), **ids)  # below the house's asks
    stop = placed(sb, side="SELL", type="STOP_MARKET", stop_price="41000", base_amount="0.5", **ids)
    assert set_status(sb, identity, user_disabled={"disabled": True}).status_code == 200
    _refused(_order(sb, identity, acct, side="SELL"), 403, "is DISABLED")

    buyer, _ = sb.tenant()
    sb.deposit("USD", "100000", headers=buyer)
    placed(sb, headers=buyer, **limit("BUY", "42510", "0.5"))
    set_price(sb, "40900")
    sb.advance(60)
    assert get_order(sb, resting)["status"] == "FILLED"
    triggered = get_order(sb, stop)
    assert triggered["status"] == "FILLED" and triggered["identity_id"] == identity
