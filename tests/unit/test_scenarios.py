"""Every scenario in `scenarios/` replays green, twice, with a byte-identical log."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandex.api_adapter.scenarios.runner import ScenarioResult, run_in_process
from sandex.engine.tools.scenario_file import load_file
from sandex.engine.tools.verify import verify

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "scenarios").glob("*.yaml"))


def _report(result: ScenarioResult) -> str:
    lines = [f"{result.scenario.source}: {len(result.failed)} steps differ"]
    for step in result.failed:
        lines.append(f"  step {step.index} {step.label}")
        lines += [f"    {d}" for d in step.diffs]
    return "\n".join(lines)


def test_there_are_at_least_twenty_scenarios_each_with_a_purpose() -> None:
    assert len(SCENARIOS) >= 20
    for path in SCENARIOS:
        assert load_file(path).purpose


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_the_scenario_replays_green_and_twice_to_the_same_log(path: Path, tmp_path: Path) -> None:
    scenario = load_file(path)
    first = run_in_process(scenario, check_invariants=True, keep_db=tmp_path / "first.db")
    assert first.ok, _report(first)
    assert verify(str(tmp_path / "first.db")) == []
    second = run_in_process(scenario)
    assert second.ok, _report(second)
    assert first.log_hash is not None and first.log_hash.startswith("sha256:")
    assert second.log_hash == first.log_hash
