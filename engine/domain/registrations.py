"""The domain's registrations, in the order the registry merges them: the list an engine
is built with (engine/kernel/registry.py). The feed comes last: its observers follow
events that the modules before it apply."""

from __future__ import annotations

from typing import Any

from sandex.engine.domain import (
    balances,
    customers,
    feed,
    identity,
    quotes,
    sandbox_faults,
    sandbox_pacing,
    sandbox_snapshots,
    trading,
    webhook_faults,
    webhook_registrations,
)
from sandex.engine.domain.trading import price_history
from sandex.engine.domain.transfers import (
    deposit_addresses,
    fiat_accounts,
    fiat_withdrawals,
    funding,
    internal_transfers,
    pending,
    stablecoin_conversions,
    transfer_records,
    withdrawal_fees,
    withdrawals,
)
from sandex.engine.kernel.registry import Registration, Registry, build_registry


def _clock_advanced(state: Any, event: Any) -> None:
    state.ext["clock_to"] = event.data["to"]


# The runtime records a clock move (AdvanceClock); no domain module owns its event.
CLOCK = Registration(appliers={"ClockAdvanced": _clock_advanced})

_MODULES: tuple[Registration, ...] = (
    customers.REGISTRATION,
    balances.REGISTRATION,
    transfer_records.REGISTRATION,
    funding.REGISTRATION,
    withdrawal_fees.REGISTRATION,
    withdrawals.REGISTRATION,
    internal_transfers.REGISTRATION,
    stablecoin_conversions.REGISTRATION,
    deposit_addresses.REGISTRATION,
    fiat_accounts.REGISTRATION,
    fiat_withdrawals.REGISTRATION,
    sandbox_pacing.REGISTRATION,
    sandbox_faults.REGISTRATION,
    pending.REGISTRATION,
    trading.REGISTRATION,
    quotes.REGISTRATION,
    price_history.REGISTRATION,
    CLOCK,
    webhook_registrations.REGISTRATION,
    webhook_faults.REGISTRATION,
    *identity.REGISTRATIONS,
)
# Snapshots restore the read models of every module before them; the feed follows all.
REGISTRATIONS: tuple[Registration, ...] = (
    *_MODULES,
    sandbox_snapshots.registration(t for r in _MODULES for t in r.tables),
    feed.REGISTRATION,
)


def domain_registry() -> Registry:
    """A registry of the domain's registrations, fresh at each call: one per engine."""
    return build_registry(REGISTRATIONS)
