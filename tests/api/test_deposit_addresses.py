"""Deposit addresses, sandbox crypto deposits to them, and the travel-rule operations on
deposits held for review (engine/domain/transfers/deposit_addresses.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sandex.engine.domain.transfers.networks import CRYPTO_NETWORKS, check_address
from sandex.engine.domain.transfers.withdrawals import DEFAULT_CONFIRMATION_SECONDS
from tests.support.reference import assert_matches, full_schema
from tests.support.transfer_helpers import PROBLEMS
from tests.support.webhook_receivers import LOCAL, Receiver, opened, start_deliverer, wait

ADDRESSES = "/v2/transfer/deposit-addresses"
DEPOSITS = "/v2/sandbox/crypto-deposits"
NEEDS_INFO = "TRAVEL_RULE_INFO_REQUESTED"
PERSON = {"individual_info": {"first_name": "John", "last_name": "Doe"}}


def _address(sb: Any, network: str = "BITCOIN", **kw: Any) -> dict[str, Any]:
    r = sb.post(ADDRESSES, {"profile_id": "default", "crypto_network": network, **kw})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _send(sb: Any, address: str, asset: str = "BTC", amount: str = "0.1", **kw: Any) -> Any:
    return sb.post(DEPOSITS, {"address": address, "asset": asset, "amount": amount}, **kw)


def _sent(sb: Any, address: str, asset: str = "BTC", amount: str = "0.1") -> dict[str, Any]:
    r = _send(sb, address, asset, amount)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _transfer(sb: Any, transfer_id: str) -> dict[str, Any]:
    r = sb.get(f"/v2/transfer/transfers/{transfer_id}")
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


# The identity ids here are labels (the identity rule is tests/api/test_identity_rule.py's).
LABELS = {"crypto_deposit_review_usd": "10000", "bootstrap_identity_labels": True}


@pytest.fixture
def sb(sandbox_factory: Any) -> Any:
    return sandbox_factory(**LABELS)


# -- deposit addresses -----------------------------------------------------------------


def test_each_network_gets_an_address_its_withdrawal_check_accepts(sb: Any) -> None:
    seen = set()
    for network in CRYPTO_NETWORKS:
        made = _address(sb, network)
        assert made["crypto_network"] == network
        assert made["compatible_crypto_networks"] == [network]
        assert made["conversion_target_asset"] == "NO_CONVERSION"
        assert check_address(network, made["address"]) is None, made
        seen.add(made["address"])
    assert len(seen) == len(CRYPTO_NETWORKS)  # every one drawn afresh


def test_answers_have_the_references_shapes(sb: Any) -> None:
    made = _address(
        sb, "ETHEREUM", ref_id="r", identity_id="i", account_id="a", metadata={"k": "v"}
    )
    assert_matches(made, full_schema("DepositAddress"))
    assert_matches(sb.get(ADDRESSES).json(), full_schema("ListDepositAddressesResponse"))
    sent = _sent(sb, made["address"], "ETH", "10")  # held: 23,000 USD
    assert_matches(sent, full_schema("Transfer"))
    r = sb.post(
        f"/v2/transfer/crypto-deposits/{sent['id']}/update",
        {"identity_id": "i", "originator_address_info": PERSON},
    )
    assert_matches(r.json(), full_schema("UpdateCryptoDepositResponse"))
    assert_matches(_transfer(sb, sent["id"]), full_schema("Transfer"))


def test_addresses_are_drawn_from_the_seed(sandbox_factory: Any) -> None:
    first = sandbox_factory("one.db", seed=5)
    second = sandbox_factory("two.db", seed=5)
    other = sandbox_factory("three.db", seed=6)
    made = [_address(s, "ETHEREUM")["address"] for s in (first, second, other)]
    assert made[0] == made[1] != made[2]


def test_a_reused_ref_id_is_a_409_with_the_existing_address(sb: Any) -> None:
    made = _address(sb, "SOLANA", ref_id="addr-1", metadata={"user": "42"})
    again = sb.post(
        ADDRESSES, {"profile_id": "default", "crypto_network": "BASE", "ref_id": "addr-1"}
    )
    assert again.status_code == 409
    body = again.json()
    assert body["type"] == PROBLEMS + "already-exists"
    assert body["detail"] == "deposit address already exists with ref_id 'addr-1'"
    assert body["meta"]["existing"] == made
    listed = sb.get(ADDRESSES).json()["items"]
    assert [a["id"] for a in listed] == [made["id"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"crypto_network": "DOGECOIN"}, "crypto_network"),
        ({"conversion_target_asset": "EUR"}, "conversion_target_asset"),
        ({"metadata": {f"k{i}": "v" for i in range(7)}}, "metadata"),
        ({"profile_id": None}, "profile_id"),
    ],
)
def test_bad_input_names_the_field(sb: Any, body: dict[str, Any], field: str) -> None:
    r = sb.post(ADDRESSES, {"profile_id": "default", "crypto_network": "BITCOIN", **body})
    assert r.status_code == 400, r.text
    assert r.json()["meta"]["field"] == field


def test_another_customers_profile_and_addresses_are_not_found(sb: Any) -> None:
    mine = _address(sb, ref_id="mine")
    headers, _ = sb.tenant()
    profile = sb.get("/v2/profiles/default").json()["id"]
    r = sb.post(ADDRESSES, {"profile_id": profile, "crypto_network": "BITCOIN"}, headers=headers)
    assert r.status_code == 404
    assert sb.get(ADDRESSES, headers=headers).json() == {"items": []}
    assert sb.get(ADDRESSES, params={"ids": mine["id"]}, headers=headers).json() == {"items": []}
    # the same ref_id is another customer's own
    theirs = sb.post(
        ADDRESSES,
        {"profile_id": "default", "crypto_network": "BITCOIN", "ref_id": "mine"},
        headers=headers,
    )
    assert theirs.status_code == 200, theirs.text
    # and a deposit to my address from their side is refused
    assert _send(sb, mine["address"], headers=headers).status_code == 404


def test_the_list_filters_and_pages(sb: Any) -> None:
    profile = sb.post("/v2/profiles", {"nickname": "second"}).json()["id"]
    a = _address(sb, "BITCOIN", ref_id="a", identity_id="id-1", account_id="acc-1")
    b = _address(sb, "ETHEREUM", ref_id="b")
    c = sb.post(ADDRESSES, {"profile_id": profile, "crypto_network": "SOLANA"}).json()

    def ids(**params: Any) -> list[str]:
        r = sb.get(ADDRESSES, params=params)
        assert r.status_code == 200, r.text
        return [x["id"] for x in r.json()["items"]]

    assert ids() == [c["id"], b["id"], a["id"]]
    assert ids(order="ASC") == [a["id"], b["id"], c["id"]]
    assert ids(profile_ids=profile) == [c["id"]]
    assert ids(ref_ids=["a", "b"]) == [b["id"], a["id"]]
    assert ids(identity_ids="id-1") == ids(account_ids="acc-1") == [a["id"]]
    first = sb.get(ADDRESSES, params={"limit": 2}).json()
    assert [x["id"] for x in first["items"]] == [c["id"], b["id"]]
    rest = sb.get(ADDRESSES, params={"limit": 2, "page_cursor": first["next_page_cursor"]})
    assert [x["id"] for x in rest.json()["items"]] == [a["id"]]
    assert sb.get(ADDRESSES, params={"order_by": "UPDATED_AT"}).status_code == 400


def test_a_client_without_the_scopes_is_refused(sb: Any) -> None:
    made = sb.post("/v2/sandbox/customers", {"scopes": ["funding:read_profile"]}).json()
    headers = sb.login(made["client_id"], made["client_secret"])
    body = {"profile_id": "default", "crypto_network": "BITCOIN"}
    assert sb.post(ADDRESSES, body, headers=headers).status_code == 403
    assert sb.get(ADDRESSES, headers=headers).status_code == 403
    scoped = sb.post(
        "/v2/sandbox/customers",
        {"scopes": ["transfer:write_deposit_address", "transfer:read_deposit_address"]},
    ).json()
    headers = sb.login(scoped["client_id"], scoped["client_secret"])
    assert sb.post(ADDRESSES, body, headers=headers).status_code == 200


# -- crypto deposits -------------------------------------------------------------------


def test_a_deposit_is_pending_then_completed_after_the_networks_delay(sb: Any) -> None:
    made = _address(sb, "ETHEREUM", metadata={"user": "7"}, identity_id="ident-9")
    sent = _sent(sb, made["address"].lower(), "ETH", "1.5")  # EVM case is only a checksum
    assert sent["type"] == "CRYPTO_DEPOSIT" and sent["status"] == "PENDING"
    assert sent["direction"] == "CREDIT"
    assert sent["destination_address"] == made["address"]
    assert sent["crypto_tx_hash"].startswith("0x") and len(sent["crypto_tx_hash"]) == 66
    assert sent["metadata"] == {"user": "7"} and sent["identity_id"] == "ident-9"
    assert "secondary_status" not in sent
    assert sb.balance("ETH")["available"] == "0"
    delay = int(DEFAULT_CONFIRMATION_SECONDS["ETHEREUM"])
    sb.advance(delay - 1)
    assert _transfer(sb, sent["id"])["status"] == "PENDING"
    sb.advance(1)
    done = _transfer(sb, sent["id"])
    assert done["status"] == "COMPLETED"
    assert done["crypto_tx_hash"] == sent["crypto_tx_hash"]
    assert sb.balance("ETH")["available"] == "1.5"
    listed = sb.get("/v2/transfer/transfers", params={"crypto_tx_hashes": sent["crypto_tx_hash"]})
    assert [t["id"] for t in listed.json()["items"]] == [sent["id"]]
    feed = sb.get("/v2/events", params={"type": "transfer.crypto_deposit.completed"}).json()
    assert [e["object"]["id"] for e in feed["events"]] == [sent["id"]]
    pending = sb.get("/v2/events", params={"type": "transfer.crypto_deposit.pending"}).json()
    assert [e["object"]["id"] for e in pending["events"]] == [sent["id"]]


@pytest.mark.sandex(settings={"withdrawal_confirmation_seconds": {"SOLANA": "30"}})
def test_the_confirmation_delay_is_the_withdrawals_setting(http_sandbox: Any) -> None:
    sb = http_sandbox
    sent = _sent(sb, _address(sb, "SOLANA")["address"], "SOL", "2")
    sb.advance(29)
    assert _transfer(sb, sent["id"])["status"] == "PENDING"
    sb.advance(1)
    assert _transfer(sb, sent["id"])["status"] == "COMPLETED"


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"asset": "ETH"}, 400, "asset"),  # ETH does not travel on BITCOIN
        ({"asset": "USD"}, 400, "asset"),
        ({"amount": "0.000000001"}, 400, "amount"),
        ({"amount": "-1"}, 400, "amount"),
        ({"crypto_network": "LITECOIN"}, 400, "crypto_network"),
        ({"address": "bc1qnotanaddressofmine"}, 404, None),
    ],
)
def test_a_bad_deposit_is_refused(
    sb: Any, body: dict[str, Any], status: int, field: str | None
) -> None:
    made = _address(sb)
    r = sb.post(DEPOSITS, {"address": made["address"], "asset": "BTC", "amount": "0.1", **body})
    assert r.status_code == status, r.text
    if field:
        assert r.json()["meta"]["field"] == field


def test_a_usd_conversion_address_credits_paxos_stablecoins_as_usd(sb: Any) -> None:
    made = _address(sb, "ETHEREUM", conversion_target_asset="USD")
    sent = _sent(sb, made["address"], "USDG", "250")
    assert sent["asset"] == "USDG" and sent["balance_asset"] == "USD"
    other = _sent(sb, made["address"], "USDC", "5")  # not Paxos-minted: no conversion
    assert other["balance_asset"] == "USDC"
    sb.advance(10)
    assert sb.balance("USD")["available"] == "250"
    assert sb.balance("USDG")["available"] == "0"
    assert sb.balance("USDC")["available"] == "5"


# -- the travel rule -------------------------------------------------------------------


def _held(sb: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    made = _address(sb, "BITCOIN", identity_id="ident-1")
    sent = _sent(sb, made["address"], "BTC", "1")  # worth 42,500 USD: above 10,000
    assert sent["status"] == "PENDING"
    assert sent["secondary_status"]["name"] == NEEDS_INFO
    return made, sent


def test_a_large_deposit_is_held_until_updated(sb: Any) -> None:
    _, sent = _held(sb)
    sb.advance(60)
    assert _transfer(sb, sent["id"])["status"] == "PENDING"
    assert sb.balance("BTC")["available"] == "0"
    listed = sb.get("/v2/transfer/transfers", params={"secondary_statuses": NEEDS_INFO})
    assert [t["id"] for t in listed.json()["items"]] == [sent["id"]]
    r = sb.post(
        f"/v2/transfer/crypto-deposits/{sent['id']}/update",
        {"identity_id": "ident-1", "originator_address_info": PERSON},
    )
    assert r.status_code == 200, r.text
    assert r.json() == {}
    done = _transfer(sb, sent["id"])
    assert done["status"] == "COMPLETED" and "secondary_status" not in done
    assert sb.balance("BTC")["available"] == "1"
    again = sb.post(
        f"/v2/transfer/crypto-deposits/{sent['id']}/update",
        {"identity_id": "ident-1", "originator_address_info": PERSON},
    )
    assert again.status_code == 409
    assert again.json()["detail"] == f"crypto deposit {sent['id']} does not need info"


def test_an_update_before_the_confirmation_waits_for_it(sb: Any) -> None:
    _, sent = _held(sb)
    r = sb.post(
        f"/v2/transfer/crypto-deposits/{sent['id']}/update",
        {
            "identity_id": "ident-1",
            "originator_address_info": {"institution_info": {"institution_name": "Acme"}},
        },
    )
    assert r.status_code == 200, r.text
    assert _transfer(sb, sent["id"])["status"] == "PENDING"
    sb.advance(int(DEFAULT_CONFIRMATION_SECONDS["BITCOIN"]))
    assert _transfer(sb, sent["id"])["status"] == "COMPLETED"


def test_a_rejected_deposit_fails_and_credits_nothing(sb: Any) -> None:
    _, sent = _held(sb)
    r = sb.post(f"/v2/transfer/crypto-deposits/{sent['id']}/reject", {"identity_id": "ident-1"})
    assert r.status_code == 200, r.text
    failed = _transfer(sb, sent["id"])
    assert failed["status"] == "FAILED"
    assert failed["secondary_status"]["name"] == "TRAVEL_RULE_REJECTED"
    sb.advance(60)
    assert sb.balance("BTC")["available"] == "0"
    feed = sb.get("/v2/events", params={"type": "transfer.crypto_deposit.failed"}).json()
    assert [e["object"]["id"] for e in feed["events"]] == [sent["id"]]
    again = sb.post(f"/v2/transfer/crypto-deposits/{sent['id']}/reject", {"identity_id": "ident-1"})
    assert again.status_code == 409


@pytest.mark.sandex(settings={"crypto_deposit_review_usd": None})
def test_no_threshold_holds_nothing(http_sandbox: Any) -> None:
    sb = http_sandbox
    sent = _sent(sb, _address(sb)["address"], "BTC", "100")
    assert "secondary_status" not in sent


def test_travel_rule_refusals(sb: Any) -> None:
    _, held = _held(sb)
    small = _sent(sb, _address(sb)["address"], "BTC", "0.01")
    update = {"identity_id": "ident-1", "originator_address_info": PERSON}
    base = "/v2/transfer/crypto-deposits"
    r = sb.post(f"{base}/2d929a0d-e1e3-4781-b7f8-7b34e66f/reject", {"identity_id": "x"})
    assert r.status_code == 400
    assert r.json()["detail"] == "id must be uuid, given 2d929a0d-e1e3-4781-b7f8-7b34e66f"
    missing = "2d929a0d-e1e3-4781-b7f8-7b34e66f7832"
    r = sb.post(f"{base}/{missing}/update", update)
    assert r.status_code == 404
    assert r.json()["detail"] == f"no crypto deposit found for id: {missing}"
    assert sb.post(f"{base}/{small['id']}/update", update).status_code == 409
    # another identity than the address's, and another customer, find nothing
    other = {**update, "identity_id": "ident-2"}
    assert sb.post(f"{base}/{held['id']}/update", other).status_code == 404
    headers, _ = sb.tenant()
    assert sb.post(f"{base}/{held['id']}/update", update, headers=headers).status_code == 404
    reject = {"identity_id": "ident-1"}
    assert sb.post(f"{base}/{held['id']}/reject", reject, headers=headers).status_code == 404
    # an originator is a person's two names or an institution's name
    for info in (
        {},
        {"individual_info": {"first_name": "J"}},
        {**PERSON, "institution_info": {"institution_name": "A"}},
    ):
        r = sb.post(
            f"{base}/{held['id']}/update",
            {"identity_id": "ident-1", "originator_address_info": info},
        )
        assert r.status_code == 400, (info, r.text)
        assert r.json()["meta"]["field"].startswith("originator_address_info")
    assert _transfer(sb, held["id"])["secondary_status"]["name"] == NEEDS_INFO


def test_a_held_deposit_survives_a_restart(sandbox_factory: Any) -> None:
    sb = sandbox_factory(**LABELS)
    _, sent = _held(sb)
    sb.close()
    again = sandbox_factory(**LABELS)
    again.advance(60)
    assert _transfer(again, sent["id"])["status"] == "PENDING"
    r = again.post(
        f"/v2/transfer/crypto-deposits/{sent['id']}/update",
        {"identity_id": "ident-1", "originator_address_info": PERSON},
    )
    assert r.status_code == 200, r.text
    assert again.balance("BTC")["available"] == "1"


def test_a_deposits_changes_are_posted_to_the_webhook(sandbox_factory: Any) -> None:
    sb = sandbox_factory(webhook_allowed_hosts=LOCAL)
    with opened() as make:
        receiver = make(Receiver)
        r = sb.post("/v2/sandbox/webhooks", {"url": receiver.url})
        assert r.status_code == 200, r.text
        sent = _sent(sb, _address(sb)["address"], "BTC", "0.01")
        sb.advance(int(DEFAULT_CONFIRMATION_SECONDS["BITCOIN"]))
        deliverer = start_deliverer(sb)
        try:
            wait(lambda: len(receiver.received) == 2)
        finally:
            deliverer.stop()
    posted = [json.loads(body) for _, body in receiver.received]
    assert [(e["type"], e["object"]["id"]) for e in posted] == [
        ("transfer.crypto_deposit.pending", sent["id"]),
        ("transfer.crypto_deposit.completed", sent["id"]),
    ]
    assert posted[1]["object"]["crypto_tx_hash"] == sent["crypto_tx_hash"]
