"""The public event feed: GET /v2/events and /v2/events/{id}."""

from __future__ import annotations

from typing import Any

from sandex.engine.tools.verify import rebuild
from tests.support.reference import assert_matches, response_schema
from tests.support.trading_helpers import limit, placed, set_price, still
from tests.support.transfer_helpers import problem, withdraw


def _events(sb: Any, headers: Any = None, **params: Any) -> Any:
    kw = {"headers": headers} if headers is not None else {}
    r = sb.get("/v2/events", params=params, **kw)
    assert r.status_code == 200, r.text
    return r


def _types(sb: Any, headers: Any = None, **params: Any) -> list[str]:
    return [e["type"] for e in _events(sb, headers, **params).json()["events"]]


def test_a_withdrawal_is_announced_pending_then_completed_with_the_transfer_as_it_stood(
    http_sandbox: Any,
) -> None:
    http_sandbox.deposit("BTC", "0.01")
    made = withdraw(http_sandbox, amount="0.001").json()
    http_sandbox.advance(30)
    body = _events(http_sandbox).json()
    assert_matches(body, response_schema("/events", "get"))
    events = body["events"]
    assert [e["type"] for e in events] == [
        "transfer.wire_deposit.completed",
        "transfer.crypto_withdrawal.pending",
        "transfer.crypto_withdrawal.completed",
    ]
    pending, completed = events[1], events[2]
    assert pending["object_type"] == completed["object_type"] == "transfer_status_change"
    assert pending["object"] == made
    assert pending["object"]["status"] == "PENDING" and "crypto_tx_hash" not in pending["object"]
    assert completed["object"]["status"] == "COMPLETED" and completed["object"]["crypto_tx_hash"]
    assert completed["created_at"] == completed["object"]["updated_at"]
    assert all(e["undelivered_webhooks"] == 0 for e in events)
    one = http_sandbox.get(f"/v2/events/{completed['id']}")
    assert one.status_code == 200
    assert_matches(one.json(), response_schema("/events/{id}", "get"))
    assert one.json() == completed


def test_orders_announce_each_change_of_status_and_partial_fills(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    sb.deposit("USD", "100000")
    set_price(sb, "40000")
    maker = placed(sb, **limit("BUY", "39990", "0.5"))
    headers, _ = sb.tenant()
    sb.post(
        "/v2/sandbox/profiles/default/deposit", {"asset": "BTC", "amount": "1"}, headers=headers
    )
    placed(sb, headers=headers, **limit("SELL", "39990", "0.2"))
    mine = [e for e in _events(sb).json()["events"] if e["object_type"] == "order"]
    assert [e["type"] for e in mine] == ["order.submitted", "order.open", "order.partially_filled"]
    assert all(e["object"]["id"] == maker["id"] for e in mine)
    assert mine[-1]["object"]["amount_filled"] == "0.20000000"
    assert mine[-1]["object"]["status"] == "OPEN"
    theirs = _types(sb, headers, type="order.filled")
    assert theirs == ["order.filled"]
    sb.delete(f"/v2/profiles/default/orders/{maker['id']}")
    assert _types(sb, type="order.cancelled") == ["order.cancelled"]


def test_a_customer_sees_only_its_own_events(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    headers, _ = http_sandbox.tenant()
    assert _events(http_sandbox, headers).json() == {"events": []}
    mine = _events(http_sandbox).json()["events"][0]
    problem(http_sandbox.get(f"/v2/events/{mine['id']}", headers=headers), 404)


def test_filters_by_type_and_time_and_pages_with_a_cursor(http_sandbox: Any) -> None:
    for _ in range(3):
        http_sandbox.deposit("BTC", "1")
        http_sandbox.advance(10)
    r = http_sandbox.post(
        "/v2/sandbox/profiles/default/deposit",
        {"asset": "ETH", "amount": "1", "crypto_network": "ETHEREUM"},
    )
    assert r.status_code == 200
    everything = _events(http_sandbox).json()["events"]
    assert len(everything) == 4
    assert [e["created_at"] for e in everything] == sorted(e["created_at"] for e in everything)
    assert _types(http_sandbox, type="transfer.crypto_deposit.completed") == [
        "transfer.crypto_deposit.completed"
    ]
    second = everything[1]["created_at"]
    assert len(_events(http_sandbox, **{"created_at.gte": second}).json()["events"]) == 3
    assert len(_events(http_sandbox, **{"created_at.gt": second}).json()["events"]) == 2
    assert len(_events(http_sandbox, **{"created_at.lt": second}).json()["events"]) == 1
    assert len(_events(http_sandbox, **{"created_at.eq": second}).json()["events"]) == 1
    seen, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 3}
        if cursor:
            params["page_cursor"] = cursor
        r = _events(http_sandbox, **params)
        seen += r.json()["events"]
        cursor = r.headers.get("x-next-page-cursor")
        if cursor is None:
            break
    assert seen == everything


def test_refusals_name_the_field(http_sandbox: Any) -> None:
    assert (
        problem(http_sandbox.get("/v2/events", params={"limit": -1}), 400)["meta"]["field"]
        == "limit"
    )
    assert (
        problem(http_sandbox.get("/v2/events", params={"limit": 101}), 400)["meta"]["field"]
        == "limit"
    )
    bad = http_sandbox.get("/v2/events", params={"created_at.gt": "yesterday"})
    assert problem(bad, 400)["meta"]["field"] == "created_at.gt"
    assert problem(http_sandbox.get("/v2/events/not-a-uuid"), 400)["meta"]["field"] == "id"
    problem(http_sandbox.get("/v2/events/6f2d8a5e-0c1b-4f7a-9d3e-2b1c0a9f8e7d"), 404)
    narrow = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="funding:read_profile"
    )
    refused = problem(http_sandbox.get("/v2/events", headers=narrow), 403)
    assert "events:read_event" in refused["detail"]


def test_the_feed_is_a_read_model_a_rebuild_reproduces(sandbox: Any) -> None:
    sandbox.deposit("BTC", "0.01")
    withdraw(sandbox, amount="0.001")
    sandbox.advance(30)
    before = _events(sandbox).json()
    sandbox.close()
    rebuild(str(sandbox.db))
    assert sandbox.verify() == []
    reopened = type(sandbox)(sandbox.db, sandbox.engine.settings)
    try:
        assert _events(reopened).json() == before
    finally:
        reopened.close()
