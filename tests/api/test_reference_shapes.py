"""Responses have the reference's shapes: every field known to it, every required one
present, every enum value one of its own."""

from __future__ import annotations

from typing import Any

from tests.support.reference import assert_matches, response_schema, schema

WIRE = {
    "account_number": "1",
    "fiat_account_owner_address": {"country": "US"},
    "routing_details": {
        "routing_number_type": "ABA",
        "routing_number": "021000021",
        "bank_name": "B",
        "bank_address": {"country": "US"},
    },
}


def test_profile_operations_match_the_reference(http_sandbox: Any) -> None:
    created = http_sandbox.post("/v2/profiles", {"nickname": "desk", "description": "d"}).json()
    assert_matches(created, response_schema("/profiles", "post"))
    assert_matches(http_sandbox.get("/v2/profiles").json(), response_schema("/profiles", "get"))
    assert_matches(
        http_sandbox.get("/v2/profiles/default").json(),
        response_schema("/profiles/{profile_id}", "get"),
    )
    http_sandbox.deposit("BTC", "1")
    assert_matches(
        http_sandbox.get("/v2/profiles/default/balances").json(),
        response_schema("/profiles/{profile_id}/balances", "get"),
    )
    assert_matches(
        http_sandbox.get("/v2/profiles/default/balances/BTC").json(),
        response_schema("/profiles/{profile_id}/balances/{asset}", "get"),
    )


def test_funding_operations_match_the_reference(http_sandbox: Any) -> None:
    deposit = http_sandbox.post(
        "/v2/sandbox/profiles/default/deposit",
        {"asset": "ETH", "amount": "1", "crypto_network": "ETHEREUM"},
    ).json()
    assert_matches(deposit, response_schema("/sandbox/profiles/{profile_id}/deposit", "post"))
    instructions = http_sandbox.post(
        "/v2/transfer/fiat-deposit-instructions",
        {"profile_id": "default", "fiat_network": "WIRE", "metadata": {"a": "b"}, "ref_id": "r"},
    ).json()
    assert_matches(instructions, response_schema("/transfer/fiat-deposit-instructions", "post"))
    assert_matches(
        http_sandbox.get("/v2/transfer/fiat-deposit-instructions").json(),
        response_schema("/transfer/fiat-deposit-instructions", "get"),
    )
    wire = http_sandbox.post(
        "/v2/sandbox/fiat-deposits",
        {
            "amount": "100.5",  # more than the wire fee
            "asset": "USD",
            "memo_id": instructions["memo_id"],
            "fiat_network_instructions": {"wire": WIRE},
        },
    ).json()
    assert_matches(wire, response_schema("/sandbox/fiat-deposits", "post"))
    http_sandbox.advance(60)  # a wire is credited a minute later
    transfers = http_sandbox.get("/v2/transfer/transfers").json()
    assert {t["type"] for t in transfers["items"]} == {"CRYPTO_DEPOSIT", "WIRE_DEPOSIT"}
    assert_matches(transfers, response_schema("/transfer/transfers", "get"))
    one = http_sandbox.get(f"/v2/transfer/transfers/{transfers['items'][0]['id']}").json()
    assert_matches(one, response_schema("/transfer/transfers/{id}", "get"))


def test_problems_match_the_reference_problem_shape(http_sandbox: Any) -> None:
    problem = schema("Problem")
    for r in (
        http_sandbox.get("/v2/profiles/nope"),
        http_sandbox.post("/v2/profiles", {"nickname": 1}),
        http_sandbox.http.get("/v2/profiles"),
        http_sandbox.post(
            "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "0.001"}
        ),
    ):
        assert r.headers["content-type"] == "application/problem+json"
        assert_matches(r.json(), problem)


def test_the_openapi_document_and_docs_ui_are_served(http_sandbox: Any) -> None:
    doc = http_sandbox.http.get("/openapi.json").json()
    ours = {(p, m) for p, ops in doc["paths"].items() for m in ops}
    for path, method in [
        ("/v2/profiles", "get"),
        ("/v2/profiles", "post"),
        ("/v2/profiles/{profile_id}/balances", "get"),
        ("/v2/sandbox/fiat-deposits", "post"),
        ("/v2/transfer/transfers", "get"),
        ("/oauth2/token", "post"),
    ]:
        assert (path, method) in ours
    docs = http_sandbox.http.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
