"""Shared by the trading tests: a still market, order requests and book reading."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from tests.support.database import query

PROBLEMS = "https://developer.paxos.com/docs/v2/problems/"
TERMINAL = ("FILLED", "CANCELLED", "REJECTED")

# Prices that do not move unless set: every expected figure in a test is then exact.
STILL = {"market_volatility": "0"}


def still(sandbox_factory: Any, name: str = "sandex.db", **overrides: Any) -> Any:
    return sandbox_factory(name, **{**STILL, **overrides})


def funded(sandbox: Any) -> Any:
    """`sandbox` with what the trading tests' own holds (their `sb` in process, the
    suite's `http_sb` in a plugin world): 1,000,000 USD and 10 BTC."""
    sandbox.deposit("USD", "1000000")
    sandbox.deposit("BTC", "10")
    return sandbox


def place(sb: Any, profile: str = "default", headers: Any = None, **body: Any) -> Any:
    body.setdefault("market", "BTCUSD")
    kw = {"headers": headers} if headers is not None else {}
    return sb.post(f"/v2/profiles/{profile}/orders", body, **kw)


def placed(sb: Any, profile: str = "default", headers: Any = None, **body: Any) -> dict[str, Any]:
    r = place(sb, profile, headers, **body)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def limit(side: str, price: str, amount: str, **kw: Any) -> dict[str, Any]:
    return {"side": side, "type": "LIMIT", "price": price, "base_amount": amount, **kw}


def get_order(sb: Any, order: dict[str, Any], headers: Any = None) -> dict[str, Any]:
    kw = {"headers": headers} if headers is not None else {}
    r = sb.get(f"/v2/profiles/{order['profile_id']}/orders/{order['id']}", **kw)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def book(sb: Any, market: str = "BTCUSD") -> dict[str, Any]:
    r = sb.get(f"/v2/markets/{market}/order-book")
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def best(sb: Any, side: str, market: str = "BTCUSD") -> tuple[Decimal, Decimal]:
    """The best (price, amount) of "asks" or "bids"."""
    level = book(sb, market)[side][0]
    return Decimal(level["price"]), Decimal(level["amount"])


def set_price(sb: Any, price: str, market: str = "BTCUSD") -> dict[str, Any]:
    r = sb.post(f"/v2/sandbox/markets/{market}/price", {"price": price})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def executions(sb: Any, headers: Any = None, **params: Any) -> list[dict[str, Any]]:
    kw = {"headers": headers} if headers is not None else {}
    r = sb.get("/v2/executions", params=params, **kw)
    assert r.status_code == 200, r.text
    return r.json()["items"]  # type: ignore[no-any-return]


def money(balance: dict[str, str]) -> tuple[Decimal, Decimal]:
    return Decimal(balance["available"]), Decimal(balance["trading"])


def events(sb: Any, type_: str | None = None) -> list[dict[str, Any]]:
    """The log as committed, read on a connection of the test's own."""
    rows = query(sb.db, "SELECT type, stream, data, occurred_at FROM events ORDER BY position")
    found = [{"type": t, "stream": s, "data": json.loads(d), "at": at} for t, s, d, at in rows]
    return [e for e in found if type_ is None or e["type"] == type_]
