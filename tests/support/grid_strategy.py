"""A backtest strategy that keeps orders resting around the price: shared by the tests
that compare two ways of walking or computing the same run."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sandex.engine.backtest import Strategy


class Grid(Strategy):
    """Resting limits a step under and over each close, replaced at every bar: the walk
    meets them inside bars, and whole bars go by between."""

    def on_start(self, api: Any) -> None:
        self.open: list[str] = []

    def on_bar(self, market: str, bar: Any) -> None:
        for order_id in self.open:
            if self.api.get_order(order_id)["status"] == "OPEN":
                self.api.cancel_order(order_id)
        step = Decimal("0.25") * int(bar.close / 400)
        below = (bar.close / Decimal("0.25")).to_integral_value() * Decimal("0.25") - step
        self.open = [
            self.api.create_order(
                side="BUY", market=market, type="LIMIT", price=below, base_amount="0.01"
            )["id"],
        ]
        held = Decimal(self.api.get_profile_balance("BTC")["available"])
        if held >= Decimal("0.01"):
            self.open.append(
                self.api.create_order(
                    side="SELL",
                    market=market,
                    type="LIMIT",
                    price=below + 2 * step,
                    base_amount="0.01",
                )["id"]
            )
