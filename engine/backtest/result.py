"""What a backtest answers: the run's record (its timeline, holdings, fills, orders and
balances, as plain values, no engine) and the figures computed from it.

The figures (`summary`, `executions`, `trades`) are computed when the result is made, by
`sandex.engine.backtest.statistics`; equity.csv's text rows only when asked for (most runs
never are); the charts and the page only when the report is written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from sandex.engine.backtest import statistics
from sandex.engine.backtest.report import write_report
from sandex.engine.backtest.trades import Trade
from sandex.engine.config.settings import Settings


@dataclass
class Fill:
    """An execution as the report needs it."""

    view: dict[str, Any]
    order_type: str
    reference: Decimal | None  # the reference price when the fill happened
    liquidity: str


@dataclass(eq=False)
class BacktestResult:
    # -- the run's record
    markets: list[str]
    # every asset the run holds or moves, in the order holdings list them
    assets: list[str] = field(repr=False)
    # the timeline walked: time in us, market index, price (on the tick; arrays, the
    # prices made when read: engine/backtest/timeline.py)
    times: Sequence[int] = field(repr=False)
    mks: Sequence[int] = field(repr=False)
    prices: Sequence[Decimal] = field(repr=False)
    bars: int = field(repr=False)
    # (time in us, holdings per asset in `assets` order), whenever they changed
    holdings: list[tuple[int, tuple[Decimal, ...]]] = field(repr=False)
    # (time in us, asset, amount) moved in or (negative) out other than by trading
    flows: list[tuple[int, str, Decimal]] = field(repr=False)
    fills: list[Fill] = field(repr=False)
    # (status, type) of each of the flow's orders, at the end
    orders: list[tuple[str, str]] = field(repr=False)
    # the flow's ledger at the end: asset -> available, trading, withdrawing
    balances: dict[str, dict[str, Decimal]] = field(repr=False)
    settings: Settings = field(repr=False)
    log_hash: str
    db: str | None
    errors: list[dict[str, Any]] = field(repr=False)
    # per point of the timeline, the bar (price_files.Bar) it closes, None for most and
    # for trade data: the charts draw candles and volume from them
    ohlc: Sequence[Any] = field(default_factory=list, repr=False)
    # the strategy's parameters the run used, as JSON holds them (summary["params"])
    params: dict[str, Any] = field(default_factory=dict, repr=False)
    # for each entry of `holdings`, the first point of the timeline held with it: the
    # point where the change happened is valued before it (the drawdown and equity.csv
    # value each point with what was held there). None (a record made by hand): each
    # entry from the first point after its instant.
    held_from: Sequence[int] | None = field(default=None, repr=False)
    # where an order sent once a bar is complete filled (runner.FILL_AT)
    fill_at: str = field(default="close", repr=False)
    # -- figures, computed from the record when the result is made
    summary: dict[str, Any] = field(init=False)
    executions: list[dict[str, Any]] = field(init=False)
    # Equity rows as computed (time, price, market, equity, peak, holdings, cash), made
    # into text only when asked for.
    raw_equity: list[tuple[Any, ...]] = field(init=False, repr=False)
    # equity.csv's columns: the markets, (index, asset) of each position, the currency
    equity_columns: tuple[list[str], list[tuple[int, str]], str] = field(init=False)
    _trades: list[Trade] = field(init=False, repr=False)
    _equity: list[dict[str, Any]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        figures = statistics.compute(self)
        self.summary = figures.summary
        self.executions = figures.executions
        self.raw_equity = figures.equity
        self.equity_columns = figures.equity_columns
        self._trades = figures.trades

    @property
    def trades(self) -> list[Trade]:
        """The closed round trips, in exit order (engine/backtest/trades.py)."""
        return self._trades

    @property
    def equity(self) -> list[dict[str, Any]]:
        """equity.csv's rows: time, price, market, equity, drawdown, positions, cash."""
        if self._equity is None:
            self._equity = statistics.equity_rows(self.raw_equity, self.equity_columns)
        return self._equity

    def equity_if_made(self) -> list[dict[str, Any]] | None:
        """equity.csv's rows if `equity` made them already, else None."""
        return self._equity

    def write(self, out: str | Path) -> Path:
        """summary.json, executions.csv, trades.csv, equity.csv and report.html in `out`."""
        return write_report(self, out)


__all__ = ["BacktestResult", "Fill"]
