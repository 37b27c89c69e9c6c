"""Shared by the withdrawal, fee and internal-transfer tests: addresses and requests."""

from __future__ import annotations

from typing import Any

# A fiat account's bank details and its holder, as the fiat tests register them.
WIRE = {
    "account_number": "12345678",
    "fiat_account_owner_address": {"country": "USA", "address1": "456 Main Street", "city": "NY"},
    "routing_details": {
        "routing_number_type": "ABA",
        "routing_number": "031302971",
        "bank_name": "Customers Bank",
        "bank_address": {"country": "USA", "city": "New York"},
    },
}
PERSON = {"person_details": {"first_name": "Jane", "last_name": "Doe"}}

PROBLEMS = "https://developer.paxos.com/docs/v2/problems/"

# Published example addresses, one well-formed per network family.
BTC_ADDRESS = "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2"
EVM_ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
SOLANA_ADDRESS = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
STELLAR_ADDRESS = "GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"
BCH_ADDRESS = "bitcoincash:qpm2qsznhks23z7629mms6s4cwef74vcwvy22gdx6a"
LTC_ADDRESS = "LUd28DgwFmae8thFhaPYHGVmps4XockqfQ"

ADDRESSES = {
    "BITCOIN": BTC_ADDRESS,
    "BITCOIN_CASH": BCH_ADDRESS,
    "LITECOIN": LTC_ADDRESS,
    "SOLANA": SOLANA_ADDRESS,
    "STELLAR": STELLAR_ADDRESS,
    "ETHEREUM": EVM_ADDRESS,
    "POLYGON_POS": EVM_ADDRESS,
    "BASE": EVM_ADDRESS,
    "ARBITRUM_ONE": EVM_ADDRESS,
    "INK": EVM_ADDRESS,
    "XLAYER": EVM_ADDRESS,
}


def fee_body(asset: str = "BTC", network: str = "BITCOIN", **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "asset": asset,
        "crypto_network": network,
        "destination_address": ADDRESSES[network],
    }
    if "amount" not in kw and "total" not in kw:
        body["amount"] = "0.001"
    body.update(kw)
    return {k: v for k, v in body.items() if v is not None}


def withdrawal_body(asset: str = "BTC", network: str = "BITCOIN", **kw: Any) -> dict[str, Any]:
    body = fee_body(asset, network, **kw)
    body.setdefault("profile_id", "default")
    return {k: v for k, v in body.items() if v is not None}


def quote(sandbox: Any, **kw: Any) -> dict[str, Any]:
    r = sandbox.post("/v2/transfer/fees/crypto-withdrawal", fee_body(**kw))
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def withdraw(sandbox: Any, **kw: Any) -> Any:
    return sandbox.post("/v2/transfer/crypto-withdrawals", withdrawal_body(**kw))


def transfer(sandbox: Any, transfer_id: str) -> dict[str, Any]:
    r = sandbox.get(f"/v2/transfer/transfers/{transfer_id}")
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def problem(response: Any, status: int, slug: str | None = None) -> dict[str, Any]:
    """The problem body of `response`, after checking its status, media type and type."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["type"] == (PROBLEMS + slug if slug else "about:blank")
    return body  # type: ignore[no-any-return]


def profile_id(sandbox: Any, profile: str = "default", **kw: Any) -> str:
    r = sandbox.get(f"/v2/profiles/{profile}", **kw)
    assert r.status_code == 200, r.text
    return r.json()["id"]  # type: ignore[no-any-return]


def usd_below_the_cent(sandbox: Any) -> str:
    """A USD balance with digits below the cent, as trades leave one (a market buy by
    `quote_amount` spends whole base units, so not all of it): its `available` text."""
    sandbox.deposit("USD", "1000")
    order = {"side": "BUY", "market": "BTCUSD", "type": "MARKET", "quote_amount": "100.00"}
    r = sandbox.post("/v2/profiles/default/orders", order)
    assert r.status_code == 200 and r.json()["status"] == "FILLED", r.text
    held = sandbox.balance("USD")["available"]
    assert len(held.partition(".")[2]) > 2, held
    return held  # type: ignore[no-any-return]
