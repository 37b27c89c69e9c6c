"""The scenario format: parsing, variables, matching, durations, and `sandex replay`'s
report and exit codes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sandex.api_adapter.cli import main
from sandex.api_adapter.cli.replay import _Printer
from sandex.api_adapter.scenarios.runner import StepResult, run_in_process
from sandex.engine.tools.scenario_file import (
    ScenarioError,
    compare,
    load,
    parse_duration,
    substitute,
)

MINIMAL = """
version: 1
purpose: nothing but a clock move
steps:
  - advance: 1s
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 2\npurpose: x\nsteps: []", "version 2 is not supported"),
        ("- a list", "a scenario is a mapping"),
        ("version: 1\nsteps: []", "purpose"),
        ("version: 1\npurpose: |\n  two\n  lines\nsteps: []", "one line"),
        ("version: 1\npurpose: x\nsteps: [{wait: 1s}]", "step 1 needs exactly one of"),
        ("version: 1\npurpose: x\nsteps: [{advance: 1s, set_to: x}]", "found advance, set_to"),
        ("version: 1\npurpose: x\nsteps: [{advance: soon}]", "duration 'soon' invalid"),
        ("version: 1\npurpose: x\nsettings: {clock: wall}\nsteps: []", "clock is not a scenario"),
        ("version: 1\npurpose: x\nsettings: {sed: 1}\nsteps: []", "sed"),
        ("version: 1\npurpose: x\nactors: {admin: {}}\nsteps: []", "actor name 'admin'"),
        ("version: 1\npurpose: x\nsteps: [{request: {method: GET}}]", "path"),
        ("version: 1\npurpose: x\nsteps: [{request: {method: GET, path: v2}}]", "starts with /"),
        ("version: 1\npurpose: [x\n", "not valid YAML"),
    ],
)
def test_a_bad_file_is_refused_naming_the_place(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        load(text, "bad.yaml")
    assert str(caught.value).startswith("bad.yaml")
    assert message in str(caught.value)


def test_durations() -> None:
    assert parse_duration("15s") == timedelta(seconds=15)
    assert parse_duration("1h30m") == timedelta(minutes=90)
    assert parse_duration("250ms") == timedelta(milliseconds=250)
    assert parse_duration("1d") == timedelta(days=1)
    assert parse_duration(90) == timedelta(seconds=90)
    assert parse_duration("0.5") == timedelta(milliseconds=500)
    for bad in ("-1s", "1x", "s", True, 1.5):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_substitution_keeps_types_takes_offsets_and_escapes_braces() -> None:
    variables = {"id": "abc", "n": 5, "a.profile_id": "p1", "now_ms": 1000}
    assert substitute("{n}", variables) == 5
    assert substitute("/x/{id}/{a.profile_id}", variables) == "/x/abc/p1"
    assert substitute({"{id}": ["{now_ms+500}", "{now_ms-1}"]}, variables) == {"abc": [1500, 999]}
    assert substitute("{{id}} and {id}", variables) == "{id} and abc"
    assert substitute("no braces", variables) == "no braces"
    with pytest.raises(KeyError):
        substitute("{missing}", variables)
    with pytest.raises(ValueError):
        substitute("{id+1}", variables)


def test_matching_subset_exact_and_ignore() -> None:
    actual = {"id": "x", "amount": "1.50", "items": [{"id": "a", "at": 1}], "extra": True}
    assert compare({"amount": "1.50"}, actual) == []
    assert compare({"amount": "1.5"}, actual) == ['amount: expected "1.5", got "1.50"']
    assert compare({"amount": 1.5}, actual) == ['amount: expected 1.5, got "1.50"']
    assert compare({"nope": 1}, actual) == ["nope: missing (expected 1)"]
    assert compare({"items": [{"id": "a"}]}, actual) == []
    assert compare({"items": []}, actual) == ["items: expected 0 items, got 1"]
    exact = compare({"id": "x", "amount": "1.50", "items": [{"id": "a"}]}, actual, mode="exact")
    assert exact == ["items.0.at: unexpected field 1", "extra: unexpected field True"]
    ignored = compare(
        {"id": "y", "amount": "1.50", "items": [{"id": "a"}]},
        actual,
        mode="exact",
        ignore=["id", "extra", "items.0.at"],
    )
    assert ignored == []
    assert compare({"a": {"b": 1}}, {"a": [1]}) == ["a: expected an object, got [1]"]


def test_a_run_reports_each_difference_and_continues() -> None:
    text = """
version: 1
purpose: one step differs, the next still runs
actors:
  alice: {}
steps:
  - request:
      method: POST
      path: /v2/sandbox/profiles/default/deposit
      body: {asset: BTC, amount: "1"}
    expect:
      status: 201
    save: {missing: no.such.field}
  - request:
      method: GET
      path: /v2/transfer/transfers/{missing}
  - expect_balances:
      balances: {BTC: "1.00", ETH: {available: "1", trading: "0"}}
"""
    result = run_in_process(load(text))
    assert [s.ok for s in result.steps] == [True, False, False, False]
    first = result.steps[1].diffs
    assert first[0] == "status: expected 201, got 200"
    assert first[1] == "save missing: the response has no no.such.field"
    assert result.steps[2].diffs == [
        "unknown variable {missing}: save it or declare the actor first"
    ]
    assert result.steps[3].diffs == ["ETH.available: expected 1, got 0"]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def replay(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """`sandex replay ...` in this process (a subprocess costs seconds of imports)."""
    monkeypatch.setattr("sandex.api_adapter.logging.configure", lambda **_: None)

    def run(*args: str) -> Ran:
        code = main(["replay", *args])
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


def test_the_command_line_prints_lines_a_summary_and_exits_by_outcome(
    tmp_path: Path, replay: Any
) -> None:
    _replay = replay
    good = tmp_path / "good.yaml"
    good.write_text(MINIMAL)
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        MINIMAL + "  - request: {method: GET, path: /v2/sandbox/clock}\n    expect: {status: 404}\n"
    )
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 9\n")

    ok = _replay(str(good), "--log-hash")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "  ok     1  advance 1s -> 200" in ok.stdout
    assert "  log sha256:" in ok.stdout
    assert ok.stdout.rstrip().endswith("1 scenarios, 1 steps: 1 passed, 0 failed")

    failed = _replay(str(good), str(bad))
    assert failed.returncode == 1
    assert "FAIL   2  GET /v2/sandbox/clock -> 200" in failed.stdout
    assert "status: expected 404, got 200" in failed.stdout
    assert "2 scenarios, 3 steps: 2 passed, 1 failed (in 1 scenarios)" in failed.stdout

    unreadable = _replay(str(good), str(broken))
    assert unreadable.returncode == 2
    assert "version 9 is not supported" in unreadable.stderr

    kept = tmp_path / "kept.db"
    assert _replay(str(good), "--out", str(kept)).returncode == 0
    assert kept.exists()


def test_the_progress_bar_runs_under_the_lines() -> None:
    printer = _Printer(total_steps=2, progress=True)
    printer.step(StepResult(1, "advance 1s", True, status=200))
    printer.step(StepResult(2, "GET /x", False, ["status: expected 200, got 404"], 404))
    assert printer.progress is not None and printer.progress.completed == 2
    printer.stop()
