"""The balances read model: each profile's available and trading amount of each asset,
read from the ledger (engine/domain/ledger.py), whose postings mark them dirty."""

from __future__ import annotations

from typing import Any

from sandex.engine.domain.ledger import available, trading
from sandex.engine.kernel.errors import NotFound
from sandex.engine.kernel.money import ASSETS, ZERO, format_normal
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import State

# The accounts a profile's balance row shows (its `available` and `trading`): a posting
# on another of its accounts (a withdrawal's hold, a conversion's debit) leaves the row
# as it was.
SHOWN = (":available", ":trading")


def _row(state: State, key: tuple[str, str]) -> dict[str, Any] | None:
    profile_id, asset = key
    # `Ledger.balance` of `available` and `trading`, written out: every order and trade
    # rewrites two rows or more of this table.
    get = state.ledger.balances.get
    return {
        "profile_id": profile_id,
        "asset": asset,
        "available": format_normal(get((f"{profile_id}:available", asset), ZERO)),
        "trading": format_normal(get((f"{profile_id}:trading", asset), ZERO)),
    }


def balance_view(state: State, pid: str, asset: str) -> dict[str, Any]:
    """GET /v2/profiles/{profile_id}/balances/{asset} of profile `pid` (resolved and
    owned) from the state itself: what the read model's row says once written. A
    backtest's strategy reads its balance between two commands, and writing the rows
    held back only to read them cost more than the orders."""
    if asset not in ASSETS:
        raise NotFound(f"asset not found: {asset}")
    return _view(state, pid, asset)


def balances_view(state: State, pid: str) -> dict[str, Any]:
    """GET /v2/profiles/{profile_id}/balances from the state (see `balance_view`)."""
    return {"items": [_view(state, pid, asset) for asset in ASSETS]}


def _view(state: State, pid: str, asset: str) -> dict[str, Any]:
    ledger = state.ledger
    return {
        "asset": asset,
        "available": format_normal(ledger.balance(available(pid), asset)),
        "trading": format_normal(ledger.balance(trading(pid), asset)),
    }


def _keys(state: State) -> set[tuple[str, str]]:
    return {
        (acct.split(":", 1)[0], asset)
        for (acct, asset) in state.ledger.balances
        if acct.endswith(SHOWN)
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
