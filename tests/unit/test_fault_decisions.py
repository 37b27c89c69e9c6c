"""HTTP fault rules in the engine (sandex.engine.domain.sandbox_faults): what arming checks,
and what the writer decides for a matching call (skip, times, probability, time)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sandex.engine import Engine, open_engine
from sandex.engine.domain.sandbox_faults import ArmFault, DecideFault, RemoveFault
from sandex.engine.kernel.commands import AdvanceClock
from sandex.engine.kernel.errors import Invalid, NotFound
from sandex.engine.tools.verify import verify
from tests.conftest import START, make_settings

OPS = (
    ("CreateOrder", "POST", "/v2/profiles/{profile_id}/orders"),
    ("GetTransfer", "GET", "/v2/transfer/transfers/{id}"),
)


@pytest.fixture
def engine() -> Iterator[Engine]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        open_engine(Path(tmp) / "f.db", make_settings()) as made,
    ):
        yield made


def arm(engine: Engine, owner: str | None = None, **rule: Any) -> dict[str, Any]:
    body = {"match": {"operation": "CreateOrder"}, "action": {"problem": {"status": 503}}}
    body.update(rule)
    return engine.execute(ArmFault(rule=body, owner=owner, operations=OPS))  # type: ignore[no-any-return]


def decide(engine: Engine, *ids: str, when: str = "before") -> dict[str, Any]:
    command = DecideFault(operation="CreateOrder", when=when, rule_ids=ids)
    return engine.execute(command)  # type: ignore[no-any-return]


def fired(engine: Engine, rule_id: str, calls: int) -> list[bool]:
    return [decide(engine, rule_id)["fired"] is not None for _ in range(calls)]


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"match": {"operation": "NoSuchOperation"}}, "match.operation"),
        ({"match": {"method": "POST", "path": "/v2/nowhere"}}, "match.path"),
        ({"match": {"operation": "CreateOrder", "colour": "red"}}, "match.colour"),
        ({"match": {"operation": "CreateOrder", "body": {"market": {}}}}, "match.body.market"),
        ({"when": "during"}, "when"),
        ({"action": {}}, "action"),
        ({"action": {"drop": True, "reset": True}}, "action"),
        ({"action": {"problem": {"status": 200}}}, "action.problem.status"),
        ({"action": {"problem": {"status": 503, "type": "nonsense"}}}, "action.problem.type"),
        ({"action": {"delay_ms": -1}}, "action.delay_ms"),
        ({"action": {"delay_ms": {"min": 5, "max": 1}}}, "action.delay_ms.max"),
        ({"action": {"drop": False}}, "action.drop"),
        ({"times": 0}, "times"),
        ({"skip": "two"}, "skip"),
        ({"probability": "1.5"}, "probability"),
        ({"until": "yesterday"}, "until"),
        ({"until": "2000-01-01T00:00:00Z"}, "until"),
        ({"ttl_seconds": 0}, "ttl_seconds"),
        ({"often": True}, "often"),
    ],
)
def test_a_wrong_rule_is_refused_naming_its_field(
    engine: Engine, rule: dict[str, Any], field: str
) -> None:
    with pytest.raises(Invalid) as refused:
        arm(engine, **rule)
    assert refused.value.field == field


def test_a_path_template_names_its_operation(engine: Engine) -> None:
    made = arm(engine, match={"method": "get", "path": "/v2/transfer/transfers/{id}"})
    assert made["match"]["operation"] == "GetTransfer"


def test_times_then_spent(engine: Engine) -> None:
    rule = arm(engine, times=2)
    first, second = decide(engine, rule["id"]), decide(engine, rule["id"])
    assert first["fired"]["spent"] is False and first["dead"] == []
    assert second["fired"]["spent"] is True and second["dead"] == [rule["id"]]
    assert decide(engine, rule["id"])["fired"] is None
    assert engine.state.ext["sandbox_faults"][rule["id"]]["spent"] is True


def test_skip_lets_the_first_calls_through(engine: Engine) -> None:
    rule = arm(engine, skip=2, times=1)
    assert fired(engine, rule["id"], 4) == [False, False, True, False]


def test_until_and_ttl_end_a_rule_on_engine_time(engine: Engine) -> None:
    until = arm(engine, until=(START + timedelta(seconds=30)).isoformat())
    ttl = arm(engine, ttl_seconds=60)
    assert decide(engine, until["id"])["fired"] is not None
    engine.execute(AdvanceClock(by=timedelta(seconds=30)))
    assert decide(engine, until["id"]) == {"fired": None, "dead": [until["id"]]}
    assert decide(engine, ttl["id"])["fired"] is not None
    engine.execute(AdvanceClock(by=timedelta(seconds=30)))
    assert decide(engine, ttl["id"])["fired"] is None


def test_a_delay_range_is_drawn_within_it(engine: Engine) -> None:
    rule = arm(engine, action={"delay_ms": {"min": 10, "max": 20}})
    delays = [decide(engine, rule["id"])["fired"]["action"]["delay_ms"] for _ in range(20)]
    assert all(10 <= d <= 20 for d in delays) and len(set(delays)) > 1


def test_the_first_rule_that_fires_wins_and_the_passed_are_recorded(engine: Engine) -> None:
    skipping = arm(engine, skip=1)
    other = arm(engine, action={"problem": {"status": 500}})
    first = decide(engine, skipping["id"], other["id"])
    assert first["fired"]["rule_id"] == other["id"]
    second = decide(engine, skipping["id"], other["id"])
    assert second["fired"]["rule_id"] == skipping["id"]
    assert engine.state.ext["sandbox_faults"][other["id"]]["fired"] == 1


def _probability_run() -> list[bool]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        open_engine(Path(tmp) / "p.db", make_settings()) as engine,
    ):
        rule = arm(engine, probability="0.3")
        return fired(engine, rule["id"], 200)


def test_a_probability_draws_the_same_calls_from_the_same_seed() -> None:
    first, second = _probability_run(), _probability_run()
    assert first == second
    assert 30 < sum(first) < 90  # about 30% of 200


def test_a_removed_rule_is_gone_and_a_tenant_removes_only_its_own(engine: Engine) -> None:
    mine = arm(engine, owner="tenant-a")
    assert mine["match"]["customer_id"] == "tenant-a"
    with pytest.raises(NotFound):
        engine.execute(RemoveFault(rule_id=mine["id"], owner="tenant-b"))
    engine.execute(RemoveFault(rule_id=mine["id"], owner="tenant-a"))
    assert decide(engine, mine["id"]) == {"fired": None, "dead": [mine["id"]]}
    with pytest.raises(NotFound):
        engine.execute(RemoveFault(rule_id=mine["id"]))


def test_a_template_fires_for_one_call(engine: Engine) -> None:
    answer = engine.execute(DecideFault(operation="CreateOrder", template="unavailable"))
    assert answer["fired"]["template"] == "unavailable"
    assert answer["fired"]["action"] == {"problem": {"status": 503}}
    with pytest.raises(Invalid) as refused:
        engine.execute(DecideFault(operation="CreateOrder", template="nope"))
    assert refused.value.field == "Prefer"


def test_the_rules_table_is_what_a_replay_of_the_log_writes() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "v.db"
        with open_engine(db, make_settings()) as engine:
            kept, removed = arm(engine, times=1, skip=1), arm(engine)
            decide(engine, kept["id"])
            decide(engine, kept["id"])
            engine.execute(RemoveFault(rule_id=removed["id"]))
        assert verify(str(db)) == []
