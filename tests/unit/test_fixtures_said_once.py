"""A fixture is written once: several test modules that need the same one share it
(tests/conftest.py, or a helper of tests/support) instead of each keeping a copy that
drifts (the trading modules' `http_sb` was written three times)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# Fixtures that stay copied on purpose, each with its reason. None now: the five copies
# found when this rule was written (`sb`, `sandbox`, `servers`, `receivers`, `running`)
# were each the same fixture, and are written once in tests/conftest.py (`sandbox` is the
# suite's own, which takes a module's `sandex` marker as `http_sandbox` does). Nothing
# may join this without the reason its copies must differ.
KNOWN: dict[str, str] = {}


def _fixtures() -> dict[tuple[str, str, str], list[str]]:
    """Each fixture's (name, arguments, body without its docstring) -> where it is written."""
    found: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            if not any("fixture" in ast.unparse(d) for d in node.decorator_list):
                continue
            body = [
                s
                for s in node.body
                if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            ]
            key = (node.name, ast.unparse(node.args), ast.unparse(ast.Module(body, [])))
            found[key].append(str(path.relative_to(TESTS)))
    return found


def test_no_fixture_is_copied_into_several_modules() -> None:
    copied = {key[0]: places for key, places in _fixtures().items() if len(places) > 1}
    assert {name: places for name, places in copied.items() if name not in KNOWN} == {}
