"""Read-model tables: the query side, written in the writer's transaction.

Each table row is a pure function of one entity of the in-memory state, so a live
table and one rebuilt from the log are equal row for row. `body` holds the public JSON
object; the other columns exist to filter and order on.

A spec's `fixed` lists indexed columns that never change once the row exists (the
owner, the seq): an update leaves them out, so it rewrites no entry of their indexes.
`sandex verify` compares every row with a rebuild, so a column wrongly listed shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from engine.domain.customers import profile_view
from engine.domain.ledger import available, trading
from engine.domain.transfers.funding import instructions_view
from engine.domain.transfers.transfer_records import transfer_view
from engine.kernel.money import format_normal
from engine.kernel.state import State

TABLES: dict[str, dict[str, Any]] = {
    "customers": {
        "columns": {"id": str, "created_at": str, "bootstrap": int},
        "pk": ["id"],
    },
    "clients": {
        "columns": {
            "client_id": str,
            "customer_id": str,
            "salt": str,
            "secret_hash": str,
            "scopes": str,
            "revoked": int,
            "created_at": str,
        },
        "pk": ["client_id"],
    },
    "profiles": {
        "columns": {
            "id": str,
            "customer_id": str,
            "nickname": str,
            "type": str,
            "created_at": str,
            "seq": int,
            "body": str,
        },
        "pk": ["id"],
        "indexes": [["customer_id", "seq"]],
        "fixed": ["customer_id", "seq"],
    },
    "balances": {
        "columns": {"profile_id": str, "asset": str, "available": str, "trading": str},
        "pk": ["profile_id", "asset"],
    },
    "transfers": {
        "columns": {
            "id": str,
            "customer_id": str,
            "profile_id": str,
            "ref_id": str,
            "type": str,
            "status": str,
            "group_id": str,
            "crypto_tx_hash": str,
            "created_at": str,
            "updated_at": str,
            "seq": int,
            "body": str,
        },
        "pk": ["id"],
        "indexes": [["customer_id", "seq"], ["profile_id", "ref_id"]],
        "fixed": ["customer_id", "profile_id", "ref_id", "seq"],
    },
    "fiat_instructions": {
        "columns": {
            "id": str,
            "customer_id": str,
            "profile_id": str,
            "ref_id": str,
            "memo_id": str,
            "created_at": str,
            "seq": int,
            "body": str,
        },
        "pk": ["id"],
        "indexes": [["customer_id", "seq"]],
        "fixed": ["customer_id", "seq"],
    },
}


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _customer(state: State, key: str) -> dict[str, Any] | None:
    c = state.customers.get(key)
    if c is None:
        return None
    return {"id": c["id"], "created_at": c["created_at"], "bootstrap": int(bool(c["bootstrap"]))}


def _client(state: State, key: str) -> dict[str, Any] | None:
    c = state.clients.get(key)
    if c is None:
        return None
    return {
        "client_id": c["client_id"],
        "customer_id": c["customer_id"],
        "salt": c["salt"],
        "secret_hash": c["secret_hash"],
        "scopes": " ".join(c["scopes"]),
        "revoked": int(c["revoked"]),
        "created_at": c["created_at"],
    }


def _profile(state: State, key: str) -> dict[str, Any] | None:
    p = state.profiles.get(key)
    if p is None:
        return None
    return {
        "id": p["id"],
        "customer_id": p["customer_id"],
        "nickname": p["nickname"],
        "type": p["type"],
        "created_at": p["created_at"],
        "seq": p["seq"],
        "body": _json(profile_view(p)),
    }


def _balance(state: State, key: tuple[str, str]) -> dict[str, Any] | None:
    profile_id, asset = key
    ledger = state.ledger
    return {
        "profile_id": profile_id,
        "asset": asset,
        "available": format_normal(ledger.balance(available(profile_id), asset)),
        "trading": format_normal(ledger.balance(trading(profile_id), asset)),
    }


def _transfer(state: State, key: str) -> dict[str, Any] | None:
    t = state.transfers.get(key)
    if t is None:
        return None
    return {
        "id": t["id"],
        "customer_id": t["customer_id"],
        "profile_id": t["profile_id"],
        "ref_id": t.get("ref_id"),
        "type": t["type"],
        "status": t["status"],
        "group_id": t.get("group_id"),
        "crypto_tx_hash": t.get("crypto_tx_hash"),
        "created_at": t["created_at"],
        "updated_at": t["updated_at"],
        "seq": t["seq"],
        "body": _json(transfer_view(t)),
    }


def _fiat_instructions(state: State, key: str) -> dict[str, Any] | None:
    r = state.fiat_instructions.get(key)
    if r is None:
        return None
    return {
        "id": r["id"],
        "customer_id": r["customer_id"],
        "profile_id": r["profile_id"],
        "ref_id": r.get("ref_id"),
        "memo_id": r["memo_id"],
        "created_at": r["created_at"],
        "seq": r["seq"],
        "body": _json(instructions_view(r)),
    }


Row = Callable[[State, Any], dict[str, Any] | None]

# kind of dirty mark -> (table, row function, key columns)
ROWS: dict[str, tuple[str, Row, tuple[str, ...]]] = {
    "customer": ("customers", _customer, ("id",)),
    "client": ("clients", _client, ("client_id",)),
    "profile": ("profiles", _profile, ("id",)),
    "balance": ("balances", _balance, ("profile_id", "asset")),
    "transfer": ("transfers", _transfer, ("id",)),
    "fiat_instructions": ("fiat_instructions", _fiat_instructions, ("id",)),
}

# kind -> function listing every key of that kind in a state (for a full rebuild).
KEYS: dict[str, Callable[[State], Any]] = {
    "customer": lambda s: s.customers.keys(),
    "client": lambda s: s.clients.keys(),
    "profile": lambda s: s.profiles.keys(),
    "balance": lambda s: {
        (acct.split(":", 1)[0], asset)
        for (acct, asset) in s.ledger.balances
        if acct.endswith((":available", ":trading"))
    },
    "transfer": lambda s: s.transfers.keys(),
    "fiat_instructions": lambda s: s.fiat_instructions.keys(),
}


def register(
    kind: str,
    table: str,
    spec: dict[str, Any],
    row: Row,
    key_columns: tuple[str, ...],
    keys: Callable[[State], Any],
) -> None:
    """Let a domain module (trading, withdrawals) add its own read model."""
    TABLES[table] = spec
    ROWS[kind] = (table, row, key_columns)
    KEYS[kind] = keys


# Append-only tables: rows that events produce once and nothing changes or deletes (the
# event feed). The writer's state does not keep them; appliers hand them over through
# `State.append`. table -> SQL expression of the log position that produced a row.
APPEND_ONLY: dict[str, str] = {}


def register_append(table: str, spec: dict[str, Any], position_sql: str) -> None:
    """Let a domain module add an append-only read model (see APPEND_ONLY)."""
    TABLES[table] = spec
    APPEND_ONLY[table] = position_sql


Writes = dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]


def rows_for(state: State, dirty: set[tuple[str, Any]]) -> Writes:
    """The upserts and deletes that bring the tables in line with `dirty` entities and
    the rows appended since the last commit."""
    writes: Writes = {}
    for table, appended in state.appended or ():
        writes.setdefault(table, ([], []))[0].append(appended)
    for kind, key in dirty:
        table, row_fn, key_columns = ROWS[kind]
        upserts, deletes = writes.setdefault(table, ([], []))
        row = row_fn(state, key)
        if row is None:
            values = key if isinstance(key, tuple) else (key,)
            deletes.append(dict(zip(key_columns, values, strict=True)))
        else:
            upserts.append(row)
    return writes


def all_rows(state: State) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every row of every table; append-only rows only if `state` collected them."""
    yield from state.appended or ()
    for kind, (table, row_fn, _) in ROWS.items():
        for key in KEYS[kind](state):
            row = row_fn(state, key)
            if row is not None:
                yield table, row
