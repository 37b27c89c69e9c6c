"""Moving-average cross on bar closes: all in when the fast average crosses above the
slow one, all out when it crosses below. Long only, market orders.

    sandex backtest --data scenarios/backtests/btcusd_hourly.csv --market BTCUSD \\
        --strategy scenarios/backtests/ma_cross.py:MaCross --taker-fee 0.001 --out report/
"""

from __future__ import annotations

from collections import deque
from decimal import Decimal
from typing import Any

from sandex.engine.backtest import Api, Strategy

CENT = Decimal("0.01")


class MaCross(Strategy):
    fast = 10
    slow = 30
    # Of the cash available, what a buy spends: the rest covers the taker fee held.
    invest = Decimal("0.99")

    def on_start(self, api: Api) -> None:
        self.closes: deque[Decimal] = deque(maxlen=self.slow)
        self.fast_sum = Decimal(0)
        self.slow_sum = Decimal(0)
        self.above: bool | None = None

    def on_bar(self, market: str, bar: Any) -> None:
        closes = self.closes
        if len(closes) == self.slow:
            self.slow_sum -= closes[0]
        if len(closes) >= self.fast:
            self.fast_sum -= closes[-self.fast]
        closes.append(bar.close)
        self.fast_sum += bar.close
        self.slow_sum += bar.close
        if len(closes) < self.slow:
            return
        above = self.fast_sum * self.slow > self.slow_sum * self.fast
        if above == self.above:
            return
        crossed = self.above is not None
        self.above = above
        if not crossed:
            return
        base, quote = market[:-3], market[-3:]
        if above:
            cash = Decimal(self.api.get_profile_balance(quote)["available"])
            spend = (cash * self.invest).quantize(CENT)
            if spend > 0:
                self.api.create_order(side="BUY", market=market, type="MARKET", quote_amount=spend)
        else:
            held = self.api.get_profile_balance(base)["available"]
            if Decimal(held) > 0:
                self.api.create_order(side="SELL", market=market, type="MARKET", base_amount=held)
