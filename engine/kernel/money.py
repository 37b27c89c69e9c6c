"""Decimal amounts, asset precision and market specifications.

Amounts are `Decimal` from the wire to the ledger; JSON carries them as plain strings.
An amount with more decimals than its asset allows is refused, never rounded (unless it
is taken from a balance that holds as many: `check_precision`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Context, Decimal, DivisionByZero, InvalidOperation, Overflow

from sandex.engine.kernel.errors import ExceedPrecision, Invalid

AMOUNT_PATTERN = re.compile(r"^[0-9]*\.?[0-9]+$")
ZERO = Decimal(0)
# The engine's arithmetic (set on the writer thread and around every replay): exact for
# any sum of amounts of at most 64 characters, where Python's default 28 significant
# digits would round a large balance silently.
CONTEXT = Context(prec=100, traps=[InvalidOperation, DivisionByZero, Overflow])

# Transfer precision (decimal places) per asset.
ASSET_PRECISION: dict[str, int] = {
    "USD": 2,
    "EUR": 2,
    "SGD": 2,
    "BTC": 8,
    "BCH": 8,
    "LTC": 8,
    "SOL": 9,
    "ETH": 18,
    "PAXG": 18,
    "USDP": 18,
    "LINK": 18,
    "AAVE": 18,
    "UNI": 18,
    "MATIC": 18,
    "USDC": 6,
    "PYUSD": 6,
    "USDG": 6,
}
ASSETS: tuple[str, ...] = tuple(sorted(ASSET_PRECISION))
FIAT_ASSETS = frozenset({"USD", "EUR", "SGD"})


@dataclass(frozen=True, slots=True)
class MarketSpec:
    market: str
    base: str
    quote: str
    tick: Decimal
    base_step: Decimal = Decimal("0.00000001")
    quote_step: Decimal = Decimal("0.01")
    min_base: Decimal = Decimal("0.00000001")
    min_quote: Decimal = Decimal("0.01")
    max_limit_notional: Decimal = Decimal(1_000_000)
    max_market_notional: Decimal = Decimal(500_000)


def _spec(market: str, base: str, quote: str, tick: str, max_limit: int = 1_000_000) -> MarketSpec:
    return MarketSpec(market, base, quote, Decimal(tick), max_limit_notional=Decimal(max_limit))


MARKETS: dict[str, MarketSpec] = {
    s.market: s
    for s in (
        _spec("BTCUSD", "BTC", "USD", "0.25", 1_500_000),
        _spec("ETHUSD", "ETH", "USD", "0.05", 1_500_000),
        _spec("BCHUSD", "BCH", "USD", "0.05"),
        _spec("LTCUSD", "LTC", "USD", "0.01"),
        _spec("LINKUSD", "LINK", "USD", "0.01"),
        _spec("AAVEUSD", "AAVE", "USD", "0.01"),
        _spec("PAXGUSD", "PAXG", "USD", "0.01"),
        _spec("UNIUSD", "UNI", "USD", "0.01"),
        _spec("MATICUSD", "MATIC", "USD", "0.0001"),
        _spec("USDPUSD", "USDP", "USD", "0.0001"),
        _spec("BTCEUR", "BTC", "EUR", "0.25"),
        _spec("BTCSGD", "BTC", "SGD", "0.25"),
        _spec("ETHEUR", "ETH", "EUR", "0.05"),
        _spec("ETHSGD", "ETH", "SGD", "0.05"),
    )
}


def parse_amount(text: object, field: str, *, allow_zero: bool = False) -> Decimal:
    """Parse a wire amount: a plain decimal string, never a JSON number or exponent."""
    if not isinstance(text, str):
        raise Invalid(f"{field} invalid: amount must be a string", field=field)
    if not AMOUNT_PATTERN.match(text) or len(text) > 64:
        raise Invalid(
            f"{field} invalid: invalid amount '{text[:64]}': must be positive decimal",
            field=field,
        )
    try:
        value = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern already excludes this
        raise Invalid(f"{field} invalid: invalid amount '{text}'", field=field) from None
    if value == ZERO and not allow_zero:
        raise Invalid(
            f"{field} invalid: invalid amount '{text}': must be positive decimal", field=field
        )
    return value


def decimals(value: Decimal) -> int:
    exponent = value.normalize().as_tuple().exponent
    assert isinstance(exponent, int)
    return max(0, -exponent)


def debit_places(asset: str, held: Decimal) -> int:
    """The places of an amount taken from a balance that holds `held`: the asset's, or as
    many as the balance carries. Trades settle the quote at full precision, as the
    service's executions do (a `gross_trade_amount` of 99.9997727575 USD), so a fiat
    balance may hold digits below the cent, and a balance shown must be movable whole."""
    return max(ASSET_PRECISION[asset], decimals(held))


def check_precision(value: Decimal, asset: str, field: str, held: Decimal | None = None) -> None:
    """At most the asset's places, or, for an amount taken from a balance that holds
    `held`, its `debit_places`."""
    places = ASSET_PRECISION.get(asset)
    if places is None:
        return
    most = places if held is None else debit_places(asset, held)
    if decimals(value) > most:
        raise ExceedPrecision(asset, places, field)


def check_step(value: Decimal, step: Decimal, field: str, what: str) -> None:
    if value % step != 0:
        raise Invalid(
            f"{field} invalid: {format_amount(value)} is not a multiple of {what} {format_amount(step)}",
            field=field,
        )


def format_amount(value: Decimal) -> str:
    """Plain notation, never an exponent: `0.00000001`, not `1E-8`."""
    return format(value, "f")


def format_normal(value: Decimal) -> str:
    """Plain notation without trailing zeros, for balances (`0`, `1.5`)."""
    if value == ZERO:
        return "0"
    # the context as an argument, not a `localcontext` block: a third of the cost
    return format(value.normalize(CONTEXT), "f")
