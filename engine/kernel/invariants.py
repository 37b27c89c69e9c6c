"""Invariants of a state, TigerBeetle-style: stated once, checked by `sandex verify`
on a replayed log and, when `assert_invariants` is set (the test suite sets it), by the
writer after every command."""

from __future__ import annotations

from collections.abc import Iterable

from sandex.engine.kernel.registry import Check
from sandex.engine.kernel.state import State


def check_state(state: State, checks: Iterable[Check]) -> list[str]:
    """The ledger's broken invariants, then those of `checks` (the registry's: each
    domain module's `Registration.checks`)."""
    problems = state.ledger.check()
    for check in checks:
        problems.extend(check(state))
    return problems
