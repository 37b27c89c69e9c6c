"""A market's reference price path: seeded multi-scale value noise, anchored to a price.

Time is cut into steps (`market_step_seconds`); at step k the price is
`anchor_price * exp(x(k) - x(anchor_step))`, where x is seeded multi-scale value noise:
ten octaves of linearly interpolated hashed values with periods 1, 4, 16 ... 4^9 steps
and amplitudes growing as the square root of the period, so the path moves like a
random walk of the configured daily volatility over minutes to days, and stays within a
few volatilities of its anchor beyond. Unlike a sequential random walk it can be
evaluated at any step in O(octaves) with no stored state, so an idle market writes no
events and a clock moved a year ahead costs nothing. Only integer arithmetic and
IEEE-exact float operations are used (no libm), so the path is the same on every
machine. An explicit price (`MarketPriceSet`) moves the anchor (sandex.engine.domain.trading.market).
"""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal

# Realistic starting prices (early 2024, the sandbox's default epoch).
START_PRICES: dict[str, Decimal] = {
    "BTCUSD": Decimal("42500"),
    "ETHUSD": Decimal("2300"),
    "BCHUSD": Decimal("250"),
    "LTCUSD": Decimal("72"),
    "LINKUSD": Decimal("15"),
    "AAVEUSD": Decimal("105"),
    "PAXGUSD": Decimal("2050"),
    "UNIUSD": Decimal("6.5"),
    "MATICUSD": Decimal("0.9"),
    "USDPUSD": Decimal("1"),
    "BTCEUR": Decimal("38750"),
    "BTCSGD": Decimal("56500"),
    "ETHEUR": Decimal("2100"),
    "ETHSGD": Decimal("3060"),
}

_MASK = (1 << 64) - 1
_OCTAVES = 10


def _mix(z: int) -> int:
    """splitmix64: a well-mixed 64-bit hash of an integer, in pure integer arithmetic."""
    z = (z + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _value(base: int, cell: int) -> float:
    """A hashed value in [-1, 1) for a lattice cell."""
    return (_mix(base ^ (cell & _MASK)) >> 11) * (2.0 / 9007199254740992.0) - 1.0


def exp(y: float) -> float:
    """e**y with + - * / only (no libm), so every machine computes the same bits."""
    halvings = 0
    while y > 0.5 or y < -0.5:
        y /= 2.0
        halvings += 1
    term = 1.0
    total = 1.0
    for n in range(1, 18):
        term = term * y / n
        total += term
    for _ in range(halvings):
        total *= total
    return total


class Noise:
    """x(k): the seeded log-price offset of a market at step k."""

    __slots__ = ("bases", "amps", "periods")

    def __init__(self, seed: int, market: str, sigma_step: float) -> None:
        raw = hashlib.shake_256(f"{seed}:{market}:price-path".encode()).digest(8 * _OCTAVES)
        self.bases = [int.from_bytes(raw[8 * o : 8 * o + 8], "big") for o in range(_OCTAVES)]
        self.periods = [4**o for o in range(_OCTAVES)]
        # With amp_o^2 = c * period_o the variance of a change over d steps (d well under
        # the longest period) measures about 0.65 * c * d.
        c = sigma_step * sigma_step / 0.65
        self.amps = [math.sqrt(c * p) for p in self.periods]

    def at(self, k: int) -> float:
        x = 0.0
        for base, amp, period in zip(self.bases, self.amps, self.periods, strict=True):
            cell, offset = divmod(k, period)
            v0 = _value(base, cell)
            if offset:
                v1 = _value(base, cell + 1)
                v0 += (v1 - v0) * (offset / period)
            x += amp * v0
        return x

    def run(self, k0: int, n: int) -> list[float]:
        """x(k0) ... x(k0 + n - 1), reusing lattice values between steps."""
        bases, amps, periods = self.bases, self.amps, self.periods
        cells = [(k0 // p) for p in periods]
        v0s = [_value(b, c) for b, c in zip(bases, cells, strict=True)]
        v1s = [_value(b, c + 1) for b, c in zip(bases, cells, strict=True)]
        out = []
        octaves = range(_OCTAVES)
        for k in range(k0, k0 + n):
            x = 0.0
            for o in octaves:
                period = periods[o]
                cell, offset = divmod(k, period)
                if cell != cells[o]:
                    if cell == cells[o] + 1:
                        v0s[o] = v1s[o]
                    else:
                        v0s[o] = _value(bases[o], cell)
                    v1s[o] = _value(bases[o], cell + 1)
                    cells[o] = cell
                if offset:
                    v0 = v0s[o]
                    x += amps[o] * (v0 + (v1s[o] - v0) * (offset / period))
                else:
                    x += amps[o] * v0s[o]
            out.append(x)
        return out
