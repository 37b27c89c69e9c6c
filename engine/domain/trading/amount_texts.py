"""Amounts as the hot path holds them (integer ticks and base units) and as the API
shows them (text).

Views and events show amounts as `format(Decimal, "f")` does; these give the same text
from the integers the hot path holds, without building a Decimal per amount (a view
is built for every feed item and read-model row of an order). A price's text is parsed
back to ticks here too, checked against the market's tick size.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import TYPE_CHECKING

from sandex.engine.kernel.money import MARKETS, check_step, format_normal, parse_amount

if TYPE_CHECKING:
    from sandex.engine.domain.trading.market import Market

UNIT = Decimal("0.00000001")  # one base unit
UNITS_PER_BASE = 100_000_000
EIGHT = Decimal("0.00000001")


def _tick_text(tick: Decimal) -> tuple[int, int, int, str]:
    """A tick size as (integer steps per tick, decimal places, 10**places, the template
    of a price's text)."""
    _, digits, exponent = tick.as_tuple()
    assert isinstance(exponent, int)
    n = int("".join(map(str, digits)))
    if exponent >= 0:
        return n * 10**exponent, 0, 1, "%d"
    places = -exponent
    return n, places, 10**places, f"%d.%0{places}d"


_TICKS = {name: _tick_text(spec.tick) for name, spec in MARKETS.items()}


def units_text(units: int) -> str:
    """Base units as the API shows base amounts: always 8 decimals."""
    if units < 0:
        return format(Decimal(units) * UNIT, "f")
    return "%d.%08d" % divmod(units, 100_000_000)  # noqa: UP031 - faster than format()


def price_text(market: str, ticks: int) -> str:
    """A price in ticks of `market`, with the places of its tick size."""
    n, places, scale, template = _TICKS[market]
    if ticks < 0 or not places:
        return format(MARKETS[market].tick * ticks, "f")
    return template % divmod(ticks * n, scale)


def ticks_text(mk: Market, ticks: int) -> str:
    """`price_text` of a market object."""
    return price_text(mk.name, ticks)


def decimal_text(value: Decimal) -> str:
    """A Decimal as events and views write it: positional, never an exponent."""
    return format(value, "f")


def order_vwap_text(market: str, spent: int, filled: int) -> str:
    """spent x tick / filled, rounded half up to 8 places, in integers: exact, so the same
    as the 60-digit Decimal division and quantize it replaces (a quotient's expansion
    cannot hold 37 nines in a row before its 60th digit with a denominator this small)."""
    if filled == 0:
        return "0.00000000"
    n, _, scale, _ = _TICKS[market]
    den = filled * scale
    q, r = divmod(spent * n * 100_000_000, den)
    if 2 * r >= den:
        q += 1
    return "%d.%08d" % divmod(q, 100_000_000)  # noqa: UP031


def vwap_text(mk: Market, spent: int, filled: int) -> str:
    """`order_vwap_text`, for any integers (a negative one divides in Decimal)."""
    if spent < 0 or filled < 0:
        with localcontext() as c:
            c.prec = 60
            value = Decimal(spent) * mk.tick / Decimal(filled)
            return format(value.quantize(EIGHT, rounding=ROUND_HALF_UP), "f")
    return order_vwap_text(mk.name, spent, filled)


def gross_text(market: str, ticks: int, units: int) -> str:
    """`format_normal` of price x amount, from the integers: the exact quotient of
    ticks x units x steps by 10**(places + 8), without its trailing zeros. Two Decimal
    products and a normalize cost several times as much, for every execution view."""
    n, places, _, _ = _TICKS[market]
    value = ticks * units * n
    if value < 0 or value >= _EXACT:
        return format_normal(Decimal(ticks * units) * MARKETS[market].tick * UNIT)
    digits = places + 8
    whole, fraction = divmod(value, 10**digits)
    if not fraction:
        return str(whole)
    return ("%d.%0*d" % (whole, digits, fraction)).rstrip("0")  # noqa: UP031


# Below this, a product of ticks, units and steps has at most 27 digits: the Decimal
# product it stands for is exact in any context of 28 digits or more, as is the text.
_EXACT = 10**27


def price_ticks(text: str, field: str, tick: Decimal) -> int:
    """A price's text as a whole number of ticks; a price between ticks is refused."""
    value = parse_amount(text, field)
    ticks, off = divmod(value, tick)
    if off:
        check_step(value, tick, field, "tick size")  # raises, with the usual words
    return int(ticks)
