"""A fixture is written once: several test modules that need the same one share it
(tests/conftest.py, or a helper of tests/support) instead of each keeping a copy that
drifts (the trading modules' `http_sb` was written three times)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# Copies found when this rule was written, not yet examined: each to be said once or
# given its reason here. Nothing may join them.
KNOWN = {
    "sb": "the trading modules' funded still sandbox, each module's `sb`; a shared one"
    " would shadow the other modules' `sb` of their own",
    "sandbox": "webhook faults and tests/system's webhooks: not yet examined",
    "servers": "server_helpers and the live database's: not yet examined",
    "receivers": "tests/system's webhooks and webhook destinations: not yet examined",
    "running": "tests/system's plugin modules: not yet examined",
}


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
