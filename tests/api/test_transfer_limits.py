"""Issue 19: GET /v2/transfer/limits/utilizations lists the sandbox's per-withdrawal caps
as the service lists single-transaction limits (no id, period 0, remaining = limit)."""

from __future__ import annotations

from typing import Any

import pytest

PATH = "/v2/transfer/limits/utilizations"
ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


def _limits(sandbox: Any, transfer_type: str = "CRYPTO_WITHDRAWAL", **kw: Any) -> Any:
    return sandbox.get(PATH, params={"transfer_type": transfer_type}, **kw)


def test_crypto_withdrawals_list_each_assets_cap(http_sandbox: Any) -> None:
    r = _limits(http_sandbox)
    assert r.status_code == 200, r.text
    items = r.json()["items"]
    by_asset = {i["limit_asset"]: i for i in items}
    assert [i["limit_asset"] for i in items] == sorted(by_asset)
    assert by_asset["BTC"] == {
        "rule_id": "sandbox-per-withdrawal-BTC",
        "transfer_types": ["CRYPTO_WITHDRAWAL"],
        "period_seconds": "0",
        "limit": "0.002",
        "remaining": "0.002",
        "limit_asset": "BTC",
    }
    assert {a: i["limit"] for a, i in by_asset.items()} == {
        "AAVE": "10",
        "BCH": "0.05",
        "BTC": "0.002",
        "ETH": "0.05",
        "LINK": "10",
        "LTC": "0.05",
        "MATIC": "10",
        "PAXG": "1000000",
        "PYUSD": "1000000",
        "SOL": "0.5",
        "UNI": "10",
        "USDC": "1000000",
        "USDG": "1000000",
        "USDP": "1000000",
    }


def test_a_withdrawal_leaves_a_single_transaction_limit_whole(http_sandbox: Any) -> None:
    """The service's rule for a single-transaction limit: its use is one withdrawal at a
    time, so remaining stays the limit after any withdrawal, and the cap still refuses
    one above it."""
    http_sandbox.deposit("BTC", "1")
    body = {
        "profile_id": "default",
        "asset": "BTC",
        "destination_address": ADDRESS,
        "crypto_network": "BITCOIN",
        "amount": "0.002",
    }
    assert http_sandbox.post("/v2/transfer/crypto-withdrawals", body).status_code == 200
    http_sandbox.advance(10)
    btc = {i["limit_asset"]: i for i in _limits(http_sandbox).json()["items"]}["BTC"]
    assert btc["remaining"] == btc["limit"] == "0.002"
    over = http_sandbox.post("/v2/transfer/crypto-withdrawals", {**body, "amount": "0.0021"})
    assert over.status_code == 400
    assert over.json()["meta"]["limit"] == btc["limit"]


@pytest.mark.sandex(settings={"withdrawal_caps": {"BTC": "0.5", "USD": "25000"}})
def test_configured_caps_are_the_listed_ones(http_sandbox: Any) -> None:
    sb = http_sandbox
    by_asset = {i["limit_asset"]: i for i in _limits(sb).json()["items"]}
    assert by_asset["BTC"]["limit"] == by_asset["BTC"]["remaining"] == "0.5"
    assert by_asset["USD"]["limit"] == "25000"


def test_other_transfer_types_have_no_limit_and_the_type_is_required(http_sandbox: Any) -> None:
    for kind in ("CRYPTO_DEPOSIT", "INTERNAL_TRANSFER_DEBIT", "PAXOS_TRANSFER_DEBIT"):
        r = _limits(http_sandbox, kind)
        assert r.status_code == 200 and r.json() == {"items": []}, (kind, r.text)
    missing = http_sandbox.get(PATH)
    assert missing.status_code == 400
    assert missing.json()["meta"]["field"] == "transfer_type"
    bad = _limits(http_sandbox, "TELEPORT")
    assert bad.status_code == 400 and bad.json()["meta"]["field"] == "transfer_type"


def test_the_limit_scope_is_needed_and_given_with_transfer_reads(http_sandbox: Any) -> None:
    narrow = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="funding:read_profile"
    )
    assert _limits(http_sandbox, headers=narrow).status_code == 403
    reads = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="transfer:read_transfer_limit"
    )
    assert _limits(http_sandbox, headers=reads).status_code == 200
    headers, _ = http_sandbox.tenant()
    assert _limits(http_sandbox, headers=headers).json() == _limits(http_sandbox).json()
