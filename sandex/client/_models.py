"""What the client answers: typed models of sandex's answers (pydantic v2). Amounts and
prices are Decimal, never float. Unknown fields are kept (`extra="allow"`), so an answer
that grows a field still parses."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class WorldClock(Model):
    mode: Literal["wall", "manual"]
    now: datetime | None = None  # None while the world is not loaded


class WorldCreated(Model):
    """`POST /v2/sandbox/worlds`'s answer; `client_secret` is absent for a fork (its
    clients are its template's)."""

    id: str
    name: str
    base_url: str
    token_url: str
    client_id: str
    client_secret: str | None = None
    profile_id: str
    clock: WorldClock
    created_at: datetime


class World(Model):
    id: str
    name: str
    base_url: str
    token_url: str
    status: str
    clock: WorldClock
    events: int
    size_bytes: int
    loaded: bool
    last_used_at: datetime | None = None
    expires_after_idle_seconds: int | None = None
    expires_at: datetime | None = None
    from_world: str | None = None
    from_snapshot: str | None = None
    created_at: datetime


class WorldDeleted(Model):
    id: str
    deleted: bool


class Page(Model):
    next_page_cursor: str | None = None


class WorldPage(Page):
    items: list[World]


class Customer(Model):
    customer_id: str
    client_id: str
    client_secret: str
    profile_id: str


class Clock(Model):
    now: datetime
    mode: Literal["wall", "manual"]


class Snapshot(Model):
    name: str
    position: int
    taken_at: datetime


class RestoredSnapshot(Snapshot):
    restored_at: datetime


class Reset(Model):
    position: int
    reset_at: datetime


class FaultRule(Model):
    """An HTTP fault rule as armed, with its counts (docs/faults.md)."""

    id: str
    match: dict[str, Any]
    when: str
    action: dict[str, Any]
    times: int | None = None
    skip: int
    probability: Decimal
    until: datetime | None = None
    ttl_seconds: int | None = None
    expires_at: datetime | None = None
    armed_at: datetime
    matched: int
    fired: int
    spent: bool
    status: str


class WebhookFault(Model):
    id: str
    match: dict[str, Any]
    action: dict[str, Any]
    times: int
    remaining: int
    created_at: datetime


class PacingEntry(Model):
    mode: str
    value: str | None = None


class Pacing(Model):
    withdrawal: PacingEntry
    deposit: PacingEntry
    fiat_deposit: PacingEntry
    conversion: PacingEntry
    fiat_account_review: PacingEntry


class Transfer(Model):
    """A transfer as settled by hand; the service's other fields are kept as extras."""

    id: str
    status: str
    type: str | None = None
    amount: Decimal | None = None
    asset: str | None = None
    ref_id: str | None = None


class Order(Model):
    id: str
    status: str
    market: str | None = None
    side: str | None = None
    type: str | None = None


class RequestFault(Model):
    rule_id: str | None = None
    template: str | None = None
    when: str | None = None
    action: str | None = None


class Request(Model):
    """One request of the world, as it was answered (`GET /v2/sandbox/requests`)."""

    id: int
    request_id: str
    time: datetime
    method: str
    path: str
    operation: str | None = None
    status: int
    problem_type: str | None = None
    fault: RequestFault | None = None
    events: list[str]
    duration_ms: float
    client_id: str | None = None


class RequestPage(Page):
    items: list[Request]


class MarketPrice(Model):
    market: str
    reference_price: Decimal
    last_price: Decimal
    as_of: datetime


class Deposit(Model):
    activity_id: str | None = None


class Event(Model):
    id: str
    type: str
    object_type: str | None = None
    object: dict[str, Any] | None = None
    created_at: datetime
    undelivered_webhooks: int | None = None


class EventPage(Page):
    """A page of the event feed; its cursor is the answer's `X-Next-Page-Cursor`."""

    events: list[Event]
