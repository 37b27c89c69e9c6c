"""The fault gate's index (sandex.api_adapter.faults.FaultIndex): a call meets only the rules
that can match it, and those in the order they were armed, so that rules armed for
other tenants or other body values cost the call nothing but a lookup."""

from __future__ import annotations

from typing import Any

from sandex.api_adapter.auth import Principal
from sandex.api_adapter.faults import FaultIndex
from sandex.api_adapter.middleware.body_guard import PARSED_BODY
from sandex.api_adapter.operations import operation
from sandex.api_adapter.pipeline import Passage

CREATE_ORDER = operation("CreateOrder")


def _rule(n: int, owner: str | None = None, body: dict[str, Any] | None = None) -> dict[str, Any]:
    match: dict[str, Any] = {"operation": "CreateOrder"}
    if owner is not None:
        match["customer_id"] = owner
    if body is not None:
        match["body"] = body
    return {"id": f"r{n}", "position": n, "when": "before", "match": match, "spent": False}


def _call(customer: str, body: dict[str, Any]) -> tuple[dict[str, Any], Passage]:
    scope = {"path": "/v2/profiles/default/orders", "state": {PARSED_BODY: (b"", body)}}
    who = Principal(customer, f"client-{customer}", frozenset())
    return scope, Passage(CREATE_ORDER, who)


def _met(index: FaultIndex, customer: str, body: dict[str, Any]) -> list[str]:
    scope, passage = _call(customer, body)
    return [r.id for r in index.by_operation["CreateOrder"].candidates(scope, passage)]


def test_rules_of_other_body_values_and_other_tenants_are_not_met() -> None:
    index = FaultIndex()
    index.load(_rule(n, body={"market": f"M{n}"}) for n in range(100))
    index.add(_rule(100, owner="b"))
    assert _met(index, "a", {"market": "BTCUSD"}) == []
    assert _met(index, "a", {"market": "M42"}) == ["r42"]
    assert _met(index, "b", {"market": "BTCUSD"}) == ["r100"]


def test_the_rules_met_come_in_the_order_they_were_armed() -> None:
    index = FaultIndex()
    index.load(
        [
            _rule(1, owner="a", body={"side": "BUY"}),
            _rule(2),
            _rule(3, body={"market": "BTCUSD"}),
            _rule(4, body={"metadata": {"k": "v"}}),  # a value no dict key can be
            _rule(5, owner="a"),
        ]
    )
    assert _met(index, "a", {"market": "BTCUSD", "side": "BUY"}) == ["r1", "r2", "r3", "r4", "r5"]
    index.drop(["r2", "r5"])
    assert _met(index, "a", {"market": "BTCUSD", "side": "SELL"}) == ["r3", "r4"]


def test_a_rule_met_is_still_matched_whole() -> None:
    """The index only narrows: the rule's own match decides (here, its second field)."""
    index = FaultIndex()
    index.load([_rule(1, body={"market": "BTCUSD", "side": "SELL"})])
    scope, passage = _call("a", {"market": "BTCUSD", "side": "BUY"})
    (rule,) = index.by_operation["CreateOrder"].candidates(scope, passage)
    assert not rule.matches(scope, passage)
