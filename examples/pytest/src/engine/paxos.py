"""The project's own small client of the Paxos v2 API: a token from `token_url`, then
requests under `base_url`. Pointed at a sandex world, it never knows it is a sandbox."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx


def limit_order(
    side: str, price: Decimal | str, amount: Decimal | str, **fields: Any
) -> dict[str, Any]:
    """A LIMIT order's body on BTCUSD (amounts as strings, as the API takes them)."""
    body = {"market": "BTCUSD", "side": side, "type": "LIMIT"}
    return {**body, "price": str(price), "base_amount": str(amount), **fields}


class Paxos:
    """Logs in with client credentials once; every call answers httpx's response."""

    def __init__(self, base_url: str, token_url: str, client_id: str, client_secret: str) -> None:
        login = {
            "grant_type": "client_credentials",
            "client_id": client_id,
            "client_secret": client_secret,
        }
        token = httpx.post(token_url, data=login, timeout=10)
        token.raise_for_status()
        self.http = httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Bearer {token.json()['access_token']}"},
            timeout=10,
        )

    def place(self, profile_id: str, order: dict[str, Any]) -> httpx.Response:
        return self.http.post(f"/profiles/{profile_id}/orders", json=order)

    def order(self, profile_id: str, order_id: str) -> httpx.Response:
        return self.http.get(f"/profiles/{profile_id}/orders/{order_id}")

    def orders(self, profile_id: str) -> list[dict[str, Any]]:
        answer = self.http.get(f"/profiles/{profile_id}/orders")
        answer.raise_for_status()
        return list(answer.json()["items"])

    def available(self, profile_id: str, asset: str) -> Decimal:
        answer = self.http.get(f"/profiles/{profile_id}/balances/{asset}")
        answer.raise_for_status()
        return Decimal(answer.json()["available"])

    def withdraw_crypto(self, body: dict[str, Any]) -> httpx.Response:
        return self.http.post("/transfer/crypto-withdrawals", json=body)

    def transfer(self, transfer_id: str) -> httpx.Response:
        return self.http.get(f"/transfer/transfers/{transfer_id}")

    def fiat_deposit_instructions(self, profile_id: str, network: str) -> httpx.Response:
        body = {"profile_id": profile_id, "fiat_network": network}
        return self.http.post("/transfer/fiat-deposit-instructions", json=body)

    def transfers(self, **params: Any) -> list[dict[str, Any]]:
        answer = self.http.get("/transfer/transfers", params=params)
        answer.raise_for_status()
        return list(answer.json()["items"])
