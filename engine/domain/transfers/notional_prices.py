"""USD prices of assets, for the notional value of crypto transfers.

The trading engine owns the markets' reference prices; this module only answers "what
is one unit of this asset worth in USD now" for code outside trading. A module that
knows better (the market) declares a source in its `Registration.price_sources`, which a
decision finds in `Ctx.price_sources`; the first source that answers wins, and the defaults below answer otherwise, so that a withdrawal never depends on
whether a market has ticked yet. Sources read the state only, never a clock, so a
decision is the same live and in replay.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal

from sandex.engine.kernel.registry import PriceSource
from sandex.engine.kernel.state import State

# Stablecoins redeemable 1:1 for USD are worth exactly one dollar.
USD_STABLECOINS: frozenset[str] = frozenset({"USDP", "PYUSD", "USDG", "USDC"})

# Starting prices of early 2024, the sandbox's default epoch.
DEFAULT_USD_PRICES: dict[str, Decimal] = {
    "USD": Decimal(1),
    "BTC": Decimal("42500"),
    "ETH": Decimal("2300"),
    "BCH": Decimal("250"),
    "LTC": Decimal("72"),
    "SOL": Decimal("100"),
    "LINK": Decimal("15"),
    "AAVE": Decimal("105"),
    "UNI": Decimal("6.50"),
    "MATIC": Decimal("0.90"),
    "PAXG": Decimal("2050"),
    "EUR": Decimal("1.10"),
    "SGD": Decimal("0.75"),
}

CENT = Decimal("0.01")


def usd_price(state: State, asset: str, sources: Iterable[PriceSource]) -> Decimal:
    if asset in USD_STABLECOINS:
        return Decimal(1)
    for source in sources:
        price = source(state, asset)
        if price is not None:
            return price
    return DEFAULT_USD_PRICES.get(asset, Decimal(0))


def usd_value(state: State, asset: str, amount: Decimal, sources: Iterable[PriceSource]) -> Decimal:
    """`amount` of `asset` in USD, to the cent, half-up as money is rounded."""
    return (amount * usd_price(state, asset, sources)).quantize(CENT, rounding=ROUND_HALF_UP)
