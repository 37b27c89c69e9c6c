"""API clients as the token endpoint and the bearer check look them up."""

from __future__ import annotations

from typing import Any

from sandex.engine.config.settings import granted_scopes
from sandex.engine.read.connections import ReadConnections


def client(reads: ReadConnections, client_id: str) -> dict[str, Any] | None:
    """The client's row (scopes as a tuple, with those they imply; `revoked` as a bool),
    or None when unknown."""
    stored = record(reads, client_id)
    return None if stored is None else row_of(stored)


def record(reads: ReadConnections, client_id: str) -> tuple[Any, ...] | None:
    """The client's columns as stored, or None when unknown: equal records make equal
    rows (`row_of`), so a reader holding a row can tell that it still holds."""
    found: tuple[Any, ...] | None = reads.conn.execute(
        "SELECT client_id, customer_id, salt, secret_hash, scopes, revoked FROM clients"
        " WHERE client_id = ?",
        (client_id,),
    ).fetchone()
    return found


def row_of(stored: tuple[Any, ...]) -> dict[str, Any]:
    """The row (`client`) of a stored record (`record`)."""
    return {
        "client_id": stored[0],
        "customer_id": stored[1],
        "salt": stored[2],
        "secret_hash": stored[3],
        "scopes": granted_scopes(stored[4].split()),
        "revoked": bool(stored[5]),
    }


def is_bootstrap(reads: ReadConnections, customer_id: str) -> bool:
    """Whether `customer_id` is its database's bootstrap customer (the operator's)."""
    found = reads.conn.execute(
        "SELECT bootstrap FROM customers WHERE id = ?", (customer_id,)
    ).fetchone()
    return bool(found and found[0])


def customer_ids(reads: ReadConnections) -> list[str]:
    """Every customer of the database, oldest first (the console's operator view)."""
    rows = reads.conn.execute("SELECT id FROM customers ORDER BY created_at, id").fetchall()
    return [str(row[0]) for row in rows]
