"""The deposit scopes are held by clients recorded with the earlier defaults, whose
ClientCreated events do not name them (engine/config/settings.py, held_scopes)."""

from __future__ import annotations

from engine.config.settings import (
    BOOTSTRAP_SCOPES,
    CUSTOMER_SCOPES,
    DEPOSIT_SCOPES,
    held_scopes,
)


def test_a_default_client_holds_the_deposit_scopes() -> None:
    for defaults in (BOOTSTRAP_SCOPES, CUSTOMER_SCOPES):
        assert set(held_scopes(defaults)) == set(defaults) | set(DEPOSIT_SCOPES)
        assert not set(DEPOSIT_SCOPES) & set(defaults)  # the recorded list is unchanged


def test_a_client_with_chosen_scopes_holds_only_those() -> None:
    chosen = ("funding:read_profile", "transfer:read_deposit_address")
    assert held_scopes(chosen) == chosen
    assert held_scopes(list(CUSTOMER_SCOPES[1:])) == tuple(CUSTOMER_SCOPES[1:])
