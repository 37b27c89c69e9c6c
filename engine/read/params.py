"""Integers that arrive as text (query parameters): one strict parse for every one.

`int()` and `str.isdigit()` take far more than an API should: `isdigit()` holds for
'²' (which `int()` refuses: a 500), `int()` takes '١٢', ' 12', '+12' and '1_2', and a
value past 2**63 - 1 passes both and fails inside SQLite (another 500). Here only ASCII
digits are taken (after a minus sign, a value below the bound), and the value must lie
within the parameter's bounds; anything else is a 400 that names the parameter.
"""

from __future__ import annotations

from typing import Literal

from sandex.engine.kernel.errors import Invalid

# SQLite's integers are signed 64-bit.
MAX_INT64 = 2**63 - 1

# What is wrong with a text: not ASCII digits, above the bound, below it.
Fault = Literal["digits", "above", "below"]
_WORDS: dict[Fault, str] = {
    "digits": "must be a whole number written with the digits 0-9",
    "above": "must be at most {high}",
    "below": "must be at least {low}",
}


def int_fault(text: str, low: int = 0, high: int = MAX_INT64) -> Fault | None:
    """What keeps `text` from being an integer from `low` to `high`, or None.

    Leading zeros are dropped and the digits counted before any conversion, so a long
    string costs no big-number arithmetic (nor meets `int()`'s limit of 4300 digits).
    A negative integer is an integer below the bound, not a malformed one: the bounds
    are never negative (every such parameter is a count, an offset or an id)."""
    negative = text[:1] == "-"
    unsigned = text[1:] if negative else text
    if not (unsigned and unsigned.isascii() and unsigned.isdigit()):
        return "digits"
    digits = unsigned.lstrip("0") or "0"
    if negative:
        return "digits" if digits == "0" else "below"  # no signed zero
    if len(digits) > len(str(high)) or int(digits) > high:
        return "above"
    if int(digits) < low:
        return "below"
    return None


def parse_int(text: str, field: str, low: int = 0, high: int = MAX_INT64) -> int:
    """`text` as an integer from `low` to `high`, or Invalid (400) naming `field`."""
    fault = int_fault(text, low, high)
    if fault is not None:
        words = _WORDS[fault].format(low=low, high=high)
        raise Invalid(f"{field} invalid: {words}", field=field)
    return int(text.lstrip("0") or "0")
