"""Invariants of a state, TigerBeetle-style: stated once, checked by `sandex verify`
on a replayed log and, when `assert_invariants` is set (the test suite sets it), by the
writer after every command."""

from __future__ import annotations

from collections.abc import Callable

from engine.kernel.state import State

# Checks contributed by domain modules: each answers its broken invariants as text.
CHECKS: list[Callable[[State], list[str]]] = []


def check_state(state: State) -> list[str]:
    problems = state.ledger.check()
    for check in CHECKS:
        problems.extend(check(state))
    return problems
