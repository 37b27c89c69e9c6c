"""The report: figures on a path whose answers are known, the files, and the page as a
real browser draws it."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from engine.backtest import Api, Strategy, run

T0 = 1_704_067_200
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def holding(tmp_path: Path, prices: list[str], strategy: Any = None, **kw: Any) -> Any:
    data = tmp_path / "p.csv"
    data.write_text(
        "timestamp,price\n" + "".join(f"{T0 + 60 * k},{p}\n" for k, p in enumerate(prices))
    )
    return run(data, "BTCUSD", strategy=strategy or Strategy(), **kw)


def test_a_held_position_is_marked_to_each_price(tmp_path: Path) -> None:
    result = holding(tmp_path, ["100", "120", "90", "110"], deposits={"BTC": "1"})
    s = result.summary
    assert (s["starting_equity"], s["final_equity"], s["pnl"], s["return_pct"]) == (
        "100",
        "110",
        "10",
        "10.00",
    )
    assert (s["max_drawdown_pct"], s["max_drawdown_amount"]) == ("25.00", "30")
    assert s["exposure_pct"] == "100.00"
    assert [r["equity"] for r in result.equity] == ["100", "120", "90", "110"]
    assert [r["drawdown_pct"] for r in result.equity] == ["0.00", "0.00", "25.00", "8.33"]


class BuyThenSell(Strategy):
    def on_price(self, market: str, time: datetime, price: Decimal) -> None:
        minute = (time.minute, time.second)
        if minute == (1, 0):
            self.api.create_order(side="BUY", market=market, type="MARKET", quote_amount="1000")
        elif minute == (3, 0):
            held = self.api.get_profile_balance("BTC")["available"]
            self.api.create_order(side="SELL", market=market, type="MARKET", base_amount=held)

    def on_end(self, api: Api) -> None:
        self.last = api.get_profile_balance("USD")


def test_figures_of_a_round_trip(tmp_path: Path) -> None:
    strategy = BuyThenSell()
    result = holding(
        tmp_path,
        ["40000", "40000", "44000", "44000", "44000"],
        strategy,
        taker_fee="0.001",
        spread_bps="0",
    )
    s = result.summary
    assert s["orders"] == {"total": 2, "by_status": {"FILLED": 2}, "by_type": {"MARKET": 2}}
    assert s["executions"] == 2
    assert s["fees"] == "2.1"  # 1 on the way in, 1.1 on the way out
    assert s["volume"]["quote"] == "2100"
    assert s["pnl"] == "97.9" and s["final_equity"] == strategy.last["available"]
    assert s["slippage"] == {
        "measure": "fill price against the reference price at the fill, in bps, positive"
        " = cost (for a market order the reference at the fill is the arrival price)",
        "orders": 2,
        "cost": "0",
        "average_bps": "0.00",
    }
    # two of the four minutes held a position
    assert s["exposure_pct"] == "50.00"


def test_the_report_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = holding(tmp_path, ["40000", "40100", "39900", "40050"], BuyThenSell(), out=out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary == result.summary
    for key in ("orders", "executions", "volume", "fees", "final_balances", "pnl", "return_pct"):
        assert key in summary
    for key in ("max_drawdown_pct", "exposure_pct", "sharpe", "trades", "slippage", "log_hash"):
        assert key in summary
    with (out / "executions.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["side"] for r in rows] == ["BUY", "SELL"]
    assert rows[0]["reference_price"] == "40100.00"
    with (out / "equity.csv").open() as f:
        equity = list(csv.DictReader(f))
    assert len(equity) == 4 and {"equity", "drawdown_pct", "position_BTC"} <= set(equity[0])
    with (out / "trades.csv").open() as f:
        trades = list(csv.DictReader(f))
    assert [(t["entry_time"][:16], t["exit_time"][:16]) for t in trades] == [
        ("2024-01-01T00:01", "2024-01-01T00:03")
    ]
    page = (out / "report.html").read_text()
    assert "<svg" in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert page.count('data-chart="') == 3


def _chromium(*args: str, user_dir: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={user_dir}",
    ]
    return subprocess.run(
        [CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not found (make browser installs it)")
def test_the_page_draws_its_charts_in_a_real_browser(tmp_path: Path) -> None:
    out = tmp_path / "out"
    prices = [str(40000 + (k * 37) % 900) for k in range(300)]
    holding(tmp_path, prices, BuyThenSell(), out=out)
    page = (out / "report.html").as_uri()
    dom = _chromium("--dump-dom", page, user_dir=tmp_path / "profile")
    assert 'data-charts-drawn="3"' in dom.stdout, dom.stderr[-2000:]
    assert dom.stdout.count('data-drawn="yes"') == 3
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><html><body></body></html>")
    shots = {}
    for name, uri in (("report", page), ("blank", blank.as_uri())):
        shot = tmp_path / f"{name}.png"
        done = _chromium(
            f"--screenshot={shot}", "--window-size=1000,900", uri, user_dir=tmp_path / "profile"
        )
        assert shot.exists(), done.stderr[-2000:]
        shots[name] = shot.stat().st_size
    # A drawn page compresses far worse than an empty one.
    assert shots["report"] > 5 * shots["blank"]
