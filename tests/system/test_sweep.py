"""Sweeps: a grid gives the same rows, log hashes included, run one after another, in
joblib's processes or on a 2-worker Dask cluster of processes; a failed combination is a
row with its error; an Optuna search with a seed asks the same trials every time and on
any executor; a Dask cluster is reached by its address; `sandex sweep` writes sweep.csv and a self-contained heatmap."""

from __future__ import annotations

import csv
import json
import math
import random
import re
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from sandex.api_adapter.cli import main
from sandex.engine.backtest import BacktestError, Search, SweepResult, SweepRow, sweep
from sandex.engine.tools.time_travel import log_hash

ROOT = Path(__file__).resolve().parents[2]
CROSS = f"{ROOT / 'tests/support/sweep_strategy.py'}:Cross"
T0 = 1_704_067_200


@pytest.fixture(scope="module")
def bars(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 hourly bars of a seeded random walk with a swing: crosses both ways."""
    path = tmp_path_factory.mktemp("sweep") / "bars.csv"
    rng = random.Random(17)
    p = 100.0
    lines = ["timestamp,open,high,low,close"]
    for k in range(120):
        o = p
        c = o * math.exp(0.01 * math.sin(k / 6) + rng.gauss(0, 0.006))
        h, low = max(o, c) * 1.002, min(o, c) * 0.998
        ts = datetime.fromtimestamp(T0 + 3600 * k, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        lines.append(f"{ts},{o:.2f},{h:.2f},{low:.2f},{c:.2f}")
        p = c
    path.write_text("\n".join(lines) + "\n")
    return path


GRID = {"fast": "2,3", "boom": "0,50"}


def test_every_executor_gives_the_same_rows(bars: Path) -> None:
    serial = sweep(CROSS, bars, "BTCUSD", grid=GRID, executor="serial").rows
    assert [r.params for r in serial] == [
        {"fast": 2, "boom": 0},
        {"fast": 2, "boom": 50},
        {"fast": 3, "boom": 0},
        {"fast": 3, "boom": 50},
    ]
    good = [r for r in serial if not r.error]
    assert len(good) == 2 and all(r.log_hash and r.log_hash.startswith("sha256:") for r in good)
    assert good[0].log_hash != good[1].log_hash  # the parameter reached the run
    for failed in (serial[1], serial[3]):
        assert failed.error == "RuntimeError: boom at bar 51" and failed.log_hash is None
    assert sweep(CROSS, bars, "BTCUSD", grid=GRID, executor="joblib", n_jobs=2).rows == serial
    assert sweep(CROSS, bars, "BTCUSD", grid=GRID, executor="dask", n_jobs=2).rows == serial


def test_a_run_keeps_its_log_only_when_asked(bars: Path, tmp_path: Path) -> None:
    result = sweep(
        CROSS,
        bars,
        "BTCUSD",
        grid={"slow": "6:8:2"},
        params={"fast": "2"},
        executor="serial",
        db_dir=tmp_path / "logs",
        out=tmp_path / "out",
    )
    kept = sorted((tmp_path / "logs").glob("*.db"))
    assert [p.name for p in kept] == ["0001.db", "0002.db"]
    assert [log_hash(p) for p in kept] == [r.log_hash for r in result.rows]
    with (tmp_path / "out" / "sweep.csv").open() as f:
        table = list(csv.reader(f))
    assert table[0] == [
        "slow",
        "fast",
        "return_pct",
        "sharpe",
        "max_drawdown_pct",
        "trades",
        "log_hash",
        "error",
    ]
    assert [row[:2] for row in table[1:]] == [["6", "2"], ["8", "2"]]
    assert [row[6] for row in table[1:]] == [r.log_hash for r in result.rows]
    assert not (tmp_path / "out" / "heatmap.html").exists()  # one parameter swept


def test_an_optuna_search_with_a_seed_asks_the_same_trials(bars: Path) -> None:
    search = Search(trials=5, ranges={"fast": "2:5", "invest": "0.5:0.9"}, seed=7, batch=2)
    first = sweep(CROSS, bars, "BTCUSD", search=search, executor="serial").rows
    again = sweep(CROSS, bars, "BTCUSD", search=search, executor="joblib", n_jobs=2).rows
    assert len(first) == 5 and first == again
    for row in first:
        assert 2 <= row.params["fast"] <= 5 and isinstance(row.params["fast"], int)
        invest = row.params["invest"]
        assert isinstance(invest, Decimal) and Decimal("0.5") <= invest <= Decimal("0.9")
        assert invest == invest.quantize(Decimal("0.1"))  # on the range's step, no float
    other = sweep(
        CROSS,
        bars,
        "BTCUSD",
        search=Search(trials=5, ranges=search.ranges, seed=8, batch=2),
        executor="serial",
    ).rows
    assert [r.params for r in other] != [r.params for r in first]


@pytest.mark.slow  # a cluster of its own: a few seconds more
def test_a_cluster_reached_by_its_address(bars: Path) -> None:
    """As `--scheduler tcp://host:port` does: the sweep's client connects, runs, and
    leaves the cluster up (it is not the sweep's to close)."""
    from distributed import LocalCluster

    serial = sweep(CROSS, bars, "BTCUSD", grid=GRID, executor="serial").rows
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://")
        rows = sweep(CROSS, bars, "BTCUSD", grid=GRID, executor="dask", scheduler=address).rows
        assert rows == serial
        assert len(cluster.scheduler_info["workers"]) == 2  # still up


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({}, "exactly one of a grid and an Optuna search"),
        ({"grid": {"speed": "1,2"}}, "parameter speed: Cross has no such parameter"),
        ({"grid": {"fast": "2:1"}}, "high is below low"),
        ({"grid": {"fast": "1.5,2"}}, "parameter fast='1.5': not an integer"),
        ({"grid": {"fast": "2,3"}, "params": {"fast": 2}}, "fast is both fixed and swept"),
        ({"grid": {"fast": "2,3", "slow": "5,6"}, "heatmap": ["fast", "boom"]}, "not swept"),
        ({"grid": {"fast": "2,3"}, "metric": "pnl"}, "metric 'pnl'"),
        ({"grid": {"fast": "2,3"}, "executor": "pool"}, "executor 'pool'"),
        ({"search": Search(trials=2)}, "at least one range"),
        ({"grid": {"fast": "2,3"}, "market": "BTCXYZ"}, "market BTCXYZ is not a sandex market"),
        ({"grid": {"fast": "2,3"}, "data": None}, "no price data"),
        ({"search": Search(trials=2, ranges={"invest": "x:1"})}, "invest='x': not a number"),
    ],
)
def test_a_sweep_that_cannot_be_made_is_refused_before_any_run(
    bars: Path, kwargs: dict[str, object], said: str
) -> None:
    with pytest.raises(BacktestError, match=said):
        sweep(CROSS, **{"data": bars, "market": "BTCUSD", **kwargs})  # type: ignore[arg-type]


def test_command_line(bars: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["sweep", "--data", str(bars), "--market", "BTCUSD", "--strategy", CROSS]
    base += ["--executor", "serial"]

    def sandex(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "sandex.api_adapter.cli", *base, *args]
        return subprocess.run(command, capture_output=True, text=True, cwd=ROOT)

    out = tmp_path / "grid"
    done = sandex(
        "--grid", "fast=2,3", "--grid", "slow=6:8:2", "--param", "invest=0.5", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("4 runs, 0 failed")
    with (out / "sweep.csv").open() as f:
        table = list(csv.DictReader(f))
    assert [(r["fast"], r["slow"], r["invest"]) for r in table] == [
        ("2", "6", "0.5"),
        ("2", "8", "0.5"),
        ("3", "6", "0.5"),
        ("3", "8", "0.5"),
    ]
    page = (out / "heatmap.html").read_text()
    assert "Bokeh" in page and "<script src=" not in page  # self-contained: scripts inline
    # refusals, in this process (no run starts)
    with pytest.raises(SystemExit):
        main([*base, "--grid", "fast=2,3"])
    assert "--out" in capsys.readouterr().err
    for args, said in [
        (["--out", str(out)], "give --grid NAME=VALUES, or --optuna N"),
        (["--grid", "fast", "--out", str(out)], "--grid 'fast': write NAME=A,B,C"),
        (["--grid", "fast=2,3", "--range", "slow=2:3", "--out", str(out)], "--range is for"),
        (["--optuna", "2", "--range", "fats=2:3", "--out", str(out)], "parameter fats"),
        (["--grid", "fast=2,3", "--heatmap", "fast,slow", "--out", str(out)], "not swept"),
    ]:
        assert main([*base, *args]) == 2
        assert said in capsys.readouterr().err


def test_the_table_the_best_row_and_the_heatmap_of_given_rows(tmp_path: Path) -> None:
    rows = [
        SweepRow({"fast": 2, "slow": 6, "on": True}, sharpe="0.5", trades=3, log_hash="sha256:a"),
        SweepRow({"fast": 2, "slow": 6, "on": False}, sharpe="1.25", trades=4, log_hash="sha256:b"),
        SweepRow({"fast": 3, "slow": 6, "on": True}, error="RuntimeError: boom"),
        SweepRow({"fast": 3, "slow": 8, "on": True}, sharpe="-0.75", log_hash="sha256:c"),
        SweepRow({"fast": 2, "slow": 8, "on": True}, log_hash="sha256:d"),  # no Sharpe: no variance
    ]
    result = SweepResult(["fast", "slow", "on"], rows, "sharpe", True)
    assert result.best == rows[1] and result.errors == [rows[2]]
    assert SweepResult(["fast"], rows, "sharpe", False).best == rows[3]
    assert SweepResult(["fast"], rows[2:3]).best is None
    with result.write_csv(tmp_path / "sweep.csv").open() as f:
        table = list(csv.reader(f))
    assert table[2] == ["2", "6", "false", "", "1.25", "", "4", "sha256:b", ""]
    assert table[3][-1] == "RuntimeError: boom" and table[3][-2] == ""
    page = result.write_heatmap(tmp_path / "heatmap.html", "fast", "slow").read_text()
    # one cell per (fast, slow): the best over `on` (1.25, not 0.5); no value: "-"
    data = re.search(r'\["x",(\[[^\]]*\])\],\["y",(\[[^\]]*\])\].*?\["label",(\[[^\]]*\])\]', page)
    assert data is not None
    x, y, label = (json.loads(data.group(k)) for k in (1, 2, 3))
    assert sorted(zip(x, y, label, strict=True)) == [
        ("2", "6", "1.25"),
        ("2", "8", "-"),
        ("3", "6", "-"),
        ("3", "8", "-0.75"),
    ]
    assert "<script src=" not in page
