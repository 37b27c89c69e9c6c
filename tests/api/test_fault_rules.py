"""HTTP fault rules (issue 31, docs/faults.md): rules armed with POST /v2/sandbox/faults
and the `Prefer: sandbox-fault=<name>` templates, through HTTP; every decision is an
event of the log, so a second world on the same seed, or a rebuild, fails the same
calls. Wire actions (drop, reset, empty, truncate) are held here to their decision (the
event and the request's state), not to what reaches the socket."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.types import Receive, Scope, Send

from sandex.api_adapter.app import create_app
from sandex.api_adapter.faults import FIRED
from tests.support.trading_helpers import events, limit
from tests.support.transfer_helpers import problem, withdraw

FAULTS = "/v2/sandbox/faults"
ORDERS = "/v2/profiles/default/orders"
ORDER = {"market": "BTCUSD", **limit("BUY", "30000", "0.01")}


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def arm(sb: Any, headers: Any = None, **rule: Any) -> dict[str, Any]:
    body = {"match": {"operation": "CreateOrder"}, "action": {"problem": {"status": 503}}}
    body.update(rule)
    kw = {"headers": headers} if headers is not None else {}
    return _ok(sb.post(FAULTS, body, **kw))


def _orders(sb: Any) -> list[dict[str, Any]]:
    return _ok(sb.get(ORDERS))["items"]  # type: ignore[no-any-return]


def test_create_order_failed_twice_before_then_the_third_succeeds(sandbox: Any) -> None:
    sandbox.deposit("USD", "10000")
    rule = arm(sandbox, when="before", times=2)
    assert rule["id"] and rule["status"] == "active" and rule["times"] == 2
    for _ in range(2):
        body = problem(sandbox.post(ORDERS, ORDER), 503)
        assert body["meta"] == {"sandbox_fault": rule["id"]}
    assert len(_orders(sandbox)) == 0  # nothing was written before
    _ok(sandbox.post(ORDERS, ORDER))
    assert len(_orders(sandbox)) == 1
    after = _ok(sandbox.get(f"{FAULTS}/{rule['id']}"))
    assert (after["fired"], after["spent"], after["status"]) == (2, True, "spent")
    fired = events(sandbox, "SandboxFaultFired")
    assert [e["data"]["rule_id"] for e in fired] == [rule["id"]] * 2


@pytest.mark.sandex(settings={"rate_limits_enabled": True})
def test_a_429_fault_carries_retry_after_and_the_rate_limit_headers(http_sandbox: Any) -> None:
    sb = http_sandbox
    arm(sb, action={"problem": {"status": 429, "retry_after": 7}})
    r = sb.post(ORDERS, ORDER)
    problem(r, 429)
    assert r.headers["retry-after"] == "7"
    assert {"ratelimit-limit", "ratelimit-remaining", "ratelimit-policy"} <= r.headers.keys()


def test_a_withdrawal_answered_500_after_its_commit_is_found_by_its_retry(sandbox: Any) -> None:
    sandbox.deposit("BTC", "1")
    arm(
        sandbox,
        match={"operation": "CreateCryptoWithdrawal"},
        when="after",
        action={"problem": {"status": 500}},
        times=1,
    )
    problem(withdraw(sandbox, ref_id="once"), 500)
    again = problem(withdraw(sandbox, ref_id="once"), 409, "already-exists")
    existing = again["meta"]["existing"]
    listed = _ok(sandbox.get("/v2/transfer/transfers"))["items"]
    assert [t["id"] for t in listed if t["type"] == "CRYPTO_WITHDRAWAL"] == [existing["id"]]
    assert sandbox.balance("BTC")["available"] == "0.99898"  # held once
    log = events(sandbox)
    kinds = [e["type"] for e in log]
    # the decision is recorded after the withdrawal it follows
    assert kinds.index("SandboxFaultFired") > kinds.index("TransferCreated")


def test_an_after_rule_does_not_fire_on_a_refused_call(sandbox: Any) -> None:
    sandbox.deposit("USD", "10000")
    arm(sandbox, when="after", action={"problem": {"status": 502}}, times=1)
    problem(sandbox.post(ORDERS, {**ORDER, "side": "UP"}), 400)
    assert events(sandbox, "SandboxFaultFired") == []
    problem(sandbox.post(ORDERS, ORDER), 502)
    assert len(_orders(sandbox)) == 1  # committed, then the answer lost


def test_a_tenants_rules_match_only_its_own_calls(http_sandbox: Any) -> None:
    a, _ = http_sandbox.tenant()
    b, _ = http_sandbox.tenant()
    deposit = {"match": {"operation": "CreateSandboxDeposit"}}
    mine = arm(http_sandbox, headers=a, **deposit)
    assert "customer_id" in mine["match"]
    body = {"asset": "USD", "amount": "10"}
    path = "/v2/sandbox/profiles/default/deposit"
    _ok(http_sandbox.post(path, body, headers=b))
    _ok(http_sandbox.post(path, body))  # the bootstrap client's
    problem(http_sandbox.post(path, body, headers=a), 503)
    assert _ok(http_sandbox.get(FAULTS, headers=b))["items"] == []
    assert [r["id"] for r in _ok(http_sandbox.get(FAULTS, headers=a))["items"]] == [mine["id"]]
    assert [r["id"] for r in _ok(http_sandbox.get(FAULTS))["items"]] == [mine["id"]]
    problem(http_sandbox.get(f"{FAULTS}/{mine['id']}", headers=b), 404)
    problem(http_sandbox.delete(f"{FAULTS}/{mine['id']}", headers=b), 404)
    _ok(http_sandbox.delete(f"{FAULTS}/{mine['id']}", headers=a))
    _ok(http_sandbox.post(path, body, headers=a))


def _failed(sb: Any, calls: int) -> list[int]:
    arm(sb, match={"operation": "ListProfiles"}, probability="0.3")
    return [i for i in range(calls) if sb.get("/v2/profiles").status_code == 503]


def test_a_seeded_probability_fails_the_same_calls_in_another_world(sandbox_factory: Any) -> None:
    first = sandbox_factory("one.db")
    failed = _failed(first, 200)
    assert 30 < len(failed) < 90  # about 30% of 200
    assert _failed(sandbox_factory("two.db"), 200) == failed
    # the log holds each decision: read back, it names the same calls
    decisions = [e["data"]["match"] - 1 for e in events(first) if e["type"] == "SandboxFaultFired"]
    assert decisions == failed
    assert first.verify() == []  # and a rebuild from the log writes the same rules table


def test_skip_until_and_ttl(http_sandbox: Any) -> None:
    profiles = {"match": {"operation": "ListProfiles"}}
    skipping = arm(http_sandbox, skip=1, times=1, **profiles)
    statuses = [http_sandbox.get("/v2/profiles").status_code for _ in range(3)]
    assert statuses == [200, 503, 200]
    assert _ok(http_sandbox.get(f"{FAULTS}/{skipping['id']}"))["matched"] == 2
    now = _ok(http_sandbox.get("/v2/sandbox/clock"))["now"]
    until = arm(http_sandbox, until=now[:17] + "30Z", **profiles)  # 30 s of the minute
    problem(http_sandbox.get("/v2/profiles"), 503)
    http_sandbox.advance(30)
    assert http_sandbox.get("/v2/profiles").status_code == 200
    assert _ok(http_sandbox.get(f"{FAULTS}/{until['id']}"))["status"] == "expired"
    ttl = arm(http_sandbox, ttl_seconds=10, **profiles)
    assert ttl["expires_at"] is not None
    problem(http_sandbox.get("/v2/profiles"), 503)
    http_sandbox.advance(10)
    assert http_sandbox.get("/v2/profiles").status_code == 200


def test_list_get_and_delete(http_sandbox: Any) -> None:
    one = arm(http_sandbox, match={"method": "GET", "path": "/v2/profiles"})
    two = arm(http_sandbox, action={"delay_ms": {"min": 1, "max": 3}}, when="after")
    assert one["match"]["operation"] == "ListProfiles"
    listed = _ok(http_sandbox.get(FAULTS))["items"]
    assert [r["id"] for r in listed] == [one["id"], two["id"]]
    assert _ok(http_sandbox.get(f"{FAULTS}/{two['id']}")) == {**two, "status": "active"}
    gone = _ok(http_sandbox.delete(f"{FAULTS}/{one['id']}"))
    assert gone["id"] == one["id"]
    problem(http_sandbox.get(f"{FAULTS}/{one['id']}"), 404)
    problem(http_sandbox.delete(f"{FAULTS}/{one['id']}"), 404)
    assert http_sandbox.get("/v2/profiles").status_code == 200  # the removed rule fires no more


def test_a_wrong_rule_is_a_400_naming_its_field(http_sandbox: Any) -> None:
    cases = [
        ({"match": {"operation": "NoSuchThing"}}, "match.operation"),
        ({"match": {"operation": "CreateSandboxFault"}}, "match.operation"),
        ({"match": {"method": "GET", "path": "/v2/nowhere"}}, "match.path"),
        ({"action": {"problem": {"status": 99}}}, "action.problem.status"),
        ({"action": {"drop": True, "empty": True}}, "action"),
        ({"when": "sometime"}, "when"),
        ({"probability": "2"}, "probability"),
        ({"times": "twice"}, "times"),
    ]
    for rule, field in cases:
        body = {"match": {"operation": "CreateOrder"}, "action": {"drop": True}, **rule}
        answer = problem(http_sandbox.post(FAULTS, body), 400)
        assert answer["meta"]["field"] == field, (rule, answer)
        assert answer["detail"].startswith(field), answer
    assert _ok(http_sandbox.get(FAULTS))["items"] == []


def test_prefer_templates_fire_once_and_are_recorded(sandbox: Any) -> None:
    sandbox.deposit("USD", "10000")
    prefer = {**sandbox.headers, "Prefer": "sandbox-fault=unavailable"}
    r = sandbox.post(ORDERS, ORDER, headers=prefer)
    problem(r, 503)
    assert r.headers["retry-after"] == "1"
    _ok(sandbox.post(ORDERS, ORDER))
    unknown = {**sandbox.headers, "Prefer": "sandbox-fault=nope"}
    assert problem(sandbox.post(ORDERS, ORDER, headers=unknown), 400)["meta"] == {"field": "Prefer"}
    fired = events(sandbox, "SandboxFaultFired")
    assert [(e["data"]["template"], e["data"]["operation"]) for e in fired] == [
        ("unavailable", "CreateOrder")
    ]
    assert len(_orders(sandbox)) == 1


def _spied(sb: Any, *, raising: bool = False) -> list[dict[str, Any]]:
    """The request state of each request the app answers (what fired, the wire's kind);
    `raising`: the client raises what the app raises, as a wire fault's drop and reset."""
    seen: list[dict[str, Any]] = []
    app = sb.app

    async def spy(scope: Scope, receive: Receive, send: Send) -> None:
        scope["state"] = {}
        try:
            await app(scope, receive, send)
        finally:
            if scope["type"] == "http":
                seen.append(scope["state"])

    sb.http = TestClient(spy, raise_server_exceptions=raising)
    return seen


def test_wire_actions_are_decided_after_the_commit_and_armed_on_the_request(
    sandbox: Any,
) -> None:
    """In process there is no connection: the app does what one would
    (sandex.api_adapter.wire_faults): drop and reset raise httpx's errors to the caller, empty
    and truncate spoil the body; each after the call was committed."""
    sandbox.deposit("USD", "10000")
    seen = _spied(sandbox, raising=True)
    raised = {"drop": httpx.RemoteProtocolError, "reset": httpx.ReadError}
    for kind in ("drop", "reset", "empty", "truncate"):
        rule = arm(sandbox, when="after", action={kind: True}, times=1)
        if kind in raised:
            with pytest.raises(raised[kind]):
                sandbox.post(ORDERS, ORDER)
        else:
            r = sandbox.post(ORDERS, ORDER)
            assert r.status_code == 200
            if kind == "empty":
                assert r.content == b""
            else:  # the whole length announced, half of it sent
                assert 0 < len(r.content) < int(r.headers["content-length"])
        state = seen[-1]
        assert state["sandex.wire"] == kind
        assert state[FIRED] == {
            "rule_id": rule["id"],
            "template": None,
            "when": "after",
            "action": kind,
        }
    lost = {**sandbox.headers, "Prefer": "sandbox-fault=lost-answer"}
    with pytest.raises(httpx.RemoteProtocolError):
        sandbox.post(ORDERS, ORDER, headers=lost)
    assert seen[-1]["sandex.wire"] == "drop"
    assert seen[-1][FIRED]["template"] == "lost-answer"
    assert len(_orders(sandbox)) == 5  # every call was committed


def test_a_delay_fires_and_the_call_goes_on(sandbox: Any) -> None:
    sandbox.deposit("USD", "10000")
    arm(sandbox, action={"delay_ms": 1}, times=1)
    _ok(sandbox.post(ORDERS, ORDER))
    (fired,) = events(sandbox, "SandboxFaultFired")
    assert fired["data"]["action"] == {"delay_ms": 1}


def test_the_rules_follow_restores_resets_and_a_new_app(sandbox: Any) -> None:
    profiles = {"match": {"operation": "ListProfiles"}}
    rule = arm(sandbox, **profiles)
    _ok(sandbox.post("/v2/sandbox/snapshots", {"name": "armed"}))
    _ok(sandbox.delete(f"{FAULTS}/{rule['id']}"))
    assert sandbox.get("/v2/profiles").status_code == 200
    _ok(sandbox.post("/v2/sandbox/snapshots/armed/restore"))
    problem(sandbox.get("/v2/profiles"), 503)  # the rule came back with the snapshot
    # an app built anew (a restart's, a fork's) loads the rules from the read model
    again = TestClient(create_app(sandbox.engine), raise_server_exceptions=False)
    assert again.get("/v2/profiles", headers=sandbox.headers).status_code == 503
    _ok(sandbox.post("/v2/sandbox/reset"))
    assert sandbox.get("/v2/profiles").status_code == 200
    assert _ok(sandbox.get(FAULTS))["items"] == []


def test_a_full_log_fires_no_fault_and_the_read_still_answers(sandbox_factory: Any) -> None:
    profiles = {"match": {"operation": "ListProfiles"}}
    counted = sandbox_factory("counted.db")
    arm(counted, **profiles)
    held = len(events(counted))
    full = sandbox_factory("full.db", world_max_events=held)
    arm(full, **profiles)
    assert full.get("/v2/profiles").status_code == 200  # no decision can be recorded
    assert events(full, "SandboxFaultFired") == []
