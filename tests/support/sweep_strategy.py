"""A small moving-average cross with parameters, for the sweep tests: named by file path
(`path.py:Cross`) so that every worker process, whatever its executor, loads it itself.
`boom` makes a run raise after that many bars (a failed combination)."""

from __future__ import annotations

from collections import deque
from decimal import Decimal
from typing import Any

from sandex.engine.backtest import Api, Strategy


class Cross(Strategy):
    fast = 3
    slow = 8
    invest = Decimal("0.9")
    boom = 0

    def on_start(self, api: Api) -> None:
        self.closes: deque[Decimal] = deque(maxlen=self.slow)
        self.bars = 0
        self.above: bool | None = None

    def on_bar(self, market: str, bar: Any) -> None:
        self.bars += 1
        if self.boom and self.bars > self.boom:
            raise RuntimeError(f"boom at bar {self.bars}")
        self.closes.append(bar.close)
        if len(self.closes) < self.slow:
            return
        fast = sum(list(self.closes)[-self.fast :]) / self.fast
        above = fast > sum(self.closes) / self.slow
        if above == self.above:
            return
        self.above = above
        base, quote = market[:-3], market[-3:]
        if above:
            cash = Decimal(self.api.get_profile_balance(quote)["available"])
            spend = (cash * self.invest).quantize(Decimal("0.01"))
            if spend > 0:
                self.api.create_order(side="BUY", market=market, type="MARKET", quote_amount=spend)
        else:
            held = self.api.get_profile_balance(base)["available"]
            if Decimal(held) > 0:
                self.api.create_order(side="SELL", market=market, type="MARKET", base_amount=held)
