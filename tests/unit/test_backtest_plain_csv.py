"""Plain CSV files are read with numpy (engine/backtest/price_files.py, `_plain_csv`):
the same times, exact prices (coefficient and exponent) and bars as the row reader,
and anything not plain left to the row reader, which reads it or names the fault."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from sandex.engine.backtest import price_files
from sandex.engine.backtest.price_files import MarketDataError, load


def _row_reader(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, price_files.Series]:
    with monkeypatch.context() as m:
        m.setattr(price_files, "_plain_csv", lambda *args: None)
        return load(path, "BTCUSD")


def _exact(series: price_files.Series) -> tuple[object, ...]:
    """Everything a run reads of a series, prices as text (exponents count)."""
    bars = [tuple(map(str, b)) for b in series.bars]
    return series.kind, list(series.times), [str(p) for p in series.prices], bars


def _stamp(t: int, form: str, rng: random.Random) -> str:
    if form == "s":
        return str(t)
    if form == "ms":
        return str(t * 1000 + 7)
    if form == "offset":
        zone = timezone(timedelta(minutes=rng.choice([0, 60, -330, 600])))
        return datetime.fromtimestamp(t, zone).isoformat()
    sep = "T" if form == "Z" else " "
    return datetime.fromtimestamp(t, UTC).strftime(f"%Y-%m-%d{sep}%H:%M:%SZ")


def _file(folder: Path, seed: int) -> Path:
    rng = random.Random(seed)
    bars = seed % 2 == 0
    form = ["Z", "space", "offset", "s", "ms"][seed % 5]
    header = (
        rng.choice(["timestamp,open,high,low,close,volume", "Time,Open,High,Low,Close"])
        if bars
        else rng.choice(["timestamp,price", "timestamp,price,amount", "price,time"])
    )
    names = [n.lower() for n in header.split(",")]
    t = rng.randint(0, 2_000_000_000)
    lines = [header]
    for _ in range(rng.randint(1, 200)):
        t += rng.choice([3600, 60, 86_400 * 31]) if bars else rng.choice([0, 1, 60])
        places = rng.choice([0, 1, 2, 4, 8])
        prices = sorted(round(rng.uniform(0.01, 90_000), places) for _ in range(4))
        o, c = rng.sample(prices[1:3], 2)
        cells = {
            "timestamp": _stamp(t, form, rng),
            "time": _stamp(t, form, rng),
            "open": f"{o:.{places}f}",
            "high": f"{prices[3]:.{places}f}",
            "low": f"{prices[0]:.{rng.choice([places, 8])}f}",
            "close": f"{c:.{places}f}",
            "volume": rng.choice(["", f"{rng.uniform(0, 50):.4f}", "7"]),
            "price": f"{rng.uniform(0.01, 90_000):.{places}f}",
            "amount": "0.5",
        }
        lines.append(",".join(cells[n] for n in names))
    newline = rng.choice(["\n", "\r\n"])
    path = folder / f"data_{seed}.csv"
    path.write_text(newline.join(lines) + rng.choice(["", newline]))
    return path


@pytest.mark.parametrize("seed", range(40))
def test_a_plain_file_reads_as_the_row_reader_reads_it(
    tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path, seed)
    plain = price_files._plain_csv(path, "BTCUSD", None)
    assert plain is not None, "a plain file is read with numpy"
    rows = _row_reader(path, monkeypatch)
    assert _exact(plain["BTCUSD"]) == _exact(rows["BTCUSD"])
    assert _exact(load(path, "BTCUSD")["BTCUSD"]) == _exact(rows["BTCUSD"])


@pytest.mark.parametrize(
    "row",
    [
        "2024-01-01T01:00:00Z,100,101,99,1e2,1",  # an exponent
        "2024-01-01T01:00:00Z,100,101,99,-100,1",  # a sign
        "2024-01-01T01:00:00Z,100,101,99,100.,1",  # a dot last
        "2024-01-01T01:00:00Z,100,101,99, 100,1",  # a space
        '2024-01-01T01:00:00Z,100,101,99,"100",1',  # quoted
        "2024-01-01T01:00:00Z,100,101,99,100",  # a cell short
        "2024-01-01T01:00:00Z,100,101,99,102,1",  # close above high
        "2024-01-01T01:00:00Z,0,0,0,0,1",  # zero
        "2024-01-01T00:00:00Z,100,101,99,100,1",  # the same time again
        "2024-02-30T00:00:00Z,100,101,99,100,1",  # no such day
        "2024-01-01T24:00:00Z,100,101,99,100,1",  # no such hour
        "2024-01-01T01:00:00,100,101,99,100,1",  # no offset
        "2024-01-01T01:00:00Z,1234567890123456789,1234567890123456789,99,100,1",
    ],
)
def test_what_is_not_plain_goes_to_the_row_reader(
    tmp_path: Path, row: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bars.csv"
    path.write_text(
        f"timestamp,open,high,low,close,volume\n2024-01-01T00:00:00Z,100,101,99,100,1\n{row}\n"
    )
    assert price_files._plain_csv(path, "BTCUSD", None) is None
    try:
        expected: object = _exact(_row_reader(path, monkeypatch)["BTCUSD"])
    except MarketDataError as exc:
        expected = str(exc)
    try:
        got: object = _exact(load(path, "BTCUSD")["BTCUSD"])
    except MarketDataError as exc:
        got = str(exc)
    assert got == expected


def test_a_long_file_is_read_in_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(price_files, "_BLOCK", 100)  # lines cut across blocks
    path = _file(tmp_path, 2)
    rows = _row_reader(path, monkeypatch)
    plain = price_files._plain_csv(path, "BTCUSD", None)
    assert plain is not None
    assert _exact(plain["BTCUSD"]) == _exact(rows["BTCUSD"])
