"""A YAML error in one line: where it is (line and column) and what is wrong.

PyYAML's own message spans several lines (the problem, the context, and a copy of the
offending line with a caret), which breaks the one-line `sandex: ...` of the command
line and of every file a command reads (config, scenario, order flow)."""

from __future__ import annotations

import yaml


def describe(exc: yaml.YAMLError) -> str:
    """` line L column C: not valid YAML: <problem> (<context>)` (the place first, so
    that it follows a file name)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f" line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    if problem:
        what = f"{problem} ({context})" if context else str(problem)
    else:
        what = " ".join(str(exc).split())
    return f"{where}: not valid YAML: {what}"
