"""API clients as the token endpoint and the bearer check look them up."""

from __future__ import annotations

from typing import Any

from engine.config.settings import held_scopes
from engine.read.connections import ReadConnections


def client(reads: ReadConnections, client_id: str) -> dict[str, Any] | None:
    """The client's row (the scopes it holds as a tuple, `revoked` as a bool), or None when unknown."""
    row = reads.conn.execute(
        "SELECT client_id, customer_id, salt, secret_hash, scopes, revoked FROM clients"
        " WHERE client_id = ?",
        (client_id,),
    ).fetchone()
    if row is None:
        return None
    return {
        "client_id": row[0],
        "customer_id": row[1],
        "salt": row[2],
        "secret_hash": row[3],
        "scopes": held_scopes(row[4].split()),
        "revoked": bool(row[5]),
    }
