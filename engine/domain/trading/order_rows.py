"""The orders and executions read models: one row per order and per execution, a pure
function of the trading state. Their indexes are the store's tuning
(sandex.engine.store.read_model_indexes), not part of the rows."""

from __future__ import annotations

from typing import Any

import orjson

from sandex.engine.domain.trading.order_views import execution_view, shown_view
from sandex.engine.domain.trading.trading_state import trading_state
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.state import State


def _order_row(state: State, key: str) -> dict[str, Any] | None:
    tr = state.ext.get("trading")  # `trading_state`, which would make one for nothing
    o = tr.orders.get(key) if tr is not None else None
    if o is None:
        return None
    return {
        "id": o.id,
        "customer_id": o.customer_id,
        "profile_id": o.profile_id,
        "market": o.market,
        "status": o.status,
        "ref_id": o.ref_id,
        "account_id": o.identity_account_id,
        "created_at": o.created_at,
        "seq": o.seq,
        "body": orjson.dumps(shown_view(state, o)).decode(),
    }


def _execution_row(state: State, key: int) -> dict[str, Any] | None:
    tr = state.ext.get("trading")  # as in `_order_row`
    record = tr.executions.get(key) if tr is not None else None
    if record is None:
        return None
    o = record[0]
    return {
        "execution_id": key,
        "customer_id": o.customer_id,
        "profile_id": o.profile_id,
        "order_id": o.id,
        "account_id": o.identity_account_id,
        "executed_at": record[1],
        "seq": key,
        "body": orjson.dumps(execution_view(key, record)).decode(),
    }


TABLES = (
    ReadModelTable(
        "orders",
        {
            "id": str,
            "customer_id": str,
            "profile_id": str,
            "market": str,
            "status": str,
            "ref_id": str,
            "account_id": str,
            "created_at": str,
            "seq": int,
            "body": str,
        },
        pk=("id",),
        kind="order",
        row=_order_row,
        key_columns=("id",),
        keys=lambda s: trading_state(s).orders.keys(),
    ),
    ReadModelTable(
        "executions",
        {
            "execution_id": int,
            "customer_id": str,
            "profile_id": str,
            "order_id": str,
            "account_id": str,
            "executed_at": str,
            "seq": int,
            "body": str,
        },
        pk=("execution_id",),
        kind="execution",
        row=_execution_row,
        key_columns=("execution_id",),
        keys=lambda s: trading_state(s).executions.keys(),
    ),
)
