"""Every code block in the docs runs: Python blocks are executed, YAML blocks must load
as settings, and every YAML block of docs/scenarios.md is a scenario that replays green.
(The README's shell blocks run against a live server in test_cli.py.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from sandex.engine.config.settings import Settings

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _blocks(lang: str) -> list[tuple[str, int, str]]:
    found = []
    for doc in sorted(DOCS.glob("*.md")):
        for i, block in enumerate(re.findall(rf"```{lang}\n(.*?)```", doc.read_text(), flags=re.S)):
            found.append((doc.name, i, block))
    return found


@pytest.mark.parametrize(("doc", "index", "code"), _blocks("python"), ids=lambda v: str(v)[:20])
def test_python_blocks_in_the_docs_run(doc: str, index: int, code: str) -> None:
    exec(compile(code, f"{doc}[{index}]", "exec"), {"__name__": f"docs_{index}"})


@pytest.mark.parametrize(("doc", "index", "text"), _blocks("yaml"), ids=lambda v: str(v)[:20])
def test_yaml_setting_blocks_in_the_docs_are_valid_settings(
    doc: str, index: int, text: str
) -> None:
    data = yaml.safe_load(text)
    if doc == "configuration.md":
        Settings.model_validate(data)


_SCENARIO_BLOCKS = [b for b in _blocks("yaml") if b[0] == "scenarios.md"]


def test_the_scenario_format_page_shows_scenarios() -> None:
    assert len(_SCENARIO_BLOCKS) >= 4


@pytest.mark.parametrize(("doc", "index", "text"), _SCENARIO_BLOCKS, ids=lambda v: str(v)[:20])
def test_scenario_blocks_in_the_docs_replay_green(doc: str, index: int, text: str) -> None:
    from sandex.api_adapter.scenarios.runner import run_in_process
    from sandex.engine.tools.scenario_file import load

    result = run_in_process(load(text, f"{doc}[{index}]"), check_invariants=True)
    assert result.ok, [(s.label, s.diffs) for s in result.failed]
