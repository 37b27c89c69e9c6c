"""Order types as a table of rules: one row per type, read by placement and execution.

Placement reads a row's amount fields, time in force, notional rule and hold rule;
execution reads how the order takes liquidity and whether it waits for a stop. A new
order type is one row here, plus whatever behaviour no existing rule describes. The
rows follow table 2.3 of the interface.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# What an order holds (available -> trading) from its placement until it closes.
HOLD_BASE = "base amount"  # its base amount (a sell)
HOLD_AT_LIMIT = "quote at limit price"  # price x base amount plus the higher fee rate (a buy)
HOLD_QUOTE = "quote amount"  # its quote amount plus the taker fee rate (a buy by quote)

# How an order meets the book and the house's ladder once it acts.
TAKES_AT_ANY_PRICE = "at any price"  # whatever it can now; the rest is cancelled
TAKES_UP_TO_LIMIT = "up to its price"  # the rest rests, unless IOC or FOK
NEVER_TAKES = "never"  # refused if it would take liquidity, else it rests

# The price its notional value is checked at (an order by quote amount: that amount).
AT_PRICE = "price"
AT_STOP = "stop price"
AT_MID = "mid price"

# The API's order types and times in force, in the reference's order (the adapter's
# enums are derived from them); ORDER_TYPES holds one row per name.
ORDER_TYPE_NAMES = ("LIMIT", "MARKET", "POST_ONLY_LIMIT", "STOP_MARKET", "STOP_LIMIT")
ALL_TIF = ("GTC", "FOK", "IOC", "GTT")
IMMEDIATE_TIF = frozenset({"IOC", "FOK"})  # what is left after taking is cancelled
_ANY_TIF = frozenset(ALL_TIF)
_RESTING_TIF = frozenset({"GTC", "GTT"})
AMOUNT_FIELDS = ("price", "base_amount", "quote_amount", "stop_price")


@dataclass(frozen=True, slots=True)
class OrderType:
    """One order type's rules."""

    name: str
    # side -> the amount fields it requires, in the order a missing one is told; no other
    # amount field is allowed. A side absent here is refused with `side_refused`.
    fields: Mapping[str, tuple[str, ...]]
    holds: Mapping[str, str]  # side -> HOLD_*
    default_tif: str
    tifs: frozenset[str]
    taking: str  # TAKES_AT_ANY_PRICE, TAKES_UP_TO_LIMIT or NEVER_TAKES
    stop: bool  # waits until the last price falls to its stop price (a sell stop-loss)
    market_notional: bool  # checked against the market maximum notional, else the limit one
    notional_at: str  # AT_PRICE, AT_STOP or AT_MID
    # A taker priced 15% or more away from the mid price is refused at placement.
    taker_band: bool = False
    side_refused: str = ""
    # side -> which of AMOUNT_FIELDS it takes, as booleans: what a valid order sends
    shapes: Mapping[str, tuple[bool, ...]] = field(init=False)

    def __post_init__(self) -> None:
        shapes = {
            side: tuple(name in needed for name in AMOUNT_FIELDS)
            for side, needed in self.fields.items()
        }
        object.__setattr__(self, "shapes", shapes)

    def label(self, side: str) -> str:
        """The type as an error names it: with the side when the sides' fields differ."""
        return f"{side} {self.name}" if len(set(self.fields.values())) > 1 else self.name


_LIMIT_FIELDS = {"BUY": ("price", "base_amount"), "SELL": ("price", "base_amount")}
_LIMIT_HOLDS = {"BUY": HOLD_AT_LIMIT, "SELL": HOLD_BASE}
_STOPS_SELL_ONLY = "orders are sell stop-losses; a BUY stop order is not supported"

ORDER_TYPES: dict[str, OrderType] = {
    row.name: row
    for row in (
        OrderType(
            name="MARKET",
            fields={"BUY": ("quote_amount",), "SELL": ("base_amount",)},
            holds={"BUY": HOLD_QUOTE, "SELL": HOLD_BASE},
            default_tif="IOC",
            tifs=frozenset({"IOC"}),
            taking=TAKES_AT_ANY_PRICE,
            stop=False,
            market_notional=True,
            notional_at=AT_MID,
        ),
        OrderType(
            name="LIMIT",
            fields=_LIMIT_FIELDS,
            holds=_LIMIT_HOLDS,
            default_tif="GTC",
            tifs=_ANY_TIF,
            taking=TAKES_UP_TO_LIMIT,
            stop=False,
            market_notional=False,
            notional_at=AT_PRICE,
            taker_band=True,
        ),
        OrderType(
            name="POST_ONLY_LIMIT",
            fields=_LIMIT_FIELDS,
            holds=_LIMIT_HOLDS,
            default_tif="GTC",
            tifs=_ANY_TIF,
            taking=NEVER_TAKES,
            stop=False,
            market_notional=False,
            notional_at=AT_PRICE,
        ),
        OrderType(
            name="STOP_MARKET",
            fields={"SELL": ("stop_price", "base_amount")},
            holds={"SELL": HOLD_BASE},
            default_tif="GTC",
            tifs=_RESTING_TIF,
            taking=TAKES_AT_ANY_PRICE,
            stop=True,
            market_notional=True,
            notional_at=AT_STOP,
            side_refused=_STOPS_SELL_ONLY,
        ),
        OrderType(
            name="STOP_LIMIT",
            fields={"SELL": ("stop_price", "price", "base_amount")},
            holds={"SELL": HOLD_BASE},
            default_tif="GTC",
            tifs=_RESTING_TIF,
            taking=TAKES_UP_TO_LIMIT,
            stop=True,
            market_notional=False,
            notional_at=AT_PRICE,
            side_refused=_STOPS_SELL_ONLY,
        ),
    )
}
