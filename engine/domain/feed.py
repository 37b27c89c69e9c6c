"""The public event feed: every change of an order or a transfer, as its customer sees it.

The feed is a projection of the log like any read model. It follows the events of other
modules (`TransferCreated`, `OrderFilled`, ...) through its registration's observers, and turns each
into the service's Event shape: `type` (`transfer.crypto_withdrawal.completed`,
`order.filled`), `object_type`, the object as it stood right after the change, and
`created_at`, the time of the log event. Feed ids are derived from the log event's
time, stream and version, so a replay gives the same ids and nothing needs drawing.

`seq` orders the feed: twice the log position, plus one for the second side of a trade.
The feed is append-only: an item, once written, never changes, and a restore of a
snapshot leaves it (what was announced stays announced). So the writer's state does
not keep the items: each goes to the `event_feed` table in the commit of the event that
produced it (`State.append`), a start-up replay skips them, and a rebuild collects them
from the whole log. Their listing is the read side's (engine/read/feed.py).
"""

from __future__ import annotations

import functools
from hashlib import blake2b as _blake2b
from typing import Any

from orjson import dumps as _dumps

from sandex.engine.domain.identity.identities import ANNOUNCED_STATUSES, identities
from sandex.engine.domain.trading import shown_view, trading_state
from sandex.engine.domain.transfers.transfer_records import transfer_view
from sandex.engine.kernel.clock import parse_time, to_millis
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.ids import time_ordered_uuid, time_prefix
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import State

TRANSFER_EVENTS = ("TransferCreated", "TransferCompleted", "TransferFailed")
ORDER_EVENTS = (
    "OrderPlaced",
    "OrderSubmitted",
    "OrderOpened",
    "OrderTriggered",
    "TradeExecuted",
    "OrderFilled",
    "OrderCancelled",
    "OrderRejected",
)
IDENTITY_EVENTS = ("IdentitySummaryStatusChanged",)
WATCHED = TRANSFER_EVENTS + ORDER_EVENTS + IDENTITY_EVENTS

TRANSFER_OBJECT = "transfer_status_change"
ORDER_OBJECT = "order"
IDENTITY_OBJECT = "identity_summary_status_change"


def event_id(e: Event, rank: int) -> str:
    """A version-7 UUID (engine/kernel/ids.py): the event's time, then bits drawn from
    its stream, version and the item's rank, so that a feed's new items sort last in
    its index; built as text, without a UUID object (it runs for every feed item of a
    replay)."""
    h = _blake2b(f"{e.stream}:{e.version}:{rank}".encode(), digest_size=16).hexdigest()
    return time_ordered_uuid(_prefix(e.occurred_at), h)


def _prefix(occurred_at: str) -> str:
    """The time prefix of an event's time. The prefix holds milliseconds: an engine time
    (`format_time`, 27 characters) is looked up by its text cut there, which on a wall
    clock the commands of one millisecond share (each has a time of its own)."""
    if len(occurred_at) == 27:
        return _millisecond_prefix(occurred_at[:23])
    return time_prefix(to_millis(parse_time(occurred_at)))


@functools.lru_cache(maxsize=64)
def _millisecond_prefix(text: str) -> str:
    """The prefix of `YYYY-MM-DDTHH:MM:SS.mmm` in UTC: the time cut to the millisecond
    in the calendar is cut to it since the epoch (which falls on one), before it too."""
    return time_prefix(to_millis(parse_time(text + "Z")))


def _add(
    state: State,
    e: Event,
    rank: int,
    customer_id: str,
    kind: str,
    object_type: str,
    obj: dict[str, Any],
) -> None:
    appended = state.appended
    assert appended is not None  # each observer returns first when no rows are collected
    at = e.occurred_at
    item_id = event_id(e, rank)
    body = {
        "id": item_id,
        "type": kind,
        "object_type": object_type,
        "object": obj,
        "created_at": at,
    }
    row = {
        "id": item_id,
        "customer_id": customer_id,
        "type": kind,
        "created_at": at,
        "seq": e.position * 2 + rank,
        "body": _dumps(body).decode(),
    }
    appended.append(("event_feed", row))


def _transfer(state: State, e: Event) -> None:
    if state.appended is None:
        return
    tid = e.data["transfer"]["id"] if e.type == "TransferCreated" else e.data["transfer_id"]
    t = state.transfers[tid]
    kind = f"transfer.{t['type'].lower()}.{t['status'].lower()}"
    _add(state, e, 0, t["customer_id"], kind, TRANSFER_OBJECT, transfer_view(t))


_ORDER_TYPES = {
    "OrderSubmitted": "order.submitted",
    "OrderOpened": "order.open",
    "OrderTriggered": "order.triggered",
    "OrderFilled": "order.filled",
    "OrderCancelled": "order.cancelled",
    "OrderRejected": "order.rejected",
}


def _order_placed(state: State, e: Event) -> None:
    if state.appended is None:
        return
    o = trading_state(state).orders[e.data["order"]["id"]]
    kind = f"order.{o.status.lower()}"
    _add(state, e, 0, o.customer_id, kind, ORDER_OBJECT, shown_view(state, o))


def _order_changed(state: State, e: Event) -> None:
    if state.appended is None:
        return
    o = trading_state(state).orders[e.data["order_id"]]
    _add(state, e, 0, o.customer_id, _ORDER_TYPES[e.type], ORDER_OBJECT, shown_view(state, o))


def _trade(state: State, e: Event) -> None:
    """A trade that leaves an order open is news; one that completes it is announced by
    the `order.filled` that follows in the same decision."""
    if state.appended is None:
        return
    orders = trading_state(state).orders
    for rank, side in enumerate(("buy", "sell")):
        part = e.data.get(side)
        if part is None:
            continue
        o = orders[part["order_id"]]
        if o.qty and o.filled < o.qty:
            view = shown_view(state, o)
            _add(state, e, rank, o.customer_id, "order.partially_filled", ORDER_OBJECT, view)


def _identity(state: State, e: Event) -> None:
    if state.appended is None:
        return
    new = e.data["new_summary_status"]
    if new not in ANNOUNCED_STATUSES:
        return
    identity_id = e.data["identity_id"]
    obj = {
        "id": event_id(e, 1),
        "identity_id": identity_id,
        "old_summary_status": e.data["old_summary_status"],
        "new_summary_status": new,
    }
    customer_id = identities(state)[identity_id]["customer_id"]
    _add(state, e, 0, customer_id, f"identity.{new.lower()}", IDENTITY_OBJECT, obj)


# Each watched event type's observer, run after its applier while rows are collected
# (`State.appended`); a start-up replay collects none.
OBSERVERS = {
    **dict.fromkeys(TRANSFER_EVENTS, _transfer),
    **dict.fromkeys(IDENTITY_EVENTS, _identity),
    "OrderPlaced": _order_placed,
    "TradeExecuted": _trade,
    **dict.fromkeys(_ORDER_TYPES, _order_changed),
}


# -- read model -----------------------------------------------------------------------


TABLE = ReadModelTable(
    "event_feed",
    {
        "id": str,
        "customer_id": str,
        "type": str,
        "created_at": str,
        "seq": int,
        "body": str,
    },
    pk=("id",),
    # One index serves both listings: with a type asked, the type is read from the
    # index entry and only matching rows are fetched. A (customer, type, seq) index
    # beside it cost a page write per customer and type at every commit.
    append_position="seq / 2",
)
REGISTRATION = Registration(observers=OBSERVERS, tables=(TABLE,))
