"""Races: requests sent at the same moment, through the real app on one event loop, so
that the writer decides them in one batch or a few.

- Withdrawals, sells and buys against one balance never overdraw it.
- The same `ref_id` sent concurrently creates exactly one resource; the rest are 409 with
  the one that exists.
- A cancel racing a fill ends in one consistent state: filled and the cancel refused, or
  cancelled and nothing filled.
- Sandbox clock advances sent together add up: none is lost."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from datetime import timedelta
from decimal import Decimal
from typing import Any

import httpx

from sandex.engine.kernel.clock import format_time
from tests.support.trading_helpers import PROBLEMS, placed, set_price, still

ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


def _all_at_once(sb: Any, calls: list[tuple[str, str, Any, dict[str, str]]]) -> list[Any]:
    """Send every (method, path, json, headers) at once; answer in the same order."""

    batches: list[int] = getattr(sb, "batches", [])
    if not hasattr(sb, "batches"):  # record how many commands the writer decides at once
        process = sb.engine._process

        def spy(batch: Any) -> None:
            items = list(batch)
            batches.append(len(items))
            process(items)

        sb.engine._process = spy
        sb.batches = batches

    async def go() -> list[Any]:
        transport = httpx.ASGITransport(app=sb.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://sandex") as client:
            return await asyncio.gather(
                *(client.request(m, p, json=j, headers=h) for m, p, j, h in calls)
            )

    return asyncio.run(go())


def limit(side: str, price: str, amount: str, **kw: Any) -> dict[str, Any]:
    body = {"side": side, "market": "BTCUSD", "type": "LIMIT", "price": price}
    return {**body, "base_amount": amount, **kw}


def _money(sb: Any, asset: str, headers: Any = None) -> tuple[Decimal, Decimal]:
    b = sb.balance(asset, headers=headers or sb.headers)
    return Decimal(b["available"]), Decimal(b["trading"])


def test_withdrawals_sells_and_buys_at_once_never_overdraw(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    set_price(sb, "50000")
    sb.deposit("BTC", "0.01")
    sb.deposit("USD", "1000")
    h = sb.headers
    withdrawal = {
        "profile_id": "default",
        "asset": "BTC",
        "destination_address": ADDRESS,
        "crypto_network": "BITCOIN",
        "amount": "0.0005",
    }
    orders = "/v2/profiles/default/orders"
    calls: list[tuple[str, str, Any, dict[str, str]]] = []
    calls += [("POST", "/v2/transfer/crypto-withdrawals", withdrawal, h)] * 15
    calls += [("POST", orders, limit("SELL", "60000", "0.0005"), h)] * 15  # rests, holds BTC
    calls += [
        (
            "POST",
            orders,
            {"side": "BUY", "type": "MARKET", "market": "BTCUSD", "quote_amount": "60"},
            h,
        )
    ] * 15
    calls += [("POST", orders, limit("BUY", "45000", "0.002"), h)] * 15
    random.Random(7).shuffle(calls)
    answers = _all_at_once(sb, calls)

    assert max(sb.batches) > 1  # they met in the writer's queue, not one after another
    statuses = Counter(r.status_code for r in answers)
    assert set(statuses) <= {200, 403}, statuses
    assert statuses[403] > 0 and statuses[200] > 0  # the balance ran out part way
    for r in answers:
        if r.status_code == 403:
            assert r.json()["type"] == PROBLEMS + "insufficient-funds"
    btc_available, btc_trading = _money(sb, "BTC")
    usd_available, usd_trading = _money(sb, "USD")
    assert min(btc_available, btc_trading, usd_available, usd_trading) >= 0
    # Every BTC is accounted for: held by open sells, sent out, or still available.
    sent = sum(
        Decimal(r.json()["total"])
        for r in answers
        if r.status_code == 200 and r.json().get("type") == "CRYPTO_WITHDRAWAL"
    )
    bought = sum(
        Decimal(r.json()["amount_filled"])
        for r in answers
        if r.status_code == 200 and r.json().get("side") == "BUY"
    )
    assert btc_available + btc_trading + sent == Decimal("0.01") + bought
    spent = sum(
        Decimal(r.json()["amount_filled"]) * Decimal(r.json()["volume_weighted_average_price"])
        for r in answers
        if r.status_code == 200 and r.json().get("side") == "BUY" and r.json()["amount_filled"]
    )
    assert usd_available + usd_trading <= Decimal("1000") - spent + Decimal("0.01") * 30


def _same_ref_id(sb: Any, path: str, body: dict[str, Any], n: int = 12) -> dict[str, Any]:
    answers = _all_at_once(sb, [("POST", path, body, sb.headers)] * n)
    ok = [r for r in answers if r.status_code == 200]
    conflicts = [r for r in answers if r.status_code == 409]
    assert len(ok) == 1, [r.text for r in answers]
    assert len(conflicts) == n - 1, Counter(r.status_code for r in answers)
    created = ok[0].json()
    for r in conflicts:
        problem = r.json()
        assert problem["type"] == PROBLEMS + "already-exists"
        assert problem["meta"]["existing"]["id"] == created["id"]
    return created  # type: ignore[no-any-return]


def test_the_same_ref_id_at_once_creates_exactly_one_of_each_kind(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    sb.deposit("BTC", "1")
    sb.deposit("USD", "100000")
    desk = sb.post("/v2/profiles", {"nickname": "desk"}).json()["id"]
    order = _same_ref_id(
        sb, "/v2/profiles/default/orders", {**limit("BUY", "40000", "0.01"), "ref_id": "o-1"}
    )
    withdrawal = _same_ref_id(
        sb,
        "/v2/transfer/crypto-withdrawals",
        {
            "profile_id": "default",
            "asset": "BTC",
            "destination_address": ADDRESS,
            "crypto_network": "BITCOIN",
            "amount": "0.001",
            "ref_id": "w-1",
        },
    )
    internal = _same_ref_id(
        sb,
        "/v2/transfer/internal",
        {
            "from_profile_id": "default",
            "to_profile_id": desk,
            "asset": "BTC",
            "amount": "0.1",
            "ref_id": "i-1",
        },
    )
    _same_ref_id(
        sb,
        "/v2/transfer/fiat-deposit-instructions",
        {"profile_id": "default", "fiat_network": "WIRE", "ref_id": "f-1"},
    )
    assert sb.balance("BTC", desk)["available"] == "0.1"  # moved once, not twelve times
    listed = sb.get("/v2/transfer/transfers", params={"ref_ids": ["w-1", "i-1"]}).json()["items"]
    assert sorted(t["id"] for t in listed if t["type"] != "INTERNAL_TRANSFER_CREDIT") == sorted(
        [withdrawal["id"], internal["id"]]
    )
    orders = sb.get("/v2/profiles/default/orders").json()["items"]
    assert [o["id"] for o in orders if o.get("ref_id") == "o-1"] == [order["id"]]
    assert max(sb.batches) > 1  # some of them met in the writer's queue


def test_a_cancel_racing_a_fill_ends_consistent(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    set_price(sb, "50000")
    buyer, creds = sb.tenant()
    sb.deposit("BTC", "1")
    sb.post(
        f"/v2/sandbox/profiles/{creds['profile_id']}/deposit",
        {"asset": "USD", "amount": "1000000"},
        headers=buyer,
    )
    rng = random.Random(11)
    outcomes = Counter()
    for i in range(12):
        resting = placed(sb, **limit("SELL", "50000", "0.01", ref_id=f"s-{i}"))
        cancel = ("DELETE", f"/v2/profiles/default/orders/{resting['id']}", None, sb.headers)
        cross = (
            "POST",
            f"/v2/profiles/{creds['profile_id']}/orders",
            limit("BUY", "50000", "0.01", time_in_force="IOC"),
            buyer,
        )
        cancel_first = rng.random() < 0.5
        sent = _all_at_once(sb, [cancel, cross] if cancel_first else [cross, cancel])
        answers = {
            "cancel": sent[0 if cancel_first else 1],
            "cross": sent[1 if cancel_first else 0],
        }
        final = sb.get(f"/v2/profiles/default/orders/{resting['id']}").json()
        filled = Decimal(final["amount_filled"] or "0")
        if final["status"] == "FILLED":
            assert answers["cancel"].status_code in (403, 409), answers["cancel"].text
            assert filled == Decimal("0.01")
            assert Decimal(answers["cross"].json()["amount_filled"]) == Decimal("0.01")
        else:
            assert final["status"] == "CANCELLED", final
            assert answers["cancel"].status_code == 200
            assert filled == 0
            assert Decimal(answers["cross"].json()["amount_filled"] or "0") == 0
        outcomes[final["status"]] += 1
        _, trading = _money(sb, "BTC")
        assert trading == 0  # no hold outlives its order
    assert set(outcomes) == {"FILLED", "CANCELLED"}, outcomes  # both orders were raced
    assert max(sb.batches) >= 2


def test_clock_advances_sent_together_all_move_the_clock(sandbox_factory: Any) -> None:
    sb = sandbox_factory()
    start = sb.engine.clock.now()
    n = 8
    answers = _all_at_once(
        sb, [("POST", "/v2/sandbox/clock", {"advance_seconds": 10}, sb.headers)] * n
    )
    assert [r.status_code for r in answers] == [200] * n, [r.text for r in answers]
    # each answer is the time its own advance reached: n distinct steps of 10 s
    reached = sorted(r.json()["now"] for r in answers)
    assert reached == [format_time(start + timedelta(seconds=10 * i)) for i in range(1, n + 1)]
    assert sb.engine.clock.now() == start + timedelta(seconds=10 * n)
    assert sb.get("/v2/sandbox/clock").json()["now"] == reached[-1]
