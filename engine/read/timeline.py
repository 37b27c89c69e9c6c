"""The log newest first, one page at a time, for the console's timeline: keyset paging
by log position (the events table's primary key), so a page costs the same at the head
of a million events as of ten, and nothing counts the whole log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from sandex.engine.kernel.credentials import redact
from sandex.engine.read.connections import ReadConnections
from sandex.engine.read.queries import checked_limit

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@dataclass(frozen=True, slots=True)
class TimelineFilter:
    """What a page keeps: an event type, ids the event names, each of them (a customer,
    a profile, an order, a transfer: in its stream or its data), events at or before a
    time, and events at or before a log position (time travel)."""

    type: str | None = None
    mentions: tuple[str, ...] = ()
    until_time: str | None = None
    until_position: int | None = None


def newest(
    reads: ReadConnections,
    *,
    before: int | None = None,
    limit: int | None = None,
    keep: TimelineFilter = TimelineFilter(),
) -> tuple[list[dict[str, Any]], int | None]:
    """Events newest first below position `before` (the head when None), each with no
    credential, and the `before` of the next page (None at the log's start)."""
    limit = checked_limit(limit, DEFAULT_LIMIT, MAX_LIMIT)
    sql, params = page_query(before, keep)
    rows = reads.conn.execute(sql, [*params, limit + 1]).fetchall()
    events = [_shown(row) for row in rows[:limit]]
    after = int(rows[limit - 1][0]) if len(rows) > limit else None
    return events, after


def page_query(before: int | None, keep: TimelineFilter) -> tuple[str, list[Any]]:
    """The SELECT of a page below `before` kept by `keep`, and its parameters but the
    last, the page's size: newest first on the log's primary key, so an unfiltered page
    reads its own rows from the head down and no more (nothing sorts or counts the log)."""
    where: list[str] = []
    params: list[Any] = []
    bound = before
    if keep.until_position is not None:
        bound = keep.until_position + 1 if bound is None else min(bound, keep.until_position + 1)
    if bound is not None:
        where.append("position < ?")
        params.append(bound)
    if keep.type:
        where.append("type = ?")
        params.append(keep.type)
    for text in keep.mentions:
        where.append("(instr(stream, ?) > 0 OR instr(data, ?) > 0)")
        params += [text, text]
    if keep.until_time:
        where.append("occurred_at <= ?")
        params.append(keep.until_time)
    sql = "SELECT position, stream, version, type, data, meta, occurred_at FROM events"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + " ORDER BY position DESC LIMIT ?", params


def event_at(reads: ReadConnections, position: int) -> dict[str, Any] | None:
    """The event at `position`, with no credential, or None."""
    row = reads.conn.execute(
        "SELECT position, stream, version, type, data, meta, occurred_at FROM events"
        " WHERE position = ?",
        (position,),
    ).fetchone()
    return None if row is None else _shown(row)


def _shown(row: tuple[Any, ...]) -> dict[str, Any]:
    position, stream, version, typ, data, meta, at = row
    return {
        "position": int(position),
        "stream": stream,
        "version": int(version),
        "type": typ,
        "data": redact(typ, orjson.loads(data)),
        "meta": orjson.loads(meta) if meta else {},
        "occurred_at": at,
    }
