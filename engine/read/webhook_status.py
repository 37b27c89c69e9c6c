"""Webhook registrations and the feed events still to deliver to them.

What the deliverer reads to know where to send what (api_adapter/webhook_delivery.py),
and what the status of a registration shows. The deliverer's progress (the last
delivered seq per customer) is not here: it is kept outside the database, in a file
beside it, which the deliverer writes itself (a commit by another connection would
make the writer reload its state from the log)."""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

from sandex.engine.read.connections import ReadConnections

# how many events a delivery reads ahead
PENDING_BATCH = 100


class Registration(NamedTuple):
    """A customer's webhook: `since` is the feed seq from which its events are sent."""

    id: str
    url: str
    since: int
    created_at: str


def registration(reads: ReadConnections, customer_id: str) -> Registration | None:
    """The customer's webhook, or None when none is registered."""
    row = reads.conn.execute(
        "SELECT id, url, since, created_at FROM webhooks WHERE customer_id = ?", (customer_id,)
    ).fetchone()
    return None if row is None else Registration(*row)


def deliveries(reads: ReadConnections) -> dict[str, tuple[str, str, str, str, int]]:
    """Every registration by customer: (customer id, webhook id, url, sealed secret,
    since), what a delivery worker is started with."""
    return {
        row[0]: row
        for row in reads.conn.execute("SELECT customer_id, id, url, secret, since FROM webhooks")
    }


def pending(
    reads: ReadConnections, customer_id: str, delivered_seq: int
) -> list[tuple[int, str, str, str]]:
    """The customer's next feed events after `delivered_seq`, oldest first, at most
    `PENDING_BATCH`: (seq, event id, type, body)."""
    return reads.conn.execute(
        "SELECT seq, id, type, body FROM event_feed WHERE customer_id = ? AND seq > ?"
        " ORDER BY seq LIMIT ?",
        (customer_id, delivered_seq, PENDING_BATCH),
    ).fetchall()


def backlog(reads: ReadConnections, customer_id: str, delivered_seq: int) -> int:
    """How many of the customer's feed events come after `delivered_seq`."""
    row = reads.conn.execute(
        "SELECT count(*) FROM event_feed WHERE customer_id = ? AND seq > ?",
        (customer_id, delivered_seq),
    ).fetchone()
    return int(row[0]) if row else 0


def faults_armed(reads: ReadConnections, customer_id: str) -> bool:
    """Whether the customer holds a webhook fault rule not yet spent: only then does
    the deliverer ask the writer about a delivery (sandex.engine.domain.webhook_faults)."""
    row = reads.conn.execute(
        "SELECT 1 FROM webhook_faults WHERE customer_id = ? AND remaining > 0 LIMIT 1",
        (customer_id,),
    ).fetchone()
    return row is not None


def fault_rules(
    reads: ReadConnections, customer_id: str, rule_id: str | None = None
) -> list[dict[str, Any]]:
    """The customer's webhook fault rules in the order armed (or the one `rule_id`),
    as `GET /v2/sandbox/webhook-faults` shows them."""
    sql = (
        "SELECT id, match, action, times, remaining, created_at FROM webhook_faults"
        " WHERE customer_id = ?"
    )
    args: tuple[str, ...] = (customer_id,)
    if rule_id is not None:
        sql, args = sql + " AND id = ?", (customer_id, rule_id)
    rows = reads.conn.execute(sql + " ORDER BY position", args).fetchall()
    return [
        {
            "id": id_,
            "match": orjson.loads(match),
            "action": orjson.loads(action),
            "times": times,
            "remaining": remaining,
            "created_at": created_at,
        }
        for id_, match, action, times, remaining, created_at in rows
    ]
