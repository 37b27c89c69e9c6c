"""The report: figures on a path whose answers are known, the files, and the page as a
real browser draws it."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import subprocess
import sys
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sandex.engine.backtest import Api, Strategy, run
from sandex.engine.backtest.charts import MAX_CANDLES, MAX_LINE_POINTS, TRADE_BUCKETS
from sandex.engine.backtest.trades import round_trips

T0 = 1_704_067_200
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = Path(__file__).resolve().parents[2]
# what a page loads: scripts, styles, images, frames
RESOURCE = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*?\b(?:src|href)\s*=""")


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
    assert RESOURCE.findall(page) == []  # Bokeh's script is inline: nothing from a CDN
    assert 'data-charts="4"' in page  # price, equity, P/L per trade, position
    assert {"price", "trades", "equity", "pnl", "position"} <= set(_sources(page))


def _sources(page: str) -> dict[str, int]:
    """Each named data source of the page's Bokeh document: how many rows it draws."""
    found = re.findall(r'<script type="application/json" id="[^"]*">(.*?)</script>', page, re.S)
    assert len(found) == 1, "no Bokeh document in the page"
    rows: dict[str, int] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("name") == "ColumnDataSource":
                attributes = node["attributes"]
                columns = dict(attributes["data"]["entries"])
                rows[attributes["name"]] = len(next(iter(columns.values())))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(json.loads(html.unescape(found[0])))
    return rows


class Flip(Strategy):
    """Buys at one point and sells at the next: a round trip every two points."""

    def on_start(self, api: Api) -> None:
        self.holding = False

    def on_price(self, market: str, time: datetime, price: Decimal) -> None:
        if self.holding:
            held = self.api.get_profile_balance("BTC")["available"]
            self.api.create_order(side="SELL", market=market, type="MARKET", base_amount=held)
        else:
            self.api.create_order(side="BUY", market=market, type="MARKET", quote_amount="100")
        self.holding = not self.holding


def test_thousands_of_trades_draw_a_bounded_number_of_glyphs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    prices = [str(40000 + (k * 37) % 900) for k in range(6001)]
    result = holding(tmp_path, prices, Flip(), out=out)
    assert len(round_trips(result)) == 3000
    rows = _sources((out / "report.html").read_text())
    # one marker and one P/L bar per time bucket, not one per trade
    assert 0 < rows["trades"] <= TRADE_BUCKETS and 0 < rows["pnl"] <= TRADE_BUCKETS
    assert rows["price"] <= MAX_LINE_POINTS + 2 and rows["equity"] <= MAX_LINE_POINTS + 2
    assert sum(rows.values()) < 7_000


def test_a_few_trades_are_drawn_one_by_one(tmp_path: Path) -> None:
    out = tmp_path / "out"
    holding(tmp_path, [str(40000 + k) for k in range(21)], Flip(), out=out)
    assert _sources((out / "report.html").read_text())["trades"] == 10


def _bars(path: Path, count: int) -> Path:
    """Hourly bars with volume, drifting up and down."""
    lines = ["timestamp,open,high,low,close,volume"]
    for k in range(count):
        o = 40000 + (k % 50) * 10
        c = o + (k % 7 - 3) * 30
        lines.append(f"{T0 + 3600 * k},{o},{max(o, c) + 200},{min(o, c) - 200},{c},{k % 13 + 1}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_long_bar_data_is_drawn_as_at_most_max_candles(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(_bars(tmp_path / "bars.csv", 5000), "BTCUSD", strategy=Strategy(), out=out)
    rows = _sources((out / "report.html").read_text())
    assert MAX_CANDLES // 2 <= rows["candles"] <= MAX_CANDLES


def test_a_backtest_without_a_report_never_imports_bokeh(tmp_path: Path) -> None:
    data = tmp_path / "p.csv"
    data.write_text("timestamp,price\n" + "".join(f"{T0 + 60 * k},{40000 + k}\n" for k in range(5)))
    code = (
        "import sys\n"
        "from sandex.engine.backtest import Strategy, run\n"
        f"run({str(data)!r}, 'BTCUSD', strategy=Strategy())\n"
        "from sandex.api_adapter.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'bokeh'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


def _chromium(*args: str, user_dir: Path) -> subprocess.CompletedProcess[str]:
    """A headless browser that can reach no network: any host goes to a proxy that is
    not there, so a page that needs a CDN draws nothing."""
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
        "--proxy-server=http://127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        # lets Bokeh's asynchronous drawing and the page's check finish before the dump
        "--virtual-time-budget=20000",
        f"--user-data-dir={user_dir}",
    ]
    return subprocess.run(
        [CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120, check=False
    )


def _drawn(page: Path, user_dir: Path) -> dict[str, str]:
    """The page's own check of its charts, read from its DOM once drawn."""
    dom = _chromium("--dump-dom", page.as_uri(), user_dir=user_dir)
    found = re.search(r'<div id="report"([^>]*)>', dom.stdout)
    assert found, dom.stderr[-2000:]
    return dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', found.group(1)))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not found (make browser installs it)")
def test_the_page_draws_its_charts_in_a_real_browser(tmp_path: Path) -> None:
    out = tmp_path / "out"
    prices = [str(40000 + (k * 37) % 900) for k in range(300)]
    holding(tmp_path, prices, BuyThenSell(), out=out)
    check = _drawn(out / "report.html", tmp_path / "profile")
    # price, equity, P/L per trade and position, each a canvas with something painted
    assert check == {"data-charts": "4", "data-charts-drawn": "4", "data-script-errors": "0"}
    page = (out / "report.html").as_uri()
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


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not found (make browser installs it)")
def test_bar_data_draws_candles_and_volume_in_a_real_browser(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(_bars(tmp_path / "bars.csv", 300), "BTCUSD", strategy=Flip(), out=out)
    page = (out / "report.html").read_text()
    assert _sources(page)["candles"] == 300 and "BTCUSD volume" in page
    check = _drawn(out / "report.html", tmp_path / "profile")
    # candles, volume, equity, P/L per trade, position
    assert check == {"data-charts": "5", "data-charts-drawn": "5", "data-script-errors": "0"}
