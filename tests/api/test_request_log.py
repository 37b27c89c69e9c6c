"""A world's recent requests: GET /v2/sandbox/requests (docs/faults.md), newest first,
keyset-paged, bounded, each tenant its own, each world its own."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from sandex.api_adapter.recent_requests import MAX_PATH
from tests.support.trading_helpers import PROBLEMS, STILL, limit, place, placed
from tests.support.transfer_helpers import problem
from tests.support.world_helpers import Front

PATH = "/v2/sandbox/requests"


def _page(sb: Any, headers: Any = None, **params: Any) -> dict[str, Any]:
    r = sb.get(PATH, params=params, **({"headers": headers} if headers is not None else {}))
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _all(sb: Any, headers: Any = None, **params: Any) -> list[dict[str, Any]]:
    """Every page, the cursor of each handed back."""
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        body = _page(sb, headers, **params, **({"page_cursor": cursor} if cursor else {}))
        seen += body["items"]
        cursor = body.get("next_page_cursor")
        if cursor is None:
            return seen


def test_requests_are_listed_newest_first_with_operation_status_and_duration(
    http_sandbox: Any,
) -> None:
    http_sandbox.deposit("USD", "100")
    balance = http_sandbox.get("/v2/profiles/default/balances/USD")
    missing = http_sandbox.get("/v2/no/such/path")
    assert missing.status_code == 404
    items = _page(http_sandbox)["items"]
    assert [(e["method"], e.get("operation")) for e in items[:3]] == [
        ("GET", None),
        ("GET", "GetProfileBalance"),
        ("POST", "CreateSandboxDeposit"),
    ]
    wrong, read, deposit = items[:3]
    assert wrong["path"].endswith("/v2/no/such/path") and wrong["status"] == 404
    assert read["status"] == 200 and read["request_id"] == balance.headers["x-request-id"]
    assert deposit["path"].endswith("/v2/sandbox/profiles/default/deposit")
    assert deposit["client_id"] == http_sandbox.client_id
    assert all(e["duration_ms"] >= 0 for e in items)
    assert all(e["time"] == "2024-01-01T00:00:00.000000Z" for e in items)  # the engine's clock
    ids = [e["id"] for e in items]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)
    assert not [e for e in items if e.get("operation") == "ListSandboxRequests"]


@pytest.mark.sandex(settings=STILL)
def test_a_problem_answer_shows_its_type(http_sandbox: Any) -> None:
    sb = http_sandbox
    refused = place(sb, **limit("BUY", "40000", "1"))  # no money: a fast-lane refusal
    assert refused.status_code == 403
    assert problem(sb.get(PATH, params={"status": "abc"}), 400)["meta"]["field"] == "status"
    entry = _page(sb, operation="CreateOrder")["items"][0]
    assert entry["status"] == 403
    assert entry["problem_type"] == PROBLEMS + "insufficient-funds"
    assert entry["events"] == []
    ok = _page(sb, operation="GetSandboxClock")["items"]
    assert ok == [] or "problem_type" not in ok[0]


@pytest.mark.sandex(settings=STILL)
def test_the_events_a_request_caused_are_its_callers_feed_events(http_sandbox: Any) -> None:
    sb = http_sandbox
    headers, _ = sb.tenant()
    deposit = sb.post(
        "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "50000"}, headers=headers
    )
    assert deposit.status_code == 200
    order = placed(sb, headers=headers, **limit("BUY", "1", "0.01"))  # rests on the book
    cancel = sb.delete(f"/v2/profiles/default/orders/{order['id']}", headers=headers)
    assert cancel.status_code == 200, cancel.text
    mine = {e["operation"]: e for e in _all(sb, headers) if "operation" in e}
    feed = sb.get("/v2/events", headers=headers).json()["events"]
    by_id = {e["id"]: e for e in feed}
    listed = [
        i
        for op in ("CreateSandboxDeposit", "CreateOrder", "CancelOrder")
        for i in mine[op]["events"]
    ]
    assert listed == [e["id"] for e in feed]  # every event of the feed, once, in order
    for event_id in mine["CreateOrder"]["events"]:
        one = sb.get(f"/v2/events/{event_id}", headers=headers)
        assert one.status_code == 200 and one.json()["object"]["id"] == order["id"]
    assert [by_id[i]["type"] for i in mine["CancelOrder"]["events"]] == ["order.cancelled"]
    assert by_id[mine["CreateSandboxDeposit"]["events"][0]]["object_type"] == (
        "transfer_status_change"
    )
    assert mine["IssueToken"]["events"] == []  # a token written nowhere


@pytest.mark.sandex(settings=STILL)
def test_fast_lane_orders_are_logged_with_what_they_caused(http_sandbox: Any) -> None:
    sb = http_sandbox
    sb.deposit("USD", "50000")
    orders = [placed(sb, **limit("BUY", "1", "0.01"), client_order_id=f"o{i}") for i in range(3)]
    entries = _page(sb, operation="CreateOrder")["items"]
    assert len(entries) == 3 and all(e["status"] == 200 for e in entries)
    assert all(e["path"].endswith("/v2/profiles/default/orders") for e in entries)
    for entry, order in zip(entries, reversed(orders), strict=True):
        objects = [sb.get(f"/v2/events/{i}").json()["object"]["id"] for i in entry["events"]]
        assert objects and set(objects) == {order["id"]}


def test_keyset_pages_are_complete_and_stable_while_requests_arrive(http_sandbox: Any) -> None:
    for _ in range(23):
        http_sandbox.get("/v2/sandbox/clock")
    first = _page(http_sandbox, limit=10)
    expected = list(range(first["items"][0]["id"], 0, -1))
    seen = list(first["items"])
    cursor = first["next_page_cursor"]
    while cursor:
        http_sandbox.get("/v2/sandbox/clock")  # a newer request between two pages
        body = _page(http_sandbox, limit=10, page_cursor=cursor)
        seen += body["items"]
        cursor = body.get("next_page_cursor")
    assert [e["id"] for e in seen] == expected  # each once, none skipped, newest first
    assert len(seen) > 20
    again = _page(http_sandbox, limit=10, page_cursor=first["next_page_cursor"])["items"]
    assert [e["id"] for e in again] == expected[10:20]
    assert problem(http_sandbox.get(PATH, params={"page_cursor": "nonsense"}), 400)["meta"] == {
        "field": "page_cursor"
    }


def test_the_log_is_bounded_and_drops_the_oldest_first(sandbox_factory: Any) -> None:
    sb = sandbox_factory(request_log_size=5)
    tenant, made = sb.tenant()
    for _ in range(4):
        sb.get("/v2/profiles")
        sb.get("/v2/profiles", headers=tenant)
    items = _all(sb, limit=2)
    assert len(items) == 5
    newest = items[0]["id"]
    assert [e["id"] for e in items] == list(range(newest, newest - 5, -1))
    assert len(sb.app.state.requests) == 5
    # a tenant's own list drops alike: what it still holds is what the whole log holds
    theirs = [e for e in items if e.get("client_id") == made["client_id"]]
    assert _all(sb, tenant, limit=1) == theirs and len(theirs) == 3


def test_a_tenant_sees_only_its_own_requests_and_the_bootstrap_client_all(
    http_sandbox: Any,
) -> None:
    a, made_a = http_sandbox.tenant()
    b, made_b = http_sandbox.tenant()
    http_sandbox.get("/v2/profiles", headers=a)
    http_sandbox.get("/v2/profiles", headers=b)
    http_sandbox.get("/v2/no/such/path", headers=b)
    theirs_a = _all(http_sandbox, a)
    theirs_b = _all(http_sandbox, b)
    assert theirs_a and {e["client_id"] for e in theirs_a} == {made_a["client_id"]}
    assert {e["client_id"] for e in theirs_b} == {made_b["client_id"]}
    assert any(e["status"] == 404 for e in theirs_b)
    everyone = {e["client_id"] for e in _all(http_sandbox) if "client_id" in e}
    assert {made_a["client_id"], made_b["client_id"], http_sandbox.client_id} <= everyone
    cursor = _page(http_sandbox, b, limit=1)["next_page_cursor"]
    assert problem(http_sandbox.get(PATH, params={"page_cursor": cursor}, headers=a), 400)
    # the token requests are the tenants' own, and no secret is kept anywhere
    assert "IssueToken" in {e.get("operation") for e in theirs_a}
    everything = orjson.dumps(_all(http_sandbox))
    for secret in (made_a["client_secret"], made_b["client_secret"], http_sandbox.client_secret):
        assert secret.encode() not in everything


def test_an_entry_keeps_a_bounded_part_of_a_long_path(http_sandbox: Any) -> None:
    long = "/v2/" + "x" * 8000
    assert http_sandbox.get(long).status_code == 404
    entry = _page(http_sandbox, limit=1)["items"][0]
    assert entry["status"] == 404 and len(entry["path"]) == MAX_PATH
    assert long.startswith(entry["path"].removeprefix(http_sandbox.http.base_url.path.rstrip("/")))


def test_filters_and_refusals_name_their_field(http_sandbox: Any) -> None:
    http_sandbox.get("/v2/no/such/path")
    http_sandbox.get("/v2/sandbox/clock")
    assert {e["status"] for e in _page(http_sandbox, status="4xx")["items"]} == {404}
    assert {e["status"] for e in _page(http_sandbox, status="200")["items"]} == {200}
    assert {e["operation"] for e in _page(http_sandbox, operation="GetSandboxClock")["items"]} == {
        "GetSandboxClock"
    }
    for params, field in (
        ({"status": "600"}, "status"),
        ({"status": "2x"}, "status"),
        ({"operation": "NoSuchOperation"}, "operation"),
        ({"limit": "1001"}, "limit"),
    ):
        assert problem(http_sandbox.get(PATH, params=params), 400)["meta"]["field"] == field, params


def test_the_fault_that_fired_is_shown(http_sandbox: Any) -> None:
    """What the fault gate fired on a call (sandex.api_adapter.faults.FIRED) is the entry's
    `fault`; a call no rule matched has none."""
    armed = http_sandbox.post(
        "/v2/sandbox/faults",
        {
            "match": {"operation": "ListProfiles"},
            "action": {"problem": {"status": 503}},
            "times": 1,
        },
    )
    assert armed.status_code == 200, armed.text
    assert http_sandbox.get("/v2/profiles").status_code == 503
    assert http_sandbox.get("/v2/profiles").status_code == 200
    spent, passed = _page(http_sandbox, operation="ListProfiles")["items"][:2][::-1]
    assert spent["status"] == 503
    assert spent["fault"] == {
        "rule_id": armed.json()["id"],
        "when": "before",
        "action": "problem",
    }
    assert passed["status"] == 200 and "fault" not in passed


@pytest.mark.default_world_only("a world's log is held apart from its server's default world's")
def test_a_world_keeps_its_own_log(sandbox: Any, front: Front) -> None:
    made = front.http.post(
        "/v2/sandbox/worlds", json={"clock": "manual"}, headers=sandbox.headers
    ).json()
    prefix = f"/w/{made['id']}"
    form = {"grant_type": "client_credentials", "client_id": made["client_id"]}
    form["client_secret"] = made["client_secret"]
    token = front.http.post(f"{prefix}/oauth2/token", data=form).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    deposit = front.http.post(
        f"{prefix}/v2/sandbox/profiles/default/deposit",
        json={"asset": "BTC", "amount": "1"},
        headers=headers,
    )
    assert deposit.status_code == 200, deposit.text
    inside = front.http.get(f"{prefix}{PATH}", headers=headers).json()["items"]
    assert [e.get("operation") for e in inside] == ["CreateSandboxDeposit", "IssueToken"]
    assert inside[0]["path"] == f"{prefix}/v2/sandbox/profiles/default/deposit"
    assert inside[0]["id"] == 2 and len(inside[0]["events"]) == 1
    outside = front.http.get(PATH, headers=sandbox.headers).json()["items"]
    assert "CreateSandboxWorld" in {e.get("operation") for e in outside}
    assert not [e for e in outside if e["path"].startswith("/w/")]
