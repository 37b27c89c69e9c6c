"""The default template's start and balances (docs/testing.md), apart from the world's
client so that the plugin's options can name them without importing it."""

from __future__ import annotations

from decimal import Decimal

# A fixed time, so that every run of a suite sees the same clock.
DEFAULT_START = "2030-01-02T15:00:00Z"
DEFAULT_BALANCES = {"USD": Decimal("100000"), "BTC": Decimal("10"), "ETH": Decimal("100")}
