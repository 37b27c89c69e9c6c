"""The command line's shape: one module per verb, and no database of its own (what it
reads comes through the read side, engine/read/)."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from sandex.api_adapter.cli.parser import parser

CLI = Path(__file__).resolve().parents[2] / "api_adapter" / "cli"
# Modules that would give the command line a connection of its own; of the store, only
# its errors (a database held by a server, or by another writer: serve waits as the
# standby on PostgreSQL) may be named, to say so in one line.
NO_DATABASE = ("sqlite3", "sqlite_utils", "sandex.engine.store")
STORE_ERRORS = {"StoreUnavailable", "LeaseHeld"}
# errors.py names sqlite3's exception classes to report them in one line; its --db check
# is the read side's to hold (engine/read/database_contents.py), not this test's.
SQLITE_ERRORS_ONLY = {"errors.py"}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if not (
                    node.module.startswith("sandex.engine.store") and alias.name in STORE_ERRORS
                )
            )
    return found


def test_the_command_line_opens_no_database_itself() -> None:
    for path in sorted(CLI.glob("*.py")):
        near = [m for m in _imports(path) if m.startswith(NO_DATABASE)]
        if path.name in SQLITE_ERRORS_ONLY:
            near = [m for m in near if m != "sqlite3"]
        assert not near, f"{path.name} imports {near}: read through engine/read/ instead"


def _verbs(p: argparse.ArgumentParser, prefix: str = "") -> dict[str, object]:
    found = {}
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(_verbs(sub, f"{prefix}{name} "))
    if "func" in (defaults := p._defaults):
        found[prefix.strip()] = defaults["func"]
    return found


def test_each_verb_runs_from_its_own_module() -> None:
    verbs = _verbs(parser())
    assert "time-travel" in verbs and "replay" in verbs
    for verb, func in verbs.items():
        module = getattr(func, "__module__", "")
        assert module == f"sandex.api_adapter.cli.{verb.split()[0].replace('-', '_')}", (
            verb,
            module,
        )
