"""The compact timeline (engine/backtest/price_files.py, timeline.py): prices kept as
integers must read back as the very Decimals a list held, the tick rounding done in
integers must equal the Decimal one, a bar walked in one step must leave the same log as
a bar walked point by point, and a bar must cost under 200 bytes once loaded."""

from __future__ import annotations

import dataclasses
import random
import tracemalloc
from decimal import Decimal
from pathlib import Path

import pytest

from sandex.engine.backtest import load, run
from sandex.engine.backtest.price_files import Decimals, parts
from sandex.engine.backtest.timeline import ClosingBars, _ticks, merge
from tests.support.grid_strategy import Grid

TEXTS = [
    "42000.10",
    "0.5",
    ".5",
    "5.",
    "1e5",
    "1E-3",
    " 7 ",
    "1_000.5",
    "0",
    "123456789012345678",
    "0.000000001",
    "2.50000",
    "+3.25",
]


@pytest.mark.parametrize("text", TEXTS)
def test_a_decimal_read_as_integers_is_the_decimal_of_its_text(text: str) -> None:
    wanted = Decimal(text.strip())
    column = Decimals()
    column.add(*parts(text))
    column.append(wanted)
    for got in column:
        assert got.as_tuple() == wanted.as_tuple()  # same digits and exponent, not only ==


def test_a_loaded_bar_file_reads_back_exactly_as_decimals(tmp_path: Path) -> None:
    rng = random.Random(4)
    lines = ["timestamp,open,high,low,close,volume"]
    wanted = []
    for k in range(300):
        places = rng.choice([0, 1, 2, 5])
        low, o, c, h = sorted(rng.randint(10**places, 10 ** (places + 4)) for _ in range(4))
        o, c = (c, o) if rng.random() < 0.5 else (o, c)
        cells = [str(Decimal(v).scaleb(-places)) for v in (o, h, low, c)]
        volume = rng.choice(["", "0", "1.5", "12"])
        lines.append(f"{1704067200 + 60 * k}," + ",".join(cells) + f",{volume}")
        wanted.append([Decimal(t) for t in cells] + [Decimal(volume) if volume else None])
    path = tmp_path / "bars.csv"
    path.write_text("\n".join(lines) + "\n")
    bars = load(path, "BTCUSD")["BTCUSD"].bars
    assert len(bars) == len(wanted)
    for bar, want in zip(bars, wanted, strict=True):
        got = [bar.open, bar.high, bar.low, bar.close, bar.volume]
        assert [None if g is None else g.as_tuple() for g in got] == [
            None if w is None else w.as_tuple() for w in want
        ]
    batch = [bars.bar(k) for k in range(len(bars))]  # bars made in batches: the same
    assert [tuple(b) for b in batch] == [tuple(b) for b in bars]


@pytest.mark.parametrize("tick", ["0.25", "0.01", "5", "0.5", "0.00000001", "1"])
def test_ticks_in_integers_equal_the_decimal_rounding(tick: str) -> None:
    step = Decimal(tick)
    rng = random.Random(tick)
    prices = [
        Decimal(rng.randint(1, 10**9)).scaleb(-rng.randint(0, 9)) + step * rng.randint(1, 9)
        for _ in range(500)
    ]
    prices += [step * k + step / 2 for k in range(1, 20)]  # exact halves round up
    half = step / 2
    wanted = [int((p + half) // step) for p in prices]
    assert list(_ticks(Decimals(prices), step)) == wanted
    assert list(_ticks(prices, step)) == wanted


def test_the_prices_on_the_tick_read_as_the_list_did(tmp_path: Path) -> None:
    path = tmp_path / "trades.csv"
    path.write_text("timestamp,price\n1704067200,42000.13\n1704067201,41999.87\n")
    series = load(path, "BTCUSD")
    _, _, prices, _, _, _ = merge(series, [Decimal("0.25")])
    assert list(prices) == [Decimal("42000.25"), Decimal("41999.75")]
    assert [prices[0], prices[1]] == list(prices) and prices[-1] == Decimal("41999.75")
    assert str(prices[0]) == str(168001 * Decimal("0.25")) == "42000.25"


def test_a_bar_walked_in_one_step_leaves_the_log_of_a_bar_walked_point_by_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = Path(__file__).parents[2] / "scenarios" / "backtests" / "btcusd_hourly.csv"
    fast = run(data, "BTCUSD", strategy=Grid(), deposits={"USD": "100000"}, progress=False)
    monkeypatch.setattr(ClosingBars, "one_market_of_bars", lambda self: False)
    slow = run(data, "BTCUSD", strategy=Grid(), deposits={"USD": "100000"}, progress=False)
    assert fast.summary["executions"] > 10  # the walk met resting orders
    assert fast.log_hash == slow.log_hash
    assert fast.summary == slow.summary


def test_a_loaded_bar_and_its_points_take_under_200_bytes(tmp_path: Path) -> None:
    n = 20_000
    path = tmp_path / "bars.csv"
    with path.open("w") as f:
        f.write("timestamp,open,high,low,close,volume\n")
        for k in range(n):
            p = 40000 + (k * 37) % 1000
            f.write(f"{1704067200 + 3600 * k},{p}.50,{p + 9}.25,{p - 8}.75,{p + 1}.00,3.5\n")
    tracemalloc.start()
    try:
        series = load(path, "BTCUSD")
        timeline = merge(series, [Decimal("0.25")])
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(timeline[0]) == 4 * n
    assert held / n < 200, f"{held / n:.0f} bytes per bar"


def test_the_figures_of_the_compact_timeline_are_those_of_lists() -> None:
    data = Path(__file__).parents[2] / "scenarios" / "backtests" / "btcusd_hourly.csv"
    compact = run(data, "BTCUSD", strategy=Grid(), deposits={"USD": "100000"}, progress=False)
    listed = dataclasses.replace(
        compact,
        times=list(compact.times),
        mks=list(compact.mks),
        prices=list(compact.prices),
        ohlc=list(compact.ohlc),
    )
    assert compact.summary["trades"]["count"] > 3
    assert compact.summary == listed.summary
    assert compact.raw_equity == listed.raw_equity
    assert compact.equity == listed.equity
