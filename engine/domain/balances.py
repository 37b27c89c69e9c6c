"""The balances read model: each profile's available and trading amount of each asset,
read from the ledger (engine/domain/ledger.py), whose postings mark them dirty."""

from __future__ import annotations

from typing import Any

from engine.domain.ledger import available, trading
from engine.kernel.money import format_normal
from engine.kernel.read_model_spec import ReadModelTable
from engine.kernel.registry import Registration
from engine.kernel.state import State


def _row(state: State, key: tuple[str, str]) -> dict[str, Any] | None:
    profile_id, asset = key
    ledger = state.ledger
    return {
        "profile_id": profile_id,
        "asset": asset,
        "available": format_normal(ledger.balance(available(profile_id), asset)),
        "trading": format_normal(ledger.balance(trading(profile_id), asset)),
    }


def _keys(state: State) -> set[tuple[str, str]]:
    return {
        (acct.split(":", 1)[0], asset)
        for (acct, asset) in state.ledger.balances
        if acct.endswith((":available", ":trading"))
    }


TABLE = ReadModelTable(
    "balances",
    {"profile_id": str, "asset": str, "available": str, "trading": str},
    pk=("profile_id", "asset"),
    kind="balance",
    row=_row,
    key_columns=("profile_id", "asset"),
    keys=_keys,
)
REGISTRATION = Registration(tables=(TABLE,))
