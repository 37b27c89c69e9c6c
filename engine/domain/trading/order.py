"""An order: what the client asked, where it stands, and what it still holds.

An order's lifecycle is a stream of events (`order-<id>`):

    OrderPlaced     the order and its hold (available -> trading); status
                    PENDING_SUBMISSION when a submission latency is set, else SUBMITTED
    OrderSubmitted  PENDING_SUBMISSION -> SUBMITTED, by the scheduler
    OrderOpened     it rests in the book (or, a stop, waits for its trigger): OPEN;
                    `held`: outside the book until released (sandbox:hold)
    OrderReleased   a held order let go: it meets the market as if submitted then
    OrderTriggered  a stop's last-price condition was met (is_triggered)
    TradeExecuted   one trade: both sides' executions, fees and postings; a side may
                    be the house (synthetic liquidity)
    OrderFilled / OrderCancelled / OrderRejected   closed; what is left of the hold
                    goes back to available

Every amount an order holds in the hot path is an integer (ticks, base units of 1e-8,
notional units of tick x base unit) and becomes a `Decimal` only at the edges (events,
views, ledger). Only appliers (sandex.engine.domain.trading.appliers) change an order.
"""

from __future__ import annotations

from decimal import Decimal

from sandex.engine.domain.trading.book import BUY, SELL
from sandex.engine.kernel.money import ZERO

# The API's vocabularies of orders, declared here once (the adapter derives its enums).
SIDE_NAMES = ("BUY", "SELL")
SIDES = dict(zip(SIDE_NAMES, (BUY, SELL), strict=True))
ORDER_STATUSES = ("PENDING_SUBMISSION", "SUBMITTED", "OPEN", "FILLED", "CANCELLED", "REJECTED")
OPEN_STATES = frozenset(ORDER_STATUSES[:3])
CLOSED_STATES = frozenset(ORDER_STATUSES[3:])


class Order:
    """One order: what the client asked, where it stands, and what it still holds."""

    __slots__ = (
        "id",
        "profile_id",
        "customer_id",
        "market",
        "side",
        "type",
        "tif",
        "status",
        "ticks",
        "qty",
        "quote",
        "budget",
        "stop_ticks",
        "triggered",
        "expires",
        "ref_id",
        "metadata",
        "identity_id",
        "identity_account_id",
        "recipient",
        "smp_id",
        "created_at",
        "modified_at",
        "closed_at",
        "filled",
        "spent",
        "commission",
        "hold",
        "hold_asset",
        "hold_rate",
        "remaining",
        "live",
        "seq",
    )

    id: str
    profile_id: str
    customer_id: str
    market: str
    side: int
    type: str
    tif: str
    status: str
    ticks: int  # limit price in ticks; 0 when the order has none
    qty: int  # base amount in units; 0 for a market buy
    quote: Decimal | None  # a market buy's quote amount
    budget: int  # that quote amount in notional units (ticks x base units)
    stop_ticks: int
    triggered: bool
    expires: str | None
    ref_id: str | None
    metadata: dict[str, str] | None
    identity_id: str | None
    identity_account_id: str | None
    recipient: str | None
    smp_id: str | None
    created_at: str
    modified_at: str
    closed_at: str | None
    filled: int  # base units
    spent: int  # notional units
    commission: Decimal
    hold: Decimal  # what the order still holds in `trading`, in hold_asset
    hold_asset: str
    hold_rate: Decimal  # the fee rate a limit buy's hold covers
    remaining: int  # units resting in the book
    live: bool  # in the book now
    seq: int

    def __init__(self) -> None:
        self.live = False
        self.remaining = 0
        self.filled = 0
        self.spent = 0
        self.commission = ZERO
        self.triggered = False
        self.closed_at: str | None = None

    @property
    def open(self) -> bool:
        return self.status in OPEN_STATES
