"""The backtest package's shape: the report is made from a result alone (no runner, no
engine), and no module of the package touches a database connection itself."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import sandex.engine.backtest
from sandex.engine.backtest import BacktestResult
from sandex.engine.config.settings import Settings

T0 = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z in microseconds
MINUTE = 60_000_000
PACKAGE = Path(sandex.engine.backtest.__file__).parent


def held_bitcoin(prices: list[str]) -> BacktestResult:
    """One BTC held, no trading, over one price point a minute: a record made by hand."""
    return BacktestResult(
        markets=["BTCUSD"],
        assets=["USD", "BTC"],
        times=[T0 + k * MINUTE for k in range(len(prices))],
        mks=[0] * len(prices),
        prices=[Decimal(p) for p in prices],
        bars=0,
        holdings=[(T0, (Decimal(0), Decimal(1)))],
        flows=[],
        fills=[],
        orders=[],
        balances={
            "BTC": {"available": Decimal(1), "trading": Decimal(0), "withdrawing": Decimal(0)}
        },
        settings=Settings(seed=3),
        log_hash="0" * 64,
        db=None,
        errors=[],
    )


def test_figures_and_report_come_from_a_result_alone(tmp_path: Path) -> None:
    result = held_bitcoin(["100", "120", "90", "110"])
    s = result.summary
    assert (s["starting_equity"], s["final_equity"], s["pnl"], s["return_pct"]) == (
        "100",
        "110",
        "10",
        "10.00",
    )
    assert (s["max_drawdown_pct"], s["max_drawdown_amount"], s["seed"]) == ("25.00", "30", 3)
    assert s["final_balances"] == {"BTC": {"available": "1", "trading": "0", "withdrawing": "0"}}
    assert [r["drawdown_pct"] for r in result.equity] == ["0.00", "0.00", "25.00", "8.33"]
    out = result.write(tmp_path / "report")
    assert sorted(p.name for p in out.iterdir()) == [
        "equity.csv",
        "executions.csv",
        "report.html",
        "summary.json",
        "trades.csv",
    ]
    page = (out / "report.html").read_text()
    assert "Equity (USD), drawdown shaded" in page and "Position (BTC)" in page


# SQL, a connection or the sqlite3 module: the read side's (engine/read), not the package's.
_CONNECTION_WORDS = re.compile(
    r"\bimport sqlite3\b|\bsqlite_utils\b|\.conn\b|\.execute\(|\bSELECT\b|\bINSERT\b|\bUPDATE\b"
)


def test_no_module_of_the_package_touches_a_connection() -> None:
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.glob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _CONNECTION_WORDS.search(line)
    ]
    assert found == []


def test_the_public_face_names_what_users_import() -> None:
    for name in sandex.engine.backtest.__all__:
        value = getattr(sandex.engine.backtest, name)
        # defined in a module of the package, re-exported here
        assert value.__module__.startswith("sandex.engine.backtest."), name
    assert {"run", "Strategy", "Api", "ApiError", "BacktestError", "BacktestResult"} <= set(
        sandex.engine.backtest.__all__
    )
