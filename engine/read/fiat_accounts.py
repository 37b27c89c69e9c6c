"""Fiat accounts as their customer reads them (rows of
engine/domain/transfers/fiat_accounts.py): one in full, the list abbreviated."""

from __future__ import annotations

from typing import Any

import orjson

from sandex.engine.domain.transfers.fiat_accounts import summary_view
from sandex.engine.kernel.errors import NotFound
from sandex.engine.read.queries import Page, Queries


def fiat_account(
    queries: Queries, customer_id: str, account_id: str, include_deleted: bool = False
) -> dict[str, Any]:
    """Another customer's account, or a deleted one unless asked for, is not found."""
    row = queries.conn.execute(
        "SELECT body, deleted FROM fiat_accounts WHERE id = ? AND customer_id = ?",
        (account_id, customer_id),
    ).fetchone()
    if row is None or (row[1] and not include_deleted):
        raise NotFound(f"no fiat account found for id: '{account_id[:64]}'")
    return orjson.loads(row[0])  # type: ignore[no-any-return]


def list_fiat_accounts(
    queries: Queries,
    customer_id: str,
    page: Page,
    filters: dict[str, list[str]],
    include_deleted: bool = False,
) -> dict[str, Any]:
    """The customer's accounts, newest first unless `order` says otherwise."""
    where = ["customer_id = ?"]
    params: list[Any] = [customer_id]
    if not include_deleted:
        where.append("deleted = 0")
    for column, values in (("id", filters.get("ids")), ("ref_id", filters.get("ref_ids"))):
        if values:
            where.append(f"{column} IN ({', '.join('?' for _ in values)})")
            params.extend(values)
    result = queries.page("fiat_accounts", where, params, page, owner=customer_id)
    result["items"] = [summary_view(item) for item in result["items"]]
    return result
