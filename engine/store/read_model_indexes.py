"""The read-model tables' indexes: tuning of this store, not part of a read model.

A read model (sandex.engine.runtime.projection, the domain's row functions) says what a table
holds: its columns and key. How SQLite finds rows fast is the store's business:
`indexes` are the indexes a table gets (the read side's queries filter and order on
them); `fixed` lists indexed columns that never change once a row exists (the owner,
the seq), which an update leaves out so that it rewrites no entry of their indexes
(`sandex verify` compares every row with a rebuild, so a column wrongly listed shows).
"""

from __future__ import annotations

from typing import Any

INDEXES: dict[str, dict[str, Any]] = {
    "event_feed": {
        "indexes": [["customer_id", "seq", "type"]],
    },
    "profiles": {
        "indexes": [["customer_id", "seq"]],
        "fixed": ["customer_id", "seq"],
    },
    "fiat_instructions": {
        "indexes": [["customer_id", "seq"]],
        "fixed": ["customer_id", "seq"],
    },
    "deposit_addresses": {
        "indexes": [["customer_id", "seq"]],
        "fixed": ["customer_id", "seq"],
    },
    "fiat_accounts": {
        "indexes": [["customer_id", "seq"]],
        "fixed": ["customer_id", "seq"],
    },
    "withdrawal_fees": {
        "indexes": [["customer_id", "seq"]],
        "fixed": ["customer_id", "seq"],
    },
    "quote_executions": {
        "indexes": [["profile_id", "seq"]],
        "fixed": ["customer_id", "profile_id", "ref_id", "seq"],
    },
    "transfers": {
        "indexes": [["customer_id", "seq"], ["profile_id", "ref_id"]],
        "fixed": ["customer_id", "profile_id", "ref_id", "seq"],
    },
    "stablecoin_conversions": {
        "indexes": [["customer_id", "seq"]],
        "fixed": ["customer_id", "profile_id", "ref_id", "seq"],
    },
    "identities": {
        "indexes": [["customer_id", "seq"]],
        "fixed": ["customer_id", "type", "seq"],
    },
    "identity_documents": {
        "indexes": [["identity_id", "seq"]],
        "fixed": ["identity_id", "customer_id", "seq"],
    },
    "identity_accounts": {
        "indexes": [["customer_id", "seq"]],
        "fixed": ["customer_id", "identity_id", "seq"],
    },
    "orders": {
        "indexes": [["customer_id", "seq"], ["profile_id", "seq"]],
        "fixed": ["customer_id", "profile_id", "seq"],
    },
    "executions": {
        "indexes": [["customer_id", "seq"], ["profile_id", "seq"], ["order_id"]],
        "fixed": ["customer_id", "profile_id", "order_id", "seq"],
    },
}


def with_indexes(tables: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """`tables` with this store's indexes added to the spec of each table it tunes (a
    spec that names its own indexes keeps them)."""
    return {name: {**INDEXES.get(name, {}), **spec} for name, spec in tables.items()}
