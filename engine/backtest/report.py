"""The report folder a backtest writes: summary.json, executions.csv, trades.csv,
equity.csv and report.html, all made from a result (engine/backtest/result.py)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.backtest.page import render_html
from engine.backtest.statistics import EXECUTION_COLUMNS, TRADE_COLUMNS, trade_rows

if TYPE_CHECKING:
    from engine.backtest.result import BacktestResult


def write_report(result: BacktestResult, out: str | Path) -> Path:
    """summary.json, executions.csv, trades.csv, equity.csv and report.html in `out`."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(result.summary, indent=2) + "\n")
    _csv(folder / "executions.csv", result.executions, EXECUTION_COLUMNS)
    _csv(folder / "trades.csv", trade_rows(result.trades), TRADE_COLUMNS)
    columns = list(result.equity[0]) if result.equity else ["time", "equity"]
    _csv(folder / "equity.csv", result.equity, columns)
    (folder / "report.html").write_text(render_html(result))
    return folder


def _csv(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


__all__ = ["write_report"]
