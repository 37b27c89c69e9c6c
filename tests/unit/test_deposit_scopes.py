"""The deposit scopes are held by clients recorded before they existed, whose
ClientCreated events do not name them (engine/config/settings.py, IMPLIED_SCOPES)."""

from __future__ import annotations

from sandex.engine.config.settings import BOOTSTRAP_SCOPES, CUSTOMER_SCOPES, granted_scopes

DEPOSIT_SCOPES = {
    "transfer:read_deposit_address",
    "transfer:write_deposit_address",
    "transfer:reject_crypto_deposit",
    "transfer:update_crypto_deposit",
    "transfer:write_sandbox_crypto_deposit",
}


def test_a_default_client_holds_the_deposit_scopes() -> None:
    for defaults in (BOOTSTRAP_SCOPES, CUSTOMER_SCOPES):
        assert set(granted_scopes(defaults)) >= DEPOSIT_SCOPES
        assert not DEPOSIT_SCOPES & set(defaults)  # the recorded list is unchanged


def test_a_client_with_chosen_scopes_holds_those_and_what_they_imply_only() -> None:
    chosen = ("funding:read_profile", "transfer:read_deposit_address")
    implied_by_profiles = {
        "conversion:read_conversion_stablecoin",
        "identity:read_identity",
        "identity:read_account",
    }
    assert set(granted_scopes(chosen)) == {*chosen, *implied_by_profiles}
    assert not DEPOSIT_SCOPES & set(granted_scopes(("exchange:read_order",)))
