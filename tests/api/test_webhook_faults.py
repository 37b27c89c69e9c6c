"""Webhook delivery faults (issue 31, docs/faults.md): a tenant's rules at
/v2/sandbox/webhook-faults make its own webhook's deliveries fail, wait on the engine's
clock, arrive twice or arrive out of order; a real receiver on loopback sees what a
user's would, and every arming, firing and spending is an event of the log."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.trading_helpers import events
from tests.support.transfer_helpers import problem
from tests.support.webhook_receivers import LOCAL, Receiver, opened, start_deliverer, wait

FAULTS = "/v2/sandbox/webhook-faults"


# The receivers here run on this machine: the operator allows 127.0.0.1 (for `sandbox`
# and `http_sandbox` alike).
pytestmark = pytest.mark.sandex(settings={"webhook_allowed_hosts": LOCAL})


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with opened() as make:
        yield make(Receiver)


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _register(sb: Any, receiver: Receiver, **kw: Any) -> str:
    return _ok(sb.post("/v2/sandbox/webhooks", {"url": receiver.url}, **kw))["id"]  # type: ignore[no-any-return]


def _arm(sb: Any, action: dict[str, Any], **body: Any) -> dict[str, Any]:
    return _ok(sb.post(FAULTS, {"action": action, **body}))


def _amounts(receiver: Receiver) -> list[str]:
    return [json.loads(body)["object"]["amount"] for _, body in receiver.received]


def _event_ids(receiver: Receiver) -> list[str]:
    return [headers["X-Sandex-Event-Id"] for headers, _ in receiver.received]


def _delivered(sb: Any, receiver: Receiver, count: int) -> None:
    """Wait until the receiver holds `count` events and the status says none is left."""
    wait(lambda: len(receiver.received) >= count)
    wait(lambda: _ok(sb.get("/v2/sandbox/webhooks"))["undelivered_webhooks"] == 0)


def test_a_webhook_armed_to_fail_twice_arrives_on_the_third_attempt(
    sandbox: Any, receiver: Receiver
) -> None:
    _register(sandbox, receiver)
    rule = _arm(sandbox, {"fail": {"status": 503}}, times=2)
    assert (rule["times"], rule["remaining"], rule["match"]) == (2, 2, {})
    sandbox.deposit("BTC", "1")
    deliverer = start_deliverer(sandbox)
    try:
        _delivered(sandbox, receiver, 1)
    finally:
        deliverer.stop()
    # the receiver saw one request, the third attempt; the two failures never reached it
    assert receiver.attempts == 1
    assert receiver.received[0][0]["X-Sandex-Delivery-Attempt"] == "3"
    history = _ok(sandbox.get("/v2/sandbox/webhooks"))["recent_attempts"]
    event_id = receiver.received[0][0]["X-Sandex-Event-Id"]
    assert history == [
        {
            "event_id": event_id,
            "attempt": 1,
            "outcome": "failed: HTTP 503",
            "fault_rule_id": rule["id"],
        },
        {
            "event_id": event_id,
            "attempt": 2,
            "outcome": "failed: HTTP 503",
            "fault_rule_id": rule["id"],
        },
        {"event_id": event_id, "attempt": 3, "outcome": "delivered"},
    ]
    assert _ok(sandbox.get(f"{FAULTS}/{rule['id']}"))["remaining"] == 0
    # arming, each firing and the spending are the log's, in that order
    logged = [e for e in events(sandbox) if e["type"].startswith("WebhookFault")]
    assert [e["type"] for e in logged] == [
        "WebhookFaultArmed",
        "WebhookFaultFired",
        "WebhookFaultFired",
        "WebhookFaultSpent",
    ]
    assert [e["data"]["attempt"] for e in logged[1:3]] == [1, 2]
    assert {e["data"]["event_id"] for e in logged[1:3]} == {event_id}
    assert {e["data"]["rule_id"] for e in logged} == {rule["id"]}


def test_a_webhook_armed_to_duplicate_arrives_twice_with_the_same_event_id(
    sandbox: Any, receiver: Receiver
) -> None:
    _register(sandbox, receiver)
    _arm(sandbox, {"duplicate": True})
    sandbox.deposit("BTC", "1")
    sandbox.deposit("BTC", "2")
    deliverer = start_deliverer(sandbox)
    try:
        _delivered(sandbox, receiver, 3)
    finally:
        deliverer.stop()
    ids = _event_ids(receiver)
    assert len(ids) == 3 and ids[0] == ids[1] != ids[2]
    assert receiver.received[0][1] == receiver.received[1][1]  # the same body, byte for byte
    assert _amounts(receiver) == ["1", "1", "2"]  # once is all the rule asked


def test_a_delivery_armed_out_of_order_arrives_after_the_next(
    sandbox: Any, receiver: Receiver
) -> None:
    _register(sandbox, receiver)
    _arm(sandbox, {"out_of_order": True})
    sandbox.deposit("BTC", "1")
    deliverer = start_deliverer(sandbox)
    try:
        # held until there is a next event to send before it
        wait(lambda: _fired(sandbox) == 1)
        time.sleep(0.2)
        assert receiver.received == []
        sandbox.deposit("BTC", "2")
        sandbox.deposit("BTC", "3")
        _delivered(sandbox, receiver, 3)
    finally:
        deliverer.stop()
    assert _amounts(receiver) == ["2", "1", "3"]


def _fired(sb: Any) -> int:
    return len(events(sb, "WebhookFaultFired"))


def test_a_delayed_delivery_waits_for_the_engine_clock(sandbox: Any, receiver: Receiver) -> None:
    _register(sandbox, receiver)
    _arm(sandbox, {"delay_seconds": 60})
    sandbox.deposit("BTC", "1")
    deliverer = start_deliverer(sandbox)
    try:
        wait(lambda: _fired(sandbox) == 1)
        release_at = events(sandbox, "WebhookFaultFired")[0]["data"]["release_at"]
        sandbox.advance(59)
        time.sleep(0.3)  # many polls of the deliverer: the engine's time has not come
        assert receiver.received == []
        assert _ok(sandbox.get("/v2/sandbox/webhooks"))["undelivered_webhooks"] == 1
        sandbox.advance(1)
        _delivered(sandbox, receiver, 1)
    finally:
        deliverer.stop()
    assert _amounts(receiver) == ["1"]
    assert release_at.startswith("2024-01-01T00:01:00")  # 60 s of engine time after the start


def test_a_tenants_rules_see_and_hit_only_its_own_webhook(sandbox: Any) -> None:
    with opened() as make:
        mine, theirs = make(Receiver), make(Receiver)
        tenant, _ = sandbox.tenant()
        own_id = _register(sandbox, mine)
        their_id = _register(sandbox, theirs, headers=tenant)
        # a rule naming another tenant's webhook is refused as if it did not exist
        problem(
            sandbox.post(
                FAULTS, {"match": {"webhook_id": their_id}, "action": {"duplicate": True}}
            ),
            404,
        )
        rule = _arm(sandbox, {"fail": {"status": 500}}, match={"webhook_id": own_id}, times=5)
        problem(sandbox.get(f"{FAULTS}/{rule['id']}", headers=tenant), 404)
        problem(sandbox.delete(f"{FAULTS}/{rule['id']}", headers=tenant), 404)
        assert _ok(sandbox.get(FAULTS, headers=tenant)) == {"items": []}
        sandbox.deposit("BTC", "1", headers=tenant)
        deliverer = start_deliverer(sandbox)
        try:
            _delivered_to(sandbox, theirs, tenant)
        finally:
            deliverer.stop()
        assert theirs.received[0][0]["X-Sandex-Delivery-Attempt"] == "1"
        assert _ok(sandbox.get(f"{FAULTS}/{rule['id']}"))["remaining"] == 5
        assert _fired(sandbox) == 0


def _delivered_to(sb: Any, receiver: Receiver, headers: dict[str, str]) -> None:
    wait(lambda: len(receiver.received) == 1)
    wait(lambda: _ok(sb.get("/v2/sandbox/webhooks", headers=headers))["undelivered_webhooks"] == 0)


def test_rules_are_listed_read_and_deleted(sandbox: Any, receiver: Receiver) -> None:
    webhook_id = _register(sandbox, receiver)
    first = _arm(sandbox, {"delay_seconds": 5}, match={"event_type": "order.filled"}, times=3)
    second = _arm(sandbox, {"fail": {"status": 429}}, match={"webhook_id": webhook_id})
    assert first["match"] == {"event_type": "order.filled"}
    assert first["action"] == {"delay_seconds": 5}
    assert (second["times"], second["remaining"]) == (1, 1)  # times defaults to one
    listed = _ok(sandbox.get(FAULTS))["items"]
    assert [r["id"] for r in listed] == [first["id"], second["id"]]
    assert _ok(sandbox.get(f"{FAULTS}/{first['id']}")) == first
    assert _ok(sandbox.delete(f"{FAULTS}/{first['id']}")) == first
    problem(sandbox.get(f"{FAULTS}/{first['id']}"), 404)
    problem(sandbox.delete(f"{FAULTS}/{first['id']}"), 404)
    assert [r["id"] for r in _ok(sandbox.get(FAULTS))["items"]] == [second["id"]]
    assert [e["type"] for e in events(sandbox) if e["type"].startswith("WebhookFault")] == [
        "WebhookFaultArmed",
        "WebhookFaultArmed",
        "WebhookFaultRemoved",
    ]
    # the scope: a token without it is refused
    narrow = sandbox.login("sandex", "sandex-secret", scope="events:read_event")
    problem(sandbox.get(FAULTS, headers=narrow), 403)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "action"),
        ({"action": {}}, "action"),
        ({"action": {"duplicate": True, "out_of_order": True}}, "action"),
        ({"action": {"drop": True}}, "action"),
        ({"action": {"fail": {"status": 302}}}, "action.fail.status"),
        ({"action": {"fail": {"status": 600}}}, "action.fail.status"),
        ({"action": {"fail": {}}}, "action.fail.status"),
        ({"action": {"delay_seconds": 0}}, "action.delay_seconds"),
        ({"action": {"delay_seconds": "5"}}, "action.delay_seconds"),
        ({"action": {"duplicate": False}}, "action.duplicate"),
        ({"action": {"out_of_order": False}}, "action.out_of_order"),
        ({"action": {"duplicate": True}, "times": 0}, "times"),
        ({"action": {"duplicate": True}, "times": 1001}, "times"),
        ({"action": {"duplicate": True}, "match": {"event_type": 7}}, "match.event_type"),
        ({"action": {"duplicate": True}, "match": {"event_type": ""}}, "match.event_type"),
    ],
)
def test_a_bad_body_is_a_400_naming_the_field(http_sandbox: Any, body: Any, field: str) -> None:
    refused = problem(http_sandbox.post(FAULTS, body), 400)
    assert refused["meta"] == {"field": field}, refused
    assert _ok(http_sandbox.get(FAULTS)) == {"items": []}


def test_a_tenant_keeps_at_most_a_hundred_rules(http_sandbox: Any) -> None:
    for _ in range(100):
        _arm(http_sandbox, {"duplicate": True})
    refused = problem(http_sandbox.post(FAULTS, {"action": {"duplicate": True}}), 409)
    assert "delete one" in refused["detail"]
    # another tenant's room is its own
    tenant, _ = http_sandbox.tenant()
    assert (
        http_sandbox.post(FAULTS, {"action": {"duplicate": True}}, headers=tenant).status_code
        == 200
    )
    first = _ok(http_sandbox.get(FAULTS))["items"][0]["id"]
    _ok(http_sandbox.delete(f"{FAULTS}/{first}"))
    _arm(http_sandbox, {"duplicate": True})
