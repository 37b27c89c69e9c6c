"""Crypto withdrawals (interface 4.2): POST /v2/transfer/crypto-withdrawals."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import base58
import pytest

from sandex.engine.domain.ledger import FEES, WORLD, withdrawing
from sandex.engine.domain.transfers.withdrawals import CONVERSION
from tests.support.identity_helpers import approved_account
from tests.support.reference import component_schemas
from tests.support.transfer_helpers import (
    ADDRESSES,
    BTC_ADDRESS,
    EVM_ADDRESS,
    problem,
    profile_id,
    quote,
    transfer,
    usd_below_the_cent,
    withdraw,
    withdrawal_body,
)

PATH = "/v2/transfer/crypto-withdrawals"


def _ledger(sandbox: Any, account: str, asset: str) -> Decimal:
    return sandbox.engine.state.ledger.balance(account, asset)  # type: ignore[no-any-return]


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


# -- the created transfer ---------------------------------------------------------------


def test_a_withdrawal_is_a_pending_debit_with_every_required_field(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    identity, acct = approved_account(http_sandbox)
    body = _ok(
        withdraw(
            http_sandbox,
            amount="0.001",
            ref_id="w-1",
            metadata={"k": "v"},
            memo="m",
            identity_id=identity,
            account_id=acct,
        )
    )
    schema = component_schemas()
    assert set(schema["Transfer"]["required"]) <= set(body)
    assert set(body) <= set(schema["Transfer"]["properties"])
    pid = profile_id(http_sandbox)
    expected = {
        "profile_id": pid,
        "ref_id": "w-1",
        "amount": "0.001",
        "fee": "0.00002",
        "total": "0.00102",
        "asset": "BTC",
        "balance_asset": "BTC",
        "direction": "DEBIT",
        "type": "CRYPTO_WITHDRAWAL",
        "status": "PENDING",
        "destination_address": BTC_ADDRESS,
        "crypto_network": "BITCOIN",
        "metadata": {"k": "v"},
        "memo": "m",
        "identity_id": identity,
        "account_id": acct,
        "created_at": "2024-01-01T00:00:00.000000Z",
        "updated_at": "2024-01-01T00:00:00.000000Z",
    }
    assert {k: body[k] for k in expected} == expected
    assert "crypto_tx_hash" not in body
    assert transfer(http_sandbox, body["id"]) == body


def test_notional_value_is_the_usd_value_of_amount_plus_fee(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    http_sandbox.deposit("USDC", "100")
    btc = _ok(withdraw(http_sandbox, amount="0.001"))
    assert btc["notional_value"] == "43.35"  # 0.00102 BTC at the default 42,500 USD
    usdc = _ok(withdraw(http_sandbox, asset="USDC", network="SOLANA", amount="10"))
    assert usdc["notional_value"] == "10.01"  # a USD stablecoin is worth 1 USD


def test_a_price_source_sets_the_notional_value(sandbox: Any, monkeypatch: Any) -> None:
    engine = sandbox.engine
    source = (lambda state, asset: Decimal("50000"),)
    monkeypatch.setattr(engine, "registry", replace(engine.registry, price_sources=source))
    monkeypatch.setattr(engine, "_ctx", None)  # the next decision's context takes them
    sandbox.deposit("BTC", "1")
    assert _ok(withdraw(sandbox, amount="0.001"))["notional_value"] == "51.00"


def test_with_total_the_amount_is_total_minus_fee(http_sandbox: Any) -> None:
    http_sandbox.deposit("ETH", "1")
    body = _ok(withdraw(http_sandbox, asset="ETH", network="ETHEREUM", total="0.01"))
    assert (body["amount"], body["fee"], body["total"]) == ("0.0095", "0.0005", "0.01")
    assert http_sandbox.balance("ETH")["available"] == "0.99"


def test_a_total_that_leaves_nothing_after_the_fee_is_refused(http_sandbox: Any) -> None:
    http_sandbox.deposit("ETH", "1")
    r = withdraw(http_sandbox, asset="ETH", network="ETHEREUM", total="0.0005")
    assert "total" in problem(r, 400)["detail"]
    assert http_sandbox.balance("ETH")["available"] == "1"


@pytest.mark.parametrize("sizing", [{}, {"amount": "0.1", "total": "0.2"}], ids=["neither", "both"])
def test_exactly_one_of_amount_and_total(http_sandbox: Any, sizing: dict[str, str]) -> None:
    http_sandbox.deposit("BTC", "1")
    body = withdrawal_body()
    body.pop("amount")
    body.update(sizing)
    detail = problem(http_sandbox.post(PATH, body), 400)["detail"]
    assert "amount" in detail and "total" in detail


@pytest.mark.parametrize("value", ["0", "-0.1", "1e-3", ".", 0.001])
def test_amounts_are_positive_decimal_strings(http_sandbox: Any, value: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    assert "amount" in problem(withdraw(http_sandbox, amount=value), 400)["detail"]


# -- the hold and the network's verdict -------------------------------------------------


def test_total_is_held_at_once_and_posted_to_the_world_on_confirmation(sandbox: Any) -> None:
    sandbox.deposit("BTC", "1")
    pid = profile_id(sandbox)
    body = _ok(withdraw(sandbox, amount="0.001"))
    assert sandbox.balance("BTC")["available"] == "0.99898"
    assert _ledger(sandbox, withdrawing(pid), "BTC") == Decimal("0.00102")
    world_before = _ledger(sandbox, WORLD, "BTC")
    sandbox.advance(5)
    assert transfer(sandbox, body["id"])["status"] == "PENDING"
    sandbox.advance(1)  # BITCOIN confirms after 6 s by default
    done = transfer(sandbox, body["id"])
    assert done["status"] == "COMPLETED"
    assert done["updated_at"] == "2024-01-01T00:00:06.000000Z"
    assert len(done["crypto_tx_hash"]) == 64 and int(done["crypto_tx_hash"], 16) >= 0
    assert done["crypto_tx_index"] == "0"
    assert _ledger(sandbox, withdrawing(pid), "BTC") == 0
    assert _ledger(sandbox, WORLD, "BTC") - world_before == Decimal("0.001")
    assert _ledger(sandbox, FEES, "BTC") == Decimal("0.00002")
    assert sandbox.balance("BTC")["available"] == "0.99898"


def test_the_tx_hash_is_deterministic_from_the_seed(sandbox_factory: Any) -> None:
    hashes = []
    for name in ("a.db", "b.db"):
        sb = sandbox_factory(name)
        sb.deposit("BTC", "1")
        tid = _ok(withdraw(sb, amount="0.001"))["id"]
        sb.advance(10)
        hashes.append(transfer(sb, tid)["crypto_tx_hash"])
    assert hashes[0] == hashes[1]
    other = sandbox_factory("c.db", seed=8)
    other.deposit("BTC", "1")
    tid = _ok(withdraw(other, amount="0.001"))["id"]
    other.advance(10)
    assert transfer(other, tid)["crypto_tx_hash"] != hashes[0]


def test_tx_hashes_take_the_shape_of_their_network(http_sandbox: Any) -> None:
    http_sandbox.deposit("ETH", "1")
    http_sandbox.deposit("SOL", "1")
    eth = _ok(withdraw(http_sandbox, asset="ETH", network="BASE", amount="0.01"))["id"]
    sol = _ok(withdraw(http_sandbox, asset="SOL", network="SOLANA", amount="0.1"))["id"]
    http_sandbox.advance(10)
    eth_hash = transfer(http_sandbox, eth)["crypto_tx_hash"]
    assert eth_hash.startswith("0x") and len(eth_hash) == 66
    assert len(base58.b58decode(transfer(http_sandbox, sol)["crypto_tx_hash"])) == 64


@pytest.mark.sandex(settings={"withdrawal_confirmation_seconds": {"BITCOIN": 30}})
def test_the_confirmation_delay_is_configurable_per_network(http_sandbox: Any) -> None:
    sb = http_sandbox
    sb.deposit("BTC", "1")
    sb.deposit("SOL", "1")
    btc = _ok(withdraw(sb, amount="0.001"))["id"]
    sol = _ok(withdraw(sb, asset="SOL", network="SOLANA", amount="0.1"))["id"]
    sb.advance(1)
    assert transfer(sb, sol)["status"] == "COMPLETED"  # SOLANA keeps its 1 s default
    sb.advance(28)
    assert transfer(sb, btc)["status"] == "PENDING"
    sb.advance(1)
    assert transfer(sb, btc)["status"] == "COMPLETED"


def test_memo_sandbox_fail_ends_failed_and_returns_the_funds(sandbox: Any) -> None:
    sandbox.deposit("BTC", "1")
    pid = profile_id(sandbox)
    body = _ok(withdraw(sandbox, amount="0.001", memo="sandbox:fail"))
    assert body["status"] == "PENDING"
    assert sandbox.balance("BTC")["available"] == "0.99898"
    sandbox.advance(6)
    failed = transfer(sandbox, body["id"])
    assert failed["status"] == "FAILED"
    assert "sandbox:fail" in failed["status_details"]["sandbox_forced_failure"]["message"]
    assert "crypto_tx_hash" not in failed
    assert sandbox.balance("BTC")["available"] == "1"
    assert _ledger(sandbox, withdrawing(pid), "BTC") == 0
    assert _ledger(sandbox, FEES, "BTC") == 0


def test_a_pending_withdrawal_survives_a_restart(sandbox_factory: Any) -> None:
    sb = sandbox_factory("restart.db")
    sb.deposit("BTC", "1")
    tid = _ok(withdraw(sb, amount="0.001"))["id"]
    sb.close()
    again = sandbox_factory("restart.db")
    assert transfer(again, tid)["status"] == "PENDING"
    again.advance(6)
    assert transfer(again, tid)["status"] == "COMPLETED"


# -- guaranteed fees ----------------------------------------------------------------------


def test_a_valid_quote_fixes_the_fee_charged(sandbox: Any) -> None:
    sandbox.deposit("BTC", "1")
    fee = quote(sandbox, amount="0.001")
    sandbox.engine.settings.withdrawal_fees["BTC"] = {"BITCOIN": Decimal("0.0001")}
    body = _ok(withdraw(sandbox, amount="0.001", fee_id=fee["id"]))
    assert (body["fee"], body["total"]) == ("0.00002", "0.00102")
    assert _ok(withdraw(sandbox, amount="0.001"))["fee"] == "0.0001"


def test_without_fee_id_the_schedule_fee_is_charged(http_sandbox: Any) -> None:
    http_sandbox.deposit("USDC", "100")
    body = _ok(withdraw(http_sandbox, asset="USDC", network="ETHEREUM", amount="10"))
    assert (body["fee"], body["total"]) == ("3", "13")


def test_an_unknown_fee_id_is_not_found(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    body = problem(withdraw(http_sandbox, fee_id="9e5828e2-0a10-4273-aa9c-f50bd0eaf344"), 404)
    assert body["detail"] == "fee not found with id 9e5828e2-0a10-4273-aa9c-f50bd0eaf344"


def test_another_customers_fee_id_is_not_found(http_sandbox: Any) -> None:
    headers, _ = http_sandbox.tenant()
    fee = http_sandbox.post(
        "/v2/transfer/fees/crypto-withdrawal",
        {
            "asset": "BTC",
            "crypto_network": "BITCOIN",
            "destination_address": BTC_ADDRESS,
            "amount": "0.001",
        },
        headers=headers,
    ).json()
    http_sandbox.deposit("BTC", "1")
    problem(withdraw(http_sandbox, fee_id=fee["id"]), 404)


@pytest.mark.parametrize("wait", [60, 61, 3600])
def test_an_expired_fee_is_refused_with_its_expiry(http_sandbox: Any, wait: int) -> None:
    http_sandbox.deposit("BTC", "1")
    fee = quote(http_sandbox)
    http_sandbox.advance(wait)
    body = problem(withdraw(http_sandbox, fee_id=fee["id"]), 403, "expired")
    assert body["title"] == "Expired"
    assert body["meta"] == {"expired_at": fee["expires_at"]}
    assert body["detail"] == f"fee {fee['id']} expired at {fee['expires_at']}"
    assert http_sandbox.balance("BTC")["available"] == "1"


def test_a_fee_is_valid_until_just_before_expires_at(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    fee = quote(http_sandbox)
    http_sandbox.advance(59)
    _ok(withdraw(http_sandbox, fee_id=fee["id"]))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"asset": "ETH", "network": "ETHEREUM"}, "asset"),
        ({"asset": "ETH", "network": "BASE"}, "asset"),
        ({"destination_address": "3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy"}, "destination_address"),
    ],
)
def test_a_quote_for_another_asset_network_or_address_is_refused(
    http_sandbox: Any, change: dict[str, str], field: str
) -> None:
    http_sandbox.deposit("BTC", "1")
    http_sandbox.deposit("ETH", "1")
    fee = quote(http_sandbox)
    body = problem(withdraw(http_sandbox, fee_id=fee["id"], amount="0.001", **change), 400)
    assert "fee_id" in body["detail"] and field in body["detail"]


def test_a_quote_for_another_network_of_the_same_asset_is_refused(http_sandbox: Any) -> None:
    http_sandbox.deposit("ETH", "1")
    fee = quote(http_sandbox, asset="ETH", network="ETHEREUM", amount="0.01")
    r = withdraw(http_sandbox, asset="ETH", network="BASE", amount="0.01", fee_id=fee["id"])
    assert "crypto_network" in problem(r, 400)["detail"]


def test_an_amount_above_the_quoted_amount_is_refused(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    fee = quote(http_sandbox, amount="0.001")
    assert (
        "amount"
        in problem(withdraw(http_sandbox, amount="0.0011", fee_id=fee["id"]), 400)["detail"]
    )
    by_total = problem(withdraw(http_sandbox, total="0.0011", fee_id=fee["id"]), 400)
    assert "0.00108" in by_total["detail"]
    assert http_sandbox.balance("BTC")["available"] == "1"
    smaller = _ok(withdraw(http_sandbox, amount="0.0005", fee_id=fee["id"]))
    assert (smaller["fee"], smaller["total"]) == ("0.00002", "0.00052")


def test_a_quote_by_total_guarantees_the_amount_it_leaves(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    fee = quote(http_sandbox, total="0.001")
    body = _ok(withdraw(http_sandbox, total="0.001", fee_id=fee["id"]))
    assert (body["amount"], body["fee"], body["total"]) == ("0.00098", "0.00002", "0.001")


# -- funds ----------------------------------------------------------------------------------


def test_insufficient_funds_is_refused_and_debits_nothing(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "0.001")
    pid = profile_id(http_sandbox)
    body = problem(withdraw(http_sandbox, amount="0.001"), 403, "insufficient-funds")
    assert body["title"] == "Insufficient Funds"
    assert body["meta"] == {
        "profile_id": pid,
        "asset": "BTC",
        "available": "0.001",
        "needed": "0.00102",
    }
    assert (
        body["detail"]
        == f"insufficient BTC funds in profile {pid}: 0.00102 needed, 0.001 available"
    )
    assert http_sandbox.balance("BTC")["available"] == "0.001"
    assert http_sandbox.get(
        "/v2/transfer/transfers", params={"type": "CRYPTO_WITHDRAWAL"}
    ).json() == {"items": []}


def test_held_funds_cannot_be_withdrawn_twice(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "0.00102")
    _ok(withdraw(http_sandbox, amount="0.001"))
    problem(withdraw(http_sandbox, amount="0.001"), 403, "insufficient-funds")


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asset", "network"),
    [("BTC", "ETHEREUM"), ("ETH", "POLYGON_POS"), ("USDP", "BASE"), ("BCH", "BITCOIN")],
)
def test_the_asset_must_travel_on_the_network(http_sandbox: Any, asset: str, network: str) -> None:
    http_sandbox.deposit(asset, "1")
    assert (
        "crypto_network"
        in problem(withdraw(http_sandbox, asset=asset, network=network), 400)["detail"]
    )


@pytest.mark.parametrize(
    ("asset", "network"),
    [("ETH", "ETHEREUM"), ("ETH", "ARBITRUM_ONE"), ("ETH", "BASE"), ("USDP", "SOLANA")],
)
def test_an_asset_travels_on_each_of_its_networks(
    http_sandbox: Any, asset: str, network: str
) -> None:
    http_sandbox.deposit(asset, "1")
    _ok(withdraw(http_sandbox, asset=asset, network=network, amount="0.01"))


def test_crypto_network_is_an_enum(http_sandbox: Any) -> None:
    body = withdrawal_body()
    body["crypto_network"] = "bitcoin"
    assert "crypto_network" in problem(http_sandbox.post(PATH, body), 400)["detail"]


@pytest.mark.parametrize(
    ("asset", "network", "address"),
    [
        ("BTC", "BITCOIN", "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3"),
        ("BTC", "BITCOIN", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5"),
        ("LTC", "LITECOIN", "LUd28DgwFmae8thFhaPYHGVmps4XockqfR"),
        ("BCH", "BITCOIN_CASH", "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6b"),
        ("ETH", "ETHEREUM", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeaED"),
        ("ETH", "ETHEREUM", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1bea"),
        ("SOL", "SOLANA", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v1"),
        ("USDC", "STELLAR", "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGA"),
    ],
)
def test_a_malformed_address_is_refused_naming_the_field(
    http_sandbox: Any, asset: str, network: str, address: str
) -> None:
    http_sandbox.deposit(asset, "1")
    r = withdraw(
        http_sandbox, asset=asset, network=network, destination_address=address, amount="0.01"
    )
    assert problem(r, 400)["detail"].startswith("destination_address invalid")
    assert http_sandbox.balance(asset)["available"] == "1"


@pytest.mark.parametrize(("network", "address"), sorted(ADDRESSES.items()))
def test_a_well_formed_address_is_accepted_on_every_network(
    http_sandbox: Any, network: str, address: str
) -> None:
    asset = {
        "BITCOIN": "BTC",
        "BITCOIN_CASH": "BCH",
        "LITECOIN": "LTC",
        "SOLANA": "SOL",
        "STELLAR": "USDC",
        "POLYGON_POS": "USDC",
        "XLAYER": "USDG",
    }.get(network, "ETH")
    http_sandbox.deposit(asset, "1")
    _ok(
        withdraw(
            http_sandbox, asset=asset, network=network, destination_address=address, amount="0.001"
        )
    )


def test_amount_precision_per_asset(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    http_sandbox.deposit("PYUSD", "10")
    body = problem(withdraw(http_sandbox, amount="0.000000001"), 400, "exceed-precision")
    assert body["detail"] == "max precision allowed for asset BTC is 8"
    r = withdraw(http_sandbox, asset="PYUSD", network="ETHEREUM", total="5.0000001")
    assert (
        problem(r, 400, "exceed-precision")["detail"]
        == "max precision allowed for asset PYUSD is 6"
    )


CAPS = [
    ("BTC", "BITCOIN", "0.002", "0.00000001"),
    ("ETH", "ETHEREUM", "0.05", "0.000000000000000001"),
    ("BCH", "BITCOIN_CASH", "0.05", "0.00000001"),
    ("LTC", "LITECOIN", "0.05", "0.00000001"),
    ("SOL", "SOLANA", "0.5", "0.000000001"),
    ("AAVE", "ETHEREUM", "10", "0.000000000000000001"),
    ("MATIC", "POLYGON_POS", "10", "0.000000000000000001"),
    ("LINK", "ETHEREUM", "10", "0.000000000000000001"),
    ("UNI", "ETHEREUM", "10", "0.000000000000000001"),
    ("PAXG", "ETHEREUM", "1000000", "0.000000000000000001"),
    ("USDP", "ETHEREUM", "1000000", "0.000000000000000001"),
    ("PYUSD", "SOLANA", "1000000", "0.000001"),
    ("USDC", "BASE", "1000000", "0.000001"),
    ("USDG", "INK", "1000000", "0.000001"),
]


@pytest.mark.parametrize(("asset", "network", "limit", "unit"), CAPS)
def test_the_sandbox_per_withdrawal_caps(
    http_sandbox: Any, asset: str, network: str, limit: str, unit: str
) -> None:
    http_sandbox.deposit(asset, "2000000")
    _ok(withdraw(http_sandbox, asset=asset, network=network, amount=limit))
    over = format(Decimal(limit) + Decimal(unit), "f")
    body = problem(
        withdraw(http_sandbox, asset=asset, network=network, amount=over),
        400,
        "exceed-max-withdraw-limit",
    )
    assert body["meta"]["limit"] == limit
    assert body["meta"]["amount"] == over


def test_the_cap_applies_to_the_amount_left_by_a_total(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    _ok(withdraw(http_sandbox, total="0.00202"))  # amount 0.002
    body = problem(withdraw(http_sandbox, total="0.00203"), 400, "exceed-max-withdraw-limit")
    assert body["meta"]["amount"] == "0.00201"


@pytest.mark.parametrize(
    "metadata",
    [
        {f"k{i}": "v" for i in range(7)},
        {"k" * 101: "v"},
        {"k": "v" * 101},
    ],
    ids=["seven-pairs", "long-key", "long-value"],
)
def test_metadata_limits(http_sandbox: Any, metadata: dict[str, str]) -> None:
    http_sandbox.deposit("BTC", "1")
    assert "metadata" in problem(withdraw(http_sandbox, metadata=metadata), 400)["detail"]


def test_metadata_at_its_limits_is_kept(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    metadata = {f"{i}".ljust(100, "k"): "v" * 100 for i in range(6)}
    assert _ok(withdraw(http_sandbox, metadata=metadata))["metadata"] == metadata


# -- balance_asset ------------------------------------------------------------------------------


def test_balance_asset_debits_usd_for_a_stablecoin_withdrawal(sandbox: Any) -> None:
    sandbox.deposit("USD", "100")
    body = _ok(withdraw(sandbox, asset="USDC", network="SOLANA", amount="10", balance_asset="USD"))
    assert (body["asset"], body["balance_asset"], body["total"]) == ("USDC", "USD", "10.01")
    assert sandbox.balance("USD")["available"] == "89.99"
    assert sandbox.balance("USDC")["available"] == "0"
    world_usdc = _ledger(sandbox, WORLD, "USDC")
    sandbox.advance(1)
    assert transfer(sandbox, body["id"])["status"] == "COMPLETED"
    assert _ledger(sandbox, WORLD, "USDC") - world_usdc == Decimal("10")
    assert _ledger(sandbox, FEES, "USDC") == Decimal("0.01")
    assert _ledger(sandbox, CONVERSION, "USD") == Decimal("10.01")


def test_a_usd_balance_a_trade_left_below_the_cent_is_withdrawn_whole(http_sandbox: Any) -> None:
    """As a stablecoin of 18 places, by `total`: the balance's own places are accepted."""
    held = usd_below_the_cent(http_sandbox)
    body = _ok(
        withdraw(http_sandbox, asset="USDP", network="ETHEREUM", total=held, balance_asset="USD")
    )
    assert (body["balance_asset"], body["total"]) == ("USD", held)
    assert http_sandbox.balance("USD")["available"] == "0"


def test_balance_asset_may_be_another_usd_stablecoin(http_sandbox: Any) -> None:
    http_sandbox.deposit("USDP", "100")
    body = _ok(
        withdraw(http_sandbox, asset="PYUSD", network="SOLANA", amount="1", balance_asset="USDP")
    )
    assert body["balance_asset"] == "USDP"
    assert http_sandbox.balance("USDP")["available"] == "98.99"


def test_a_failed_stablecoin_withdrawal_returns_the_balance_asset(http_sandbox: Any) -> None:
    http_sandbox.deposit("USD", "100")
    tid = _ok(
        withdraw(
            http_sandbox,
            asset="USDG",
            network="SOLANA",
            amount="1",
            balance_asset="USD",
            memo="sandbox:fail",
        )
    )["id"]
    http_sandbox.advance(1)
    assert transfer(http_sandbox, tid)["status"] == "FAILED"
    assert http_sandbox.balance("USD")["available"] == "100"


@pytest.mark.parametrize(
    ("asset", "network", "balance_asset"),
    [("BTC", "BITCOIN", "USD"), ("ETH", "ETHEREUM", "BTC"), ("USDC", "SOLANA", "EUR")],
)
def test_balance_asset_is_only_for_usd_stablecoins(
    http_sandbox: Any, asset: str, network: str, balance_asset: str
) -> None:
    http_sandbox.deposit(balance_asset, "100")
    r = withdraw(
        http_sandbox, asset=asset, network=network, amount="0.001", balance_asset=balance_asset
    )
    assert "balance_asset" in problem(r, 400)["detail"]


def test_a_total_too_precise_for_the_balance_asset_is_refused(http_sandbox: Any) -> None:
    http_sandbox.deposit("USD", "100")
    r = withdraw(http_sandbox, asset="USDC", network="SOLANA", amount="1.001", balance_asset="USD")
    assert (
        problem(r, 400, "exceed-precision")["detail"] == "max precision allowed for asset USD is 2"
    )


def test_insufficient_funds_names_the_balance_asset(http_sandbox: Any) -> None:
    http_sandbox.deposit("USDC", "100")
    http_sandbox.deposit("USD", "1")
    r = withdraw(http_sandbox, asset="USDC", network="SOLANA", amount="10", balance_asset="USD")
    assert problem(r, 403, "insufficient-funds")["meta"]["asset"] == "USD"


# -- ref_id -------------------------------------------------------------------------------------


def test_a_second_withdrawal_with_the_same_ref_id_is_refused_with_the_first(
    http_sandbox: Any,
) -> None:
    http_sandbox.deposit("BTC", "1")
    first = _ok(withdraw(http_sandbox, ref_id="once"))
    body = problem(withdraw(http_sandbox, ref_id="once"), 409, "already-exists")
    assert body["title"] == "Already Exists"
    assert body["detail"] == "transfer already exists with ref_id 'once'"
    assert body["meta"]["existing"] == first
    assert http_sandbox.balance("BTC")["available"] == "0.99898"
    http_sandbox.advance(6)
    again = problem(withdraw(http_sandbox, ref_id="once", amount="0.0001"), 409, "already-exists")
    assert again["meta"]["existing"]["status"] == "COMPLETED"
    assert http_sandbox.balance("BTC")["available"] == "0.99898"


def test_a_replayed_ref_id_is_409_even_once_funds_or_fee_are_gone(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "0.00102")
    fee = quote(http_sandbox)
    _ok(withdraw(http_sandbox, ref_id="r", fee_id=fee["id"]))
    problem(withdraw(http_sandbox, ref_id="r", fee_id=fee["id"]), 409, "already-exists")
    http_sandbox.advance(120)
    problem(withdraw(http_sandbox, ref_id="r", fee_id=fee["id"]), 409, "already-exists")


def test_ref_ids_are_per_profile(http_sandbox: Any) -> None:
    desk = http_sandbox.post("/v2/profiles", {"nickname": "desk"}).json()["id"]
    http_sandbox.deposit("BTC", "1")
    http_sandbox.deposit("BTC", "1", profile=desk)
    _ok(withdraw(http_sandbox, ref_id="same"))
    _ok(withdraw(http_sandbox, ref_id="same", profile_id=desk))


# -- who may withdraw, and where withdrawals show --------------------------------------------------


def test_another_customers_profile_is_not_found(http_sandbox: Any) -> None:
    headers, creds = http_sandbox.tenant()
    http_sandbox.deposit("BTC", "1", profile=creds["profile_id"], headers=headers)
    r = withdraw(http_sandbox, profile_id=creds["profile_id"])
    assert problem(r, 404)["detail"] == f"profile not found with id {creds['profile_id']}"


def test_the_scope_is_required(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    headers = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="fee:write_crypto_withdrawal_fee"
    )
    assert http_sandbox.post(PATH, withdrawal_body(), headers=headers).status_code == 403
    assert http_sandbox.post(PATH, withdrawal_body(), headers={}).status_code == 401


def test_withdrawals_are_listed_with_their_filters(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    done = _ok(withdraw(http_sandbox, ref_id="a"))["id"]
    failed = _ok(withdraw(http_sandbox, ref_id="b", memo="sandbox:fail"))["id"]
    http_sandbox.advance(6)
    pending = _ok(withdraw(http_sandbox, ref_id="c"))["id"]

    def ids(**params: Any) -> list[str]:
        r = http_sandbox.get("/v2/transfer/transfers", params=params)
        assert r.status_code == 200, r.text
        return [t["id"] for t in r.json()["items"]]

    assert ids(type="CRYPTO_WITHDRAWAL") == [pending, failed, done]
    assert ids(type="CRYPTO_WITHDRAWAL", statuses="COMPLETED") == [done]
    assert ids(statuses="FAILED") == [failed]
    assert ids(ref_ids="c") == [pending]
    assert ids(crypto_tx_hashes=transfer(http_sandbox, done)["crypto_tx_hash"]) == [done]
    assert ids(**{"updated_at.gte": "2024-01-01T00:00:06Z", "type": "CRYPTO_WITHDRAWAL"}) == [
        pending,
        failed,
        done,
    ]
    assert ids(**{"created_at.gte": "2024-01-01T00:00:06Z"}) == [pending]


def test_an_evm_address_keeps_its_case(http_sandbox: Any) -> None:
    http_sandbox.deposit("ETH", "1")
    body = _ok(withdraw(http_sandbox, asset="ETH", network="ETHEREUM", amount="0.01"))
    assert body["destination_address"] == EVM_ADDRESS


@pytest.mark.sandex(settings={"withdrawal_confirmation_seconds": {"BITCOIN": 0}})
def test_a_zero_confirmation_delay_completes_in_the_same_request(http_sandbox: Any) -> None:
    sb = http_sandbox
    sb.deposit("BTC", "1")
    body = _ok(withdraw(sb, amount="0.001"))
    assert body["status"] == "COMPLETED"
    assert body["crypto_tx_hash"]


# -- beneficiary -------------------------------------------------------------------------


def _requested_beneficiaries(sandbox: Any) -> list[Any]:
    events = sandbox.engine.store.read(after=0)
    return [e.data["beneficiary"] for e in events if e.type == "CryptoWithdrawalRequested"]


@pytest.mark.parametrize(
    "beneficiary",
    [
        {"person_details": {"first_name": "Ada", "last_name": "Lovelace"}},
        {"institution_details": {"name": "Analytical Engines Ltd"}},
    ],
)
def test_a_beneficiary_in_the_references_shape_is_kept(sandbox: Any, beneficiary: Any) -> None:
    sandbox.deposit("BTC", "1")
    _ok(withdraw(sandbox, amount="0.001", beneficiary=beneficiary))
    assert _requested_beneficiaries(sandbox) == [beneficiary]


@pytest.mark.parametrize(
    ("beneficiary", "field"),
    [
        ({"person_details": {"first_name": "Ada"}}, "beneficiary.person_details.last_name"),
        (
            {"person_details": {"first_name": 1, "last_name": "L"}},
            "beneficiary.person_details.first_name",
        ),
        ({"institution_details": {"name": "x" * 201}}, "beneficiary.institution_details.name"),
        ({"person_details": "Ada Lovelace"}, "beneficiary.person_details"),
        (["Ada"], "beneficiary"),
        ("Ada", "beneficiary"),
    ],
)
def test_a_beneficiary_of_another_shape_is_a_400_naming_the_field(
    sandbox: Any, beneficiary: Any, field: str
) -> None:
    """Any JSON up to the body limit was stored in the log as a beneficiary."""
    sandbox.deposit("BTC", "1")
    r = withdraw(sandbox, amount="0.001", beneficiary=beneficiary)
    assert r.status_code == 400, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["meta"]["field"].startswith(field)
    assert _requested_beneficiaries(sandbox) == []


UNKNOWN_IN_BENEFICIARY = [
    ({"name": "n"}, "beneficiary.name", {}),
    (
        {"institution_details": {"name": "n", "notes": {"a": [1, 2, 3]}}},
        "beneficiary.institution_details.notes",
        {"institution_details": {"name": "n"}},
    ),
    ({f"k{i}": "v" * 900 for i in range(60)}, "beneficiary.k0", {}),
]


@pytest.mark.parametrize(("beneficiary", "field", "kept"), UNKNOWN_IN_BENEFICIARY)
def test_a_beneficiarys_unknown_fields_are_never_stored(
    sandbox_factory: Any, beneficiary: Any, field: str, kept: Any
) -> None:
    """Ignored by default (only the reference's fields are kept), a 400 naming the field
    with `strict_fields`."""
    lenient = sandbox_factory()
    lenient.deposit("BTC", "1")
    _ok(withdraw(lenient, amount="0.001", beneficiary=beneficiary))
    assert _requested_beneficiaries(lenient) == [kept]
    strict = sandbox_factory("strict.db", strict_fields=True)
    strict.deposit("BTC", "1")
    r = withdraw(strict, amount="0.001", beneficiary=beneficiary)
    assert r.status_code == 400, r.text
    assert r.json()["meta"]["field"] == field
    assert _requested_beneficiaries(strict) == []


def test_an_amount_below_the_assets_minimum_is_below_min_withdraw_limit(
    http_sandbox: Any,
) -> None:
    """The reference's BTC minimum, 0.00001, and its problem type: a smaller withdrawal
    was accepted."""
    http_sandbox.deposit("BTC", "1")
    body = problem(withdraw(http_sandbox, amount="0.000009"), 400, "below-min-withdraw-limit")
    assert body["title"] == "Withdrawal Amount Too Small"
    assert body["detail"] == "amount too small for network BITCOIN minimum amount is 0.00001"
    assert body["meta"] == {
        "asset": "BTC",
        "limit": "0.00001",
        "amount": "0.000009",
        "field": "amount",
    }
    assert http_sandbox.balance("BTC")["available"] == "1"
    _ok(withdraw(http_sandbox, amount="0.00001"))


def test_the_minimum_applies_to_the_amount_left_by_a_total(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    body = problem(withdraw(http_sandbox, total="0.000025"), 400, "below-min-withdraw-limit")
    assert (body["meta"]["amount"], body["meta"]["field"]) == ("0.000005", "total")


@pytest.mark.sandex(settings={"withdrawal_minimums": {"ETH": "0.01", "BTC": "0.000001"}})
def test_the_minimum_is_a_setting_per_asset(http_sandbox: Any) -> None:
    http_sandbox.deposit("ETH", "1")
    http_sandbox.deposit("BTC", "1")
    eth = withdraw(http_sandbox, asset="ETH", network="ETHEREUM", amount="0.009")
    assert problem(eth, 400, "below-min-withdraw-limit")["meta"]["limit"] == "0.01"
    _ok(withdraw(http_sandbox, amount="0.000009"))
