"""Sandbox deposits, fiat deposit instructions and sandbox fiat deposits (interface 4.4)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

WIRE = {
    "account_number": "12345678",
    "fiat_account_owner_address": {"country": "US", "city": "Austin"},
    "routing_details": {
        "routing_number_type": "ABA",
        "routing_number": "021000021",
        "bank_name": "Example Bank",
        "bank_address": {"country": "US"},
    },
}


def _names(problem: dict[str, Any], field: str) -> bool:
    """A 400 names the field in its text or in `meta.field`."""
    return field in problem["detail"] or field in problem.get("meta", {}).get("field", "")


def _memo(sandbox: Any, **kw: Any) -> str:
    r = sandbox.post(
        "/v2/transfer/fiat-deposit-instructions",
        {"profile_id": "default", "fiat_network": "WIRE", **kw},
    )
    assert r.status_code == 200, r.text
    return r.json()["memo_id"]  # type: ignore[no-any-return]


def _wire(sandbox: Any, memo: str, amount: str = "150.33", **kw: Any) -> Any:
    body = {
        "amount": amount,
        "asset": "USD",
        "memo_id": memo,
        "fiat_network_instructions": {"wire": WIRE},
    }
    body.update(kw)
    return sandbox.post("/v2/sandbox/fiat-deposits", body)


def test_a_crypto_sandbox_deposit_is_a_completed_crypto_deposit(http_sandbox: Any) -> None:
    r = http_sandbox.post(
        "/v2/sandbox/profiles/default/deposit",
        {"asset": "BTC", "amount": "0.1", "crypto_network": "BITCOIN"},
    )
    assert r.status_code == 200
    transfer = http_sandbox.get(f"/v2/transfer/transfers/{r.json()['activity_id']}").json()
    assert transfer["type"] == "CRYPTO_DEPOSIT"
    assert transfer["direction"] == "CREDIT"
    assert transfer["status"] == "COMPLETED"
    assert transfer["crypto_network"] == "BITCOIN"
    assert len(transfer["crypto_tx_hash"]) == 64
    assert http_sandbox.balance("BTC")["available"] == "0.1"


def test_a_sandbox_deposit_without_network_is_a_wire_deposit(http_sandbox: Any) -> None:
    activity = http_sandbox.deposit("USD", "1000")["activity_id"]
    transfer = http_sandbox.get(f"/v2/transfer/transfers/{activity}").json()
    assert transfer["type"] == "WIRE_DEPOSIT"
    assert (transfer["amount"], transfer["fee"], transfer["total"]) == ("1000", "0", "1000")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"asset": "BTC", "amount": "-1"}, "amount"),
        ({"asset": "BTC", "amount": "1e-8"}, "amount"),
        ({"asset": "BTC", "amount": "0"}, "amount"),
        ({"asset": "BTC", "amount": "0.000000001"}, "amount"),
        ({"asset": "DOGE", "amount": "1"}, "asset"),
        ({"asset": "BTC", "amount": "1", "crypto_network": "ETHEREUM"}, "crypto_network"),
        ({"asset": "BTC", "amount": "1", "crypto_network": "MOON"}, "crypto_network"),
        ({"asset": "BTC", "amount": 1}, "amount"),
    ],
)
def test_bad_sandbox_deposits_are_400s_naming_the_field(
    http_sandbox: Any, body: dict[str, Any], field: str
) -> None:
    r = http_sandbox.post("/v2/sandbox/profiles/default/deposit", body)
    assert r.status_code == 400, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert _names(r.json(), field)
    assert http_sandbox.balance("BTC")["available"] == "0"


def test_too_many_decimals_for_the_asset_is_exceed_precision(http_sandbox: Any) -> None:
    r = http_sandbox.post(
        "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "1.001"}
    )
    assert r.status_code == 400
    assert r.json()["type"].endswith("/exceed-precision")
    assert r.json()["detail"] == "max precision allowed for asset USD is 2"


def test_fiat_deposit_instructions_issue_a_unique_memo_bound_to_the_profile(
    http_sandbox: Any,
) -> None:
    profile = http_sandbox.post("/v2/profiles", {"nickname": "wires"}).json()
    r = http_sandbox.post(
        "/v2/transfer/fiat-deposit-instructions",
        {
            "profile_id": profile["id"],
            "fiat_network": "WIRE",
            "ref_id": "i-1",
            "metadata": {"k": "v"},
        },
    )
    assert r.status_code == 200
    made = r.json()
    assert made["profile_id"] == profile["id"]
    assert made["status"] == "VALID"
    assert made["metadata"] == {"k": "v"}
    assert (
        made["fiat_network_instructions"]["wire"]["routing_details"]["routing_number_type"] == "ABA"
    )
    assert http_sandbox.get(f"/v2/transfer/fiat-deposit-instructions/{made['id']}").json() == made
    other = _memo(http_sandbox)
    assert other != made["memo_id"]
    listed = http_sandbox.get(
        "/v2/transfer/fiat-deposit-instructions", params={"ref_ids": "i-1"}
    ).json()
    assert listed["items"] == [made]
    again = http_sandbox.post(
        "/v2/transfer/fiat-deposit-instructions",
        {"profile_id": profile["id"], "fiat_network": "WIRE", "ref_id": "i-1"},
    )
    assert again.status_code == 409
    assert again.json()["meta"]["existing"] == made


def test_a_wire_is_credited_a_minute_later_less_the_wire_fee_as_the_real_sandbox(
    http_sandbox: Any,
) -> None:
    """The defaults are the real http_sandbox's figures: credited about a minute after it is
    sent, less its wire fee (its own example: amount 150.33, fee 30, total 120.33)."""
    profile = http_sandbox.post("/v2/profiles", {"nickname": "wires"}).json()
    memo = _memo(http_sandbox, profile_id=profile["id"])
    r = _wire(http_sandbox, memo)
    assert r.status_code == 200
    assert r.json() == {}
    assert http_sandbox.balance("USD", profile["id"])["available"] == "0"
    http_sandbox.advance(59)
    assert http_sandbox.balance("USD", profile["id"])["available"] == "0"
    http_sandbox.advance(1)
    assert http_sandbox.balance("USD", profile["id"])["available"] == "120.33"
    assert http_sandbox.balance("USD")["available"] == "0"
    (transfer,) = http_sandbox.get(
        "/v2/transfer/transfers", params={"type": "WIRE_DEPOSIT"}
    ).json()["items"]
    assert transfer["direction"] == "CREDIT"
    assert transfer["status"] == "COMPLETED"
    assert transfer["memo"] == memo
    assert (transfer["amount"], transfer["fee"], transfer["total"]) == ("150.33", "30", "120.33")
    assert transfer["created_at"] == "2024-01-01T00:01:00.000000Z"


@pytest.mark.sandex(settings={"wire_fee": "0", "fiat_deposit_delay_seconds": 2})
def test_the_wire_delay_and_fee_are_settings(http_sandbox: Any) -> None:
    sandbox = http_sandbox
    _wire(sandbox, _memo(sandbox), "150.33")
    sandbox.advance(2)
    (transfer,) = sandbox.get("/v2/transfer/transfers").json()["items"]
    assert (transfer["amount"], transfer["fee"], transfer["total"]) == ("150.33", "0", "150.33")
    assert transfer["created_at"] == "2024-01-01T00:00:02.000000Z"


@pytest.mark.sandex(settings={"wire_fee": "30", "fiat_deposit_delay_seconds": 0})
def test_the_wire_fee_is_deducted_from_the_total(http_sandbox: Any) -> None:
    sandbox = http_sandbox
    _wire(sandbox, _memo(sandbox), "150.33")
    (transfer,) = sandbox.get("/v2/transfer/transfers").json()["items"]
    assert (transfer["amount"], transfer["fee"], transfer["total"]) == ("150.33", "30", "120.33")
    assert sandbox.balance("USD")["available"] == "120.33"


@pytest.mark.sandex(settings={"wire_fee": "30", "fiat_deposit_delay_seconds": 0})
def test_a_wire_smaller_than_the_fee_fails_and_credits_nothing(http_sandbox: Any) -> None:
    sandbox = http_sandbox
    _wire(sandbox, _memo(sandbox), "10")
    (transfer,) = sandbox.get("/v2/transfer/transfers").json()["items"]
    assert transfer["status"] == "FAILED"
    assert sandbox.balance("USD")["available"] == "0"


def test_an_unknown_or_foreign_memo_is_404_and_nothing_is_credited(http_sandbox: Any) -> None:
    r = _wire(http_sandbox, "NOSUCHMEMO")
    assert r.status_code == 404
    assert r.headers["content-type"] == "application/problem+json"
    headers, _ = http_sandbox.tenant()
    memo = _memo(http_sandbox)
    r = http_sandbox.post(
        "/v2/sandbox/fiat-deposits",
        {
            "amount": "1",
            "asset": "USD",
            "memo_id": memo,
            "fiat_network_instructions": {"wire": WIRE},
        },
        headers=headers,
    )
    assert r.status_code == 404
    http_sandbox.advance(10)
    assert http_sandbox.get("/v2/transfer/transfers").json()["items"] == []


def _without(path: list[str]) -> dict[str, Any]:
    wire = copy.deepcopy(WIRE)
    node: Any = wire
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return wire


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"amount": "1.234"}, "amount"),
        ({"amount": "-5"}, "amount"),
        ({"amount": "0"}, "amount"),
        ({"asset": "EUR"}, "asset"),
        ({"memo_id": None}, "memo_id"),
        ({"fiat_network_instructions": None}, "fiat_network_instructions"),
        ({"fiat_network_instructions": {}}, "fiat_network_instructions"),
        ({"fiat_network_instructions": {"wire": _without(["account_number"])}}, "account_number"),
        (
            {
                "fiat_network_instructions": {
                    "wire": _without(["fiat_account_owner_address", "country"])
                }
            },
            "country",
        ),
        (
            {
                "fiat_network_instructions": {
                    "wire": _without(["routing_details", "bank_address", "country"])
                }
            },
            "country",
        ),
        (
            {"fiat_network_instructions": {"wire": _without(["routing_details", "bank_name"])}},
            "bank_name",
        ),
        ({"fiat_account_owner": {"institution_details": {}}}, "name"),
    ],
)
def test_every_fiat_deposit_rule_is_a_400_naming_the_field(
    http_sandbox: Any, overrides: dict[str, Any], field: str
) -> None:
    body = {
        "amount": "10",
        "asset": "USD",
        "memo_id": _memo(http_sandbox),
        "fiat_network_instructions": {"wire": WIRE},
    }
    for key, value in overrides.items():
        if value is None:
            del body[key]
        else:
            body[key] = value
    r = http_sandbox.post("/v2/sandbox/fiat-deposits", body)
    assert r.status_code == 400, r.text
    assert _names(r.json(), field)
    http_sandbox.advance(10)
    assert http_sandbox.balance("USD")["available"] == "0"


def test_fiat_deposit_requires_its_scope(http_sandbox: Any) -> None:
    headers = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="funding:read_profile"
    )
    r = http_sandbox.post(
        "/v2/sandbox/fiat-deposits",
        {
            "amount": "1",
            "asset": "USD",
            "memo_id": "x",
            "fiat_network_instructions": {"wire": WIRE},
        },
        headers=headers,
    )
    assert r.status_code == 403
    assert "transfer:write_sandbox_fiat_deposit" in r.json()["detail"]


def test_empty_optional_address_lines_are_lines_left_out(http_sandbox: Any) -> None:
    """The service's own http_sandbox wire example sends `"address2": ""`; an empty required
    line (`country`) is still a 400 naming it."""
    lines = {"address1": "1 Main St", "address2": "", "province": "", "zip_code": ""}
    wire = copy.deepcopy(WIRE)
    wire["fiat_account_owner_address"].update(lines)
    wire["routing_details"]["bank_address"].update(lines)
    body = {
        "amount": "150.33",
        "asset": "USD",
        "memo_id": _memo(http_sandbox),
        "fiat_network_instructions": {"wire": wire},
    }
    assert http_sandbox.post("/v2/sandbox/fiat-deposits", body).status_code == 200
    wire["routing_details"]["bank_address"]["country"] = ""
    r = http_sandbox.post("/v2/sandbox/fiat-deposits", body)
    assert r.status_code == 400
    assert r.json()["meta"]["field"] == (
        "fiat_network_instructions.wire.routing_details.bank_address.country"
    )
    http_sandbox.advance(60)
    assert http_sandbox.balance("USD")["available"] == "120.33"
