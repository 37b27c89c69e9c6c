"""Guaranteed crypto withdrawal fees (interface 4.3): POST /v2/transfer/fees/crypto-withdrawal."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.support.database import query
from tests.support.reference import component_schemas
from tests.support.transfer_helpers import (
    ADDRESSES,
    EVM_ADDRESS,
    fee_body,
    problem,
    quote,
    withdrawal_body,
)

PATH = "/v2/transfer/fees/crypto-withdrawal"


def test_a_quote_by_amount_has_every_field_and_total_is_amount_plus_fee(http_sandbox: Any) -> None:
    r = http_sandbox.post(PATH, fee_body("BTC", "BITCOIN", amount="0.001"))
    assert r.status_code == 200, r.text
    body = r.json()
    schema = component_schemas()
    assert set(schema["CryptoWithdrawalFee"]["required"]) <= set(body)
    assert set(body) <= set(schema["CryptoWithdrawalFee"]["properties"])
    assert body["asset"] == "BTC"
    assert body["crypto_network"] == "BITCOIN"
    assert body["destination_address"] == ADDRESSES["BITCOIN"]
    assert body["fee"] == "0.00002"
    assert body["amount"] == "0.001"
    assert body["total"] == "0.00102"
    assert body["expires_at"] == "2024-01-01T00:01:00.000000Z"


def test_a_quote_by_total_computes_the_amount(http_sandbox: Any) -> None:
    body = quote(http_sandbox, asset="ETH", network="ETHEREUM", total="0.01")
    assert body["fee"] == "0.0005"
    assert body["total"] == "0.01"
    assert body["amount"] == "0.0095"


@pytest.mark.parametrize(
    ("asset", "network", "fee"),
    [
        ("ETH", "ETHEREUM", "0.0005"),
        ("ETH", "BASE", "0.00001"),
        ("USDC", "ETHEREUM", "3"),
        ("USDC", "SOLANA", "0.01"),
        ("PYUSD", "STELLAR", "0.01"),
        ("SOL", "SOLANA", "0.000005"),
    ],
)
def test_the_fee_depends_on_asset_and_network(
    http_sandbox: Any, asset: str, network: str, fee: str
) -> None:
    assert quote(http_sandbox, asset=asset, network=network, amount="0.01")["fee"] == fee


def test_the_schedule_is_configurable(sandbox_factory: Any) -> None:
    sb = sandbox_factory(withdrawal_fees={"BTC": {"BITCOIN": "0.0001"}})
    assert quote(sb)["fee"] == "0.0001"
    assert quote(sb, asset="ETH", network="ETHEREUM")["fee"] == "0.0005"


@pytest.mark.parametrize(
    "sizing",
    [{}, {"amount": "0.1", "total": "0.2"}],
    ids=["neither", "both"],
)
def test_exactly_one_of_amount_and_total(http_sandbox: Any, sizing: dict[str, str]) -> None:
    body = fee_body()
    body.pop("amount")
    body.update(sizing)
    detail = problem(http_sandbox.post(PATH, body), 400)["detail"]
    assert "amount" in detail and "total" in detail


@pytest.mark.parametrize("field", ["amount", "total"])
@pytest.mark.parametrize("value", ["0", "0.000", "-1", "1e-3", "", 1])
def test_amount_and_total_must_be_positive_decimal_strings(
    http_sandbox: Any, field: str, value: Any
) -> None:
    body = problem(http_sandbox.post(PATH, fee_body(**{field: value})), 400)
    assert field in body["detail"]


def test_a_total_that_does_not_cover_the_fee_is_refused(http_sandbox: Any) -> None:
    body = problem(http_sandbox.post(PATH, fee_body(total="0.00002")), 400)
    assert "total" in body["detail"] and "fee" in body["detail"]


def test_amount_precision_per_asset(http_sandbox: Any) -> None:
    body = problem(http_sandbox.post(PATH, fee_body(amount="0.000000001")), 400, "exceed-precision")
    assert body["detail"] == "max precision allowed for asset BTC is 8"
    body = problem(
        http_sandbox.post(PATH, fee_body("PYUSD", "ETHEREUM", total="1.0000001")),
        400,
        "exceed-precision",
    )
    assert body["detail"] == "max precision allowed for asset PYUSD is 6"


@pytest.mark.parametrize(
    ("asset", "network"),
    [("BTC", "ETHEREUM"), ("ETH", "POLYGON_POS"), ("USDP", "BASE"), ("SOL", "STELLAR")],
)
def test_the_asset_must_travel_on_the_network(http_sandbox: Any, asset: str, network: str) -> None:
    body = problem(http_sandbox.post(PATH, fee_body(asset, network)), 400)
    assert "crypto_network" in body["detail"]


def test_unknown_assets_and_networks_are_refused(http_sandbox: Any) -> None:
    assert "asset" in problem(http_sandbox.post(PATH, fee_body("DOGE", "BITCOIN")), 400)["detail"]
    assert "asset" in problem(http_sandbox.post(PATH, fee_body("USD", "BITCOIN")), 400)["detail"]
    body = fee_body()
    body["crypto_network"] = "TRON"
    assert "crypto_network" in problem(http_sandbox.post(PATH, body), 400)["detail"]


@pytest.mark.parametrize(
    ("network", "address"),
    [
        ("BITCOIN", "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3"),
        ("ETHEREUM", EVM_ADDRESS.replace("a", "A", 1)),
        ("SOLANA", "0OIl"),
        ("STELLAR", "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGA"),
    ],
)
def test_a_malformed_address_is_refused_naming_the_field(
    http_sandbox: Any, network: str, address: str
) -> None:
    asset = {"BITCOIN": "BTC", "ETHEREUM": "ETH", "SOLANA": "SOL", "STELLAR": "USDC"}[network]
    r = http_sandbox.post(PATH, fee_body(asset, network, destination_address=address))
    assert problem(r, 400)["detail"].startswith("destination_address invalid")


def test_the_quote_expires_as_an_event_at_expires_at(sandbox: Any) -> None:
    fee = quote(sandbox)
    sandbox.advance(59)
    types = [e.type for e in sandbox.engine.store.read()]
    assert "WithdrawalFeeExpired" not in types
    sandbox.advance(1)
    expired = [e for e in sandbox.engine.store.read() if e.type == "WithdrawalFeeExpired"]
    assert [e.data["fee_id"] for e in expired] == [fee["id"]]
    assert expired[0].occurred_at == fee["expires_at"]
    rows = query(sandbox.db, "SELECT status FROM withdrawal_fees WHERE id = ?", (fee["id"],))
    assert rows == [("EXPIRED",)]


def test_the_validity_is_configurable(sandbox_factory: Any) -> None:
    sb = sandbox_factory(withdrawal_fee_ttl_seconds=Decimal("2.5"))
    assert quote(sb)["expires_at"] == "2024-01-01T00:00:02.500000Z"


def test_the_scope_is_required(http_sandbox: Any) -> None:
    headers = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="transfer:write_crypto_withdrawal"
    )
    r = http_sandbox.post(PATH, fee_body(), headers=headers)
    assert r.status_code == 403
    assert http_sandbox.post(PATH, fee_body(), headers={}).status_code == 401


def test_unknown_fields_are_ignored_unless_strict(sandbox_factory: Any) -> None:
    """The operation takes no profile: one sent is ignored (docs/configuration.md's
    strict_fields refuses it by name)."""
    r = sandbox_factory().post(PATH, fee_body(profile_id="default"))
    assert r.status_code == 200 and "profile_id" not in r.json()
    r = sandbox_factory("strict.db", strict_fields=True).post(PATH, fee_body(profile_id="default"))
    assert problem(r, 400)["meta"] == {"field": "profile_id"}


@pytest.mark.parametrize(
    "bad",
    [
        {"withdrawal_fees": {"BTC": {"BITCOIN": "-0.1"}}},
        {"withdrawal_fee_ttl_seconds": "-1"},
        {"withdrawal_confirmation_seconds": {"BITCOIN": "-1"}},
        {"withdrawal_caps": {"BTC": "0"}},
        {"withdrawal_minimums": {"BTC": "-0.1"}},
    ],
)
def test_settings_refuse_negative_fees_delays_and_caps(bad: dict[str, Any]) -> None:
    from pydantic import ValidationError

    from sandex.engine.config.settings import Settings

    with pytest.raises(ValidationError):
        Settings(**bad)


@pytest.mark.parametrize(
    ("asset", "network", "sizing"),
    [
        ("BTC", "BITCOIN", {"amount": "5"}),
        ("BTC", "BITCOIN", {"amount": "0.00200001"}),
        ("BTC", "BITCOIN", {"total": "0.00202001"}),  # an amount of 0.00200001 after the fee
        ("ETH", "ETHEREUM", {"amount": "1"}),
        ("USDC", "SOLANA", {"amount": "999999999999"}),
    ],
)
def test_a_quote_above_the_cap_is_refused_as_the_withdrawal_would_be(
    http_sandbox: Any, asset: str, network: str, sizing: dict[str, str]
) -> None:
    """A quote for an amount no withdrawal may send was answered 200."""
    http_sandbox.deposit(asset, "1000000000000")
    refused = http_sandbox.post(PATH, fee_body(asset, network, **sizing))
    withdrawal = {**fee_body(asset, network, **sizing), "profile_id": "default"}
    same = http_sandbox.post("/v2/transfer/crypto-withdrawals", withdrawal)
    assert refused.status_code == 400, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json() == same.json()
    assert refused.json()["type"].endswith("/exceed-max-withdraw-limit")


def test_a_quote_at_the_cap_is_given_and_the_cap_is_a_setting(sandbox_factory: Any) -> None:
    sb = sandbox_factory()
    assert quote(sb, amount="0.002")["amount"] == "0.002"
    raised = sandbox_factory("raised.db", withdrawal_caps={"BTC": "1"})
    assert quote(raised, amount="1")["amount"] == "1"


def test_a_quote_below_the_minimum_is_refused_as_the_withdrawal_would_be(
    http_sandbox: Any,
) -> None:
    """A quote for an amount too small for any withdrawal was answered 200."""
    http_sandbox.deposit("BTC", "1")
    refused = http_sandbox.post(PATH, fee_body(amount="0.000009"))
    same = http_sandbox.post("/v2/transfer/crypto-withdrawals", withdrawal_body(amount="0.000009"))
    assert refused.status_code == 400, refused.text
    assert refused.json() == same.json()
    assert refused.json()["type"].endswith("/below-min-withdraw-limit")
    assert quote(http_sandbox, amount="0.00001")["amount"] == "0.00001"
