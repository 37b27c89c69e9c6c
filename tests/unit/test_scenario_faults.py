"""Faults in the scenario format: a `fault` step arms a rule, and a request step may
expect what a wire fault leaves a client (`expect: {wire: drop}`); the runner tells the
four outcomes apart from an answer."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from sandex.api_adapter.scenarios.runner import wire_outcome
from sandex.api_adapter.scenarios.targets import _ASGI
from sandex.engine.tools.scenario_file import FaultStep, RequestStep, ScenarioError, load

ARMED = """
version: 1
purpose: a fault armed by a tenant, then a call it spoils
actors:
  alice: {}
steps:
  - fault:
      match: {operation: CreateOrder}
      when: after
      action: {drop: true}
      times: 1
    actor: alice
    save: {rule: id}
  - request:
      method: POST
      path: /v2/profiles/default/orders
      headers: {Prefer: sandbox-fault=unavailable}
      body: {side: BUY, market: BTCUSD, type: MARKET, quote_amount: "10"}
    expect: {wire: drop}
"""


def test_a_fault_step_and_a_wire_expectation_are_read() -> None:
    scenario = load(ARMED)
    fault, request = scenario.steps
    assert isinstance(fault, FaultStep) and isinstance(request, RequestStep)
    assert fault.fault["action"] == {"drop": True} and fault.actor == "alice"
    assert fault.save == {"rule": "id"}
    assert request.expect.wire == "drop"
    assert request.request.headers == {"Prefer": "sandbox-fault=unavailable"}


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ("{wire: lost}", "wire 'lost' invalid: one of drop, reset, empty, truncate"),
        ("{wire: drop, status: 200}", "expect wire stands alone"),
        ("{wire: empty, body: {}}", "expect wire stands alone"),
    ],
)
def test_a_bad_wire_expectation_is_refused_naming_it(expect: str, message: str) -> None:
    text = f"""
version: 1
purpose: x
steps:
  - request: {{method: GET, path: /v2/profiles}}
    expect: {expect}
"""
    with pytest.raises(ScenarioError, match=message):
        load(text, "bad.yaml")


def test_a_step_expecting_a_wire_fault_saves_nothing() -> None:
    text = """
version: 1
purpose: x
steps:
  - request: {method: GET, path: /v2/profiles}
    expect: {wire: empty}
    save: {x: id}
"""
    with pytest.raises(ScenarioError, match="no answer to save from"):
        load(text, "bad.yaml")


def test_a_fault_step_needs_a_rule() -> None:
    with pytest.raises(ScenarioError, match="fault"):
        load("version: 1\npurpose: x\nsteps: [{fault: 3}]", "bad.yaml")


async def _spoiling(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """What `sandex.api_adapter.wire_faults` does in process, by path: raise the connection's
    error (drop, reset), answer 200 with nothing (empty) or with half the announced
    length (truncate); else an ordinary answer."""
    kind = scope["path"].strip("/")
    if kind == "drop":
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
    if kind == "reset":
        raise httpx.ReadError("[Errno 104] Connection reset by peer")
    body, length = {"empty": (b"", 0), "truncate": (b'{"id":', 12)}.get(kind, (b"{}", 2))
    status = 201 if kind == "created" else 200
    headers = [(b"content-length", b"%d" % length)]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.mark.parametrize(
    ("path", "outcome", "status"),
    [
        ("/drop", "drop", None),
        ("/reset", "reset", None),
        ("/empty", "empty", 200),
        ("/truncate", "truncate", 200),
        ("/ok", "an answer 200", 200),
        ("/created", "an answer 201", 201),
    ],
)
def test_the_runner_tells_each_wire_outcome_in_process(
    path: str, outcome: str, status: int | None
) -> None:
    with httpx.Client(transport=_ASGI(_spoiling), base_url="http://sandex") as http:
        assert wire_outcome(http, "GET", path, {}) == (outcome, status)
        # the connection's error reaches the caller of an ordinary request too
        if outcome in ("drop", "reset"):
            with pytest.raises(httpx.TransportError):
                http.get(path)
        else:
            assert http.get(path).status_code == status
