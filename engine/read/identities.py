"""Identities, their documents and accounts as their customer reads them (rows of
engine/domain/identity/): another customer's id is absent."""

from __future__ import annotations

from typing import Any

import orjson

from sandex.engine.kernel.errors import NotFound
from sandex.engine.read.queries import Page, Queries

_DETAILS = ("person_details", "institution_details")


def _shown(body: dict[str, Any], details: bool, members: bool) -> dict[str, Any]:
    if not details:
        for name in _DETAILS:
            body.pop(name, None)
    if not members:
        body.pop("institution_members", None)
    return body


def identity(
    queries: Queries,
    customer_id: str,
    identity_id: str,
    *,
    details: bool = False,
    members: bool = False,
) -> dict[str, Any]:
    """GetIdentity: details and institution members only when asked for."""
    row = queries.conn.execute(
        "SELECT body FROM identities WHERE id = ? AND customer_id = ?", (identity_id, customer_id)
    ).fetchone()
    if row is None:
        raise NotFound(f"identity not found with id {identity_id}")
    return _shown(orjson.loads(row[0]), details, members)


def list_identities(
    queries: Queries,
    customer_id: str,
    page: Page,
    summary_status: str | None = None,
    identity_type: str | None = None,
) -> dict[str, Any]:
    """Newest first unless `order` says otherwise; details are left out, as by GetIdentity."""
    where = ["customer_id = ?"]
    params: list[Any] = [customer_id]
    for column, value in (("summary_status", summary_status), ("type", identity_type)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    result = queries.page("identities", where, params, page, owner=customer_id)
    result["items"] = [_shown(item, False, False) for item in result["items"]]
    return result


def documents(
    queries: Queries, customer_id: str, identity_id: str, include_pending: bool = False
) -> dict[str, Any]:
    """An identity's documents, oldest first; sandex asks for none, so none is pending."""
    identity(queries, customer_id, identity_id)
    rows = queries.conn.execute(
        "SELECT body FROM identity_documents WHERE identity_id = ? AND customer_id = ?"
        " ORDER BY seq",
        (identity_id, customer_id),
    ).fetchall()
    answer: dict[str, Any] = {"documents": [orjson.loads(r[0]) for r in rows]}
    if include_pending:
        answer["pending_documents"] = []
    return answer


def account(queries: Queries, customer_id: str, account_id: str) -> dict[str, Any]:
    row = queries.conn.execute(
        "SELECT body FROM identity_accounts WHERE id = ? AND customer_id = ?",
        (account_id, customer_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"account not found with id {account_id}")
    return orjson.loads(row[0])  # type: ignore[no-any-return]


def list_accounts(
    queries: Queries, customer_id: str, page: Page, identity_id: str | None = None
) -> dict[str, Any]:
    """Newest first unless `order` says otherwise; `identity_id` names the primary one."""
    where = ["customer_id = ?"]
    params: list[Any] = [customer_id]
    if identity_id is not None:
        where.append("identity_id = ?")
        params.append(identity_id)
    return queries.page("identity_accounts", where, params, page, owner=customer_id)
