"""The report folder a backtest writes: summary.json, executions.csv, trades.csv,
equity.csv and report.html, all made from a result (engine/backtest/result.py)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandex.engine.backtest.page import render_html
from sandex.engine.backtest.statistics import (
    EXECUTION_COLUMNS,
    TRADE_COLUMNS,
    iter_equity_rows,
    trade_rows,
)

if TYPE_CHECKING:
    from sandex.engine.backtest.result import BacktestResult


def write_report(result: BacktestResult, out: str | Path) -> Path:
    """summary.json, executions.csv, trades.csv, equity.csv and report.html in `out`."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(result.summary, indent=2) + "\n")
    _csv(folder / "executions.csv", result.executions, EXECUTION_COLUMNS)
    _csv(folder / "trades.csv", trade_rows(result.trades), TRADE_COLUMNS)
    # Written as made (a long run's rows as a list of dicts took ~50 MB), unless made.
    rows = iter(
        result.equity_if_made() or iter_equity_rows(result.raw_equity, result.equity_columns)
    )
    first = next(rows, None)
    columns = list(first) if first is not None else ["time", "equity"]
    _csv(folder / "equity.csv", chain([first] if first is not None else [], rows), columns)
    (folder / "report.html").write_text(render_html(result))
    return folder


def _csv(path: Path, rows: Iterable[dict[str, Any]], columns: list[str]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


__all__ = ["write_report"]
