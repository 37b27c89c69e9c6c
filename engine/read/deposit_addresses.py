"""Deposit addresses as their customer lists them (rows of
engine/domain/transfers/deposit_addresses.py)."""

from __future__ import annotations

from typing import Any

from sandex.engine.read.queries import Page, Queries

# A filter of the list -> the column it matches.
FILTERS = {
    "profile_ids": "profile_id",
    "identity_ids": "identity_id",
    "account_ids": "account_id",
    "ids": "id",
    "ref_ids": "ref_id",
}


def list_deposit_addresses(
    queries: Queries, customer_id: str, page: Page, filters: dict[str, list[str]]
) -> dict[str, Any]:
    """The customer's addresses, newest first unless `order` says otherwise."""
    where = ["customer_id = ?"]
    params: list[Any] = [customer_id]
    for name, values in filters.items():
        if values:
            where.append(f"{FILTERS[name]} IN ({', '.join('?' for _ in values)})")
            params.extend(values)
    return queries.page("deposit_addresses", where, params, page, owner=customer_id)
