"""The event feed as its customer lists it: oldest first, a page at a time.

The rows are the projection of engine/domain/feed.py (the `event_feed` table); this is
their listing: filters, the sealed page cursor and the count of undelivered webhooks
that each event carries."""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Sequence
from typing import Any

import orjson

from sandex.engine.kernel.errors import Invalid, NotFound
from sandex.engine.read.connections import ReadConnections
from sandex.engine.read.queries import Queries, checked_limit, time_conditions

MAX_LIMIT = 100
DEFAULT_LIMIT = 100
# what a feed cursor is bound to, beside its customer
_CURSOR_TABLE = "event_feed"


def _public(body: str, undelivered: int) -> dict[str, Any]:
    event: dict[str, Any] = orjson.loads(body)
    event["undelivered_webhooks"] = undelivered
    return event


def _undelivered(seq: int, delivered_through: int | None) -> int:
    return 0 if delivered_through is None or seq <= delivered_through else 1


def list_events(
    queries: Queries,
    customer_id: str,
    *,
    limit: int | None = None,
    page_cursor: str | None = None,
    type: str | None = None,
    times: dict[str, str] | None = None,
    delivered_through: int | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """A customer's events in ascending order, and the cursor of the next page (or None).

    `times`: created_at filters by operator (`gte` -> RFC 3339 text). `delivered_through`:
    with a webhook registered, the seq up to which its events were delivered; each later
    event counts one undelivered webhook."""
    cursors = queries.cursors
    # the cursor is checked before the other parameters: its fault is the one reported
    after_seq = cursors.decode(page_cursor, _CURSOR_TABLE, customer_id) if page_cursor else None
    limit = checked_limit(limit, DEFAULT_LIMIT, MAX_LIMIT)
    where = ["f.customer_id = ?"]
    params: list[Any] = [customer_id]
    if type is not None:
        where.append("f.type = ?")
        params.append(type)
    time_where, time_params = time_conditions(
        {("created_at", op): text for op, text in (times or {}).items()}, table="f."
    )
    where += time_where
    params += time_params
    if after_seq is not None:
        where.append("f.seq > ?")
        params.append(after_seq)
    sql = (
        f"SELECT f.seq, f.body FROM event_feed f WHERE {' AND '.join(where)} ORDER BY f.seq LIMIT ?"
    )
    rows = queries.conn.execute(sql, [*params, limit + 1]).fetchall()
    events = [_public(body, _undelivered(seq, delivered_through)) for seq, body in rows[:limit]]
    if len(rows) <= limit:
        return events, None
    return events, cursors.encode(rows[limit - 1][0], _CURSOR_TABLE, customer_id)


def get_event(
    reads: ReadConnections, customer_id: str, event_id: str, delivered_through: int | None = None
) -> dict[str, Any]:
    """One of the customer's events; NotFound for another customer's or an unknown id."""
    try:
        uuid.UUID(event_id)
    except ValueError as exc:
        raise Invalid("id invalid: an event id is a UUID", field="id") from exc
    row = reads.conn.execute(
        "SELECT seq, body FROM event_feed WHERE id = ? AND customer_id = ?",
        (event_id, customer_id),
    ).fetchone()
    if row is None:
        raise NotFound(f"event not found with id {event_id}")
    return _public(row[1], _undelivered(row[0], delivered_through))


def ids_caused(
    reads: ReadConnections, asked: Sequence[tuple[str, Sequence[tuple[int, int]]]]
) -> list[list[str]]:
    """The ids of the events in each customer's feed that the log positions of each
    (customer id, [(first, last), ...]) of `asked` produced, in feed order: what a
    request caused, as `GET /v2/events/{id}` names it. One query per customer, over the
    span of all that customer's positions."""
    spans: dict[str, tuple[int, int]] = {}
    for customer_id, positions in asked:
        for first, last in positions:
            low, high = spans.get(customer_id, (first, last))
            spans[customer_id] = min(low, first), max(high, last)
    rows: dict[str, tuple[list[int], list[str]]] = {}
    for customer_id, (low, high) in spans.items():
        found = reads.conn.execute(
            "SELECT seq, id FROM event_feed WHERE customer_id = ? AND seq BETWEEN ? AND ?"
            " ORDER BY seq",
            (customer_id, low * 2, high * 2 + 1),  # `seq` is twice the log position, + rank
        ).fetchall()
        rows[customer_id] = [int(r[0]) for r in found], [str(r[1]) for r in found]
    answers: list[list[str]] = []
    for customer_id, positions in asked:
        seqs, ids = rows.get(customer_id, ([], []))
        caused: list[str] = []
        for first, last in positions:
            start = bisect.bisect_left(seqs, first * 2)
            end = bisect.bisect_right(seqs, last * 2 + 1)
            caused += ids[start:end]
        answers.append(caused)
    return answers


def newest_events(
    reads: ReadConnections,
    customer_id: str,
    *,
    before: int | None = None,
    limit: int = DEFAULT_LIMIT,
    until_position: int | None = None,
    type: str | None = None,
    mentions: Sequence[str] = (),
    until_time: str | None = None,
) -> tuple[list[dict[str, Any]], int | None]:
    """A customer's events newest first below feed seq `before`, the ones produced at or
    before log position `until_position`, and the `before` of the next page: the same
    rows and the same owner rule as `list_events`, read the other way (the console).
    `type`, `mentions` (texts each item must contain: an id of a profile, an order, a
    transfer) and `until_time` (created at or before) are conditions of the query, so a
    page holds `limit` kept items whenever that many exist below `before`."""
    where = ["customer_id = ?"]
    params: list[Any] = [customer_id]
    if before is not None:
        where.append("seq < ?")
        params.append(before)
    if until_position is not None:
        where.append("seq < ?")
        params.append((until_position + 1) * 2)  # `seq` is twice the log position, + rank
    if type is not None:
        where.append("type = ?")
        params.append(type)
    for text in mentions:
        where.append("instr(body, ?) > 0")
        params.append(text)
    if until_time is not None:
        where.append("created_at <= ?")
        params.append(until_time)
    rows = reads.conn.execute(
        f"SELECT seq, body FROM event_feed WHERE {' AND '.join(where)} ORDER BY seq DESC LIMIT ?",
        [*params, limit + 1],
    ).fetchall()
    events = [{**_public(body, 0), "position": int(seq) // 2} for seq, body in rows[:limit]]
    return events, (int(rows[limit - 1][0]) if len(rows) > limit else None)
