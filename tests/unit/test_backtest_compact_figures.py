"""The figures and charts of one market on the compact timeline, computed with numpy in
blocks (engine/backtest/statistics.py `_walk_compact`, engine/backtest/charts.py), are
those of the same run on lists, walked point by point in Decimals."""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sandex.engine.backtest import charts, run, statistics
from sandex.engine.backtest.price_files import load
from sandex.engine.backtest.strategy import strategy_class
from sandex.engine.backtest.timeline import merge
from tests.support.grid_strategy import Grid

DATA = Path(__file__).parents[2] / "scenarios" / "backtests" / "btcusd_hourly.csv"


def _runs(strategy: Any) -> tuple[Any, Any]:
    compact = run(DATA, "BTCUSD", strategy=strategy, taker_fee="0.001", progress=False)
    listed = dataclasses.replace(
        compact,
        times=list(compact.times),
        mks=list(compact.mks),
        prices=list(compact.prices),
        ohlc=list(compact.ohlc),
    )
    return compact, listed


@pytest.mark.parametrize("block", [1, 7, 1 << 16])
@pytest.mark.parametrize("kind", ["ma_cross", "grid"])
def test_the_figures_in_blocks_are_those_of_the_walk(
    block: int, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statistics, "_BLOCK", block)
    if block == 7:  # a long run's returns: made again for each pass, not kept
        monkeypatch.setattr(statistics, "KEPT_RETURNS", 0)
    strategy = (
        strategy_class("scenarios/backtests/ma_cross.py:MaCross")()
        if kind == "ma_cross"
        else Grid()
    )
    compact, listed = _runs(strategy)
    assert isinstance(compact.raw_equity, statistics.EquityRows)
    assert not isinstance(listed.raw_equity, statistics.EquityRows)
    assert compact.summary["max_drawdown_pct"] != "0.00"
    assert compact.summary == listed.summary
    assert compact.raw_equity == listed.raw_equity
    assert compact.equity == listed.equity


def _close(a: Any, b: Any, where: str = "") -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _close(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for x, y in zip(a, b, strict=True):
            _close(x, y, where)
    elif isinstance(a, float):
        assert math.isclose(a, b, rel_tol=1e-12), (where, a, b)
    else:
        assert a == b, where


@pytest.mark.parametrize("candles", [7, 2_000])
def test_the_charts_of_the_bar_columns_are_those_of_the_bars(
    candles: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(charts, "MAX_CANDLES", candles)
    compact, listed = _runs(strategy_class("scenarios/backtests/ma_cross.py:MaCross")())
    assert charts._compact_bars(compact) is not None
    assert charts._compact_bars(listed) is None
    drawn = charts.chart_data(compact)
    assert len(drawn["series"][0]["time"]) == min(candles, 600)
    _close(drawn, charts.chart_data(listed))


@pytest.mark.parametrize(("high", "kind"), [("21474836.47", "i"), ("21474836.48", "q")])
def test_ticks_take_4_bytes_while_every_price_fits(tmp_path: Path, high: str, kind: str) -> None:
    path = tmp_path / "bars.csv"
    path.write_text(
        "timestamp,open,high,low,close\n"
        "2024-01-01T00:00:00Z,100.00,101.00,99.00,99.50\n"
        f"2024-01-01T01:00:00Z,99.50,{high},99.00,100.25\n"
    )
    series = load(path, "BTCUSD")
    ticks = merge(series, [Decimal("0.01")])[3]
    assert ticks.typecode == kind
    top = int(Decimal(high) * 100)
    assert list(ticks) == [10000, 10100, 9900, 9950, 9950, 9900, top, 10025]
