"""Backtests: an order flow run against historical prices on the sandbox's engine.

The public face: `run` (what `sandex backtest` calls), the strategy API (`Strategy`,
its `Api`, `ApiError`), order-flow files, price files and the `BacktestResult` a run
answers. Modules, one concept each: strategy, flows, price_files, timeline, runner,
result, statistics, charts, page, report; sweeps: sweep (with
grid, search, executors, heatmap)."""

from sandex.engine.backtest.errors import BacktestError
from sandex.engine.backtest.flows import Flow, FlowStep, FlowStrategy, flow_from_data, load_flow
from sandex.engine.backtest.price_files import Bar, MarketDataError, Series, load, load_many
from sandex.engine.backtest.result import BacktestResult, Fill
from sandex.engine.backtest.runner import run
from sandex.engine.backtest.search import Search
from sandex.engine.backtest.strategy import Api, ApiError, Strategy, load_strategy
from sandex.engine.backtest.sweep import SweepResult, SweepRow, sweep

__all__ = [
    "Api",
    "ApiError",
    "BacktestError",
    "BacktestResult",
    "Bar",
    "Fill",
    "Flow",
    "FlowStep",
    "FlowStrategy",
    "MarketDataError",
    "SweepRow",
    "Search",
    "Series",
    "Strategy",
    "SweepResult",
    "flow_from_data",
    "load",
    "load_flow",
    "load_many",
    "load_strategy",
    "run",
    "sweep",
]
