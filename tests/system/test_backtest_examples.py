"""The examples in scenarios/backtests run, through the Python API and the CLI, and do
what their files say."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

from sandex.api_adapter.cli import main
from sandex.engine.backtest import run
from sandex.engine.tools.verify import verify

EXAMPLES = Path(__file__).resolve().parents[2] / "scenarios" / "backtests"


def test_moving_average_cross_trades_on_crosses(tmp_path: Path) -> None:
    result = run(
        EXAMPLES / "btcusd_hourly.csv",
        "BTCUSD",
        strategy=f"{EXAMPLES / 'ma_cross.py'}:MaCross",
        taker_fee="0.001",
        db=tmp_path / "ma.db",
        settings={"assert_invariants": True},
    )
    s = result.summary
    assert s["bars"] == 600 and s["points"] == 2400
    assert s["orders"]["by_type"] == {"MARKET": s["orders"]["total"]}
    assert s["orders"]["total"] >= 3 and set(s["orders"]["by_status"]) == {"FILLED"}
    sides = [e["side"] for e in result.executions]
    assert sides[0] == "BUY"
    fees = sum((Decimal(f.view["commission"]) for f in result.fills), Decimal(0))
    assert fees == Decimal(s["fees"])  # exact: the page rounds, the files do not
    assert verify(str(tmp_path / "ma.db")) == []


def test_grid_of_limits_fills_both_ways_and_comes_down(tmp_path: Path) -> None:
    result = run(None, flow=EXAMPLES / "grid.yaml", settings={"assert_invariants": True})
    s = result.summary
    assert s["markets"] == ["ETHUSD"]
    assert s["orders"]["total"] == 8 and s["errors"] == []
    sides = {e["side"] for e in result.executions}
    assert sides == {"BUY", "SELL"}
    assert all(e["liquidity"] == "MAKER" for e in result.executions)
    # a maker fills at its own limit, never worse
    for e in result.executions:
        assert e["price"] in {
            "2220.00",
            "2240.00",
            "2260.00",
            "2280.00",
            "2320.00",
            "2340.00",
            "2360.00",
            "2380.00",
        }
    assert s["settings"]["maker_fee_rate"] == "0.0002"


def test_stop_loss_flow_expires_the_take_profit_and_stops_out(tmp_path: Path) -> None:
    result = run(None, flow=EXAMPLES / "stop_loss.yaml")
    s = result.summary
    assert s["orders"]["by_status"] == {"CANCELLED": 1, "FILLED": 2}
    stop = next(e for e in result.executions if e["order_type"] == "STOP_MARKET")
    assert stop["side"] == "SELL" and stop["amount"] == "0.50000000"
    # The data are trades: the print at 12:28 (43986.75) is the first under the stop, and
    # the stop fills at that print's bid, half the 10 bps spread under it: floor(175947
    # ticks x 0.9995) = 175859 ticks of 0.25 = 43964.75. Its slippage is against the
    # reference at the fill, 22 / 43986.75 = 5.0015 bps (5.00 at two places), not the
    # loss since the order.
    assert stop["executed_at"] == "2024-02-02T12:28:00.000000Z"
    assert (stop["reference_price"], stop["price"]) == ("43986.75", "43964.75")
    assert stop["slippage_bps"] == "5.00"
    assert s["final_balances"]["BTC"]["available"] != "0"


def test_cli_writes_the_report_and_stays_quiet_without_a_terminal(tmp_path: Path) -> None:
    out = tmp_path / "report"
    db = tmp_path / "bt.db"
    env = {**os.environ, "CI": "true"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sandex.api_adapter.cli",
            "backtest",
            "--flow",
            str(EXAMPLES / "stop_loss.yaml"),
            "--deposit",
            "USD=60000",
            "--out",
            str(out),
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "log sha256:" in done.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "equity.csv",
        "executions.csv",
        "report.html",
        "summary.json",
        "trades.csv",
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["starting_balances"] == {"USD": "60000"}
    with (out / "executions.csv").open() as f:
        assert len(list(csv.DictReader(f))) == summary["executions"]
    assert main(["verify", "--db", str(db)]) == 0
    then = tmp_path / "then.db"
    assert (
        main(["time-travel", "--db", str(db), "--until", summary["start"], "--out", str(then)]) == 0
    )
    assert main(["verify", "--db", str(then)]) == 0


def test_cli_names_the_bad_line_of_a_data_file(tmp_path: Path, capsys: object) -> None:
    data = tmp_path / "bad.csv"
    data.write_text("timestamp,price\n1704067200,42000\n1704067260,\n")
    code = main(
        [
            "backtest",
            "--data",
            str(data),
            "--market",
            "BTCUSD",
            "--strategy",
            f"{EXAMPLES / 'ma_cross.py'}:MaCross",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert f"{data}:3:" in err
