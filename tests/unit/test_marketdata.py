"""Market data files: trades and bars, timestamps in three forms, the bar rule, and
errors that name the line."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from sandex.engine.backtest.price_files import MarketDataError, from_micros, load, parquet_available

T0 = 1_704_067_200  # 2024-01-01T00:00:00Z


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_trades_with_rfc3339_times_read_prices_as_exact_decimals(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "timestamp,price,amount\n"
        "2024-01-01T00:00:00Z,42000.10,0.5\n"
        "2024-01-01T01:00:00.5+01:00,42000.3,1\n",
    )
    s = load(path, "BTCUSD")["BTCUSD"]
    assert s.kind == "trades"
    assert s.prices == [Decimal("42000.10"), Decimal("42000.3")]
    assert all(isinstance(p, Decimal) for p in s.prices)
    assert from_micros(s.times[1]).isoformat() == "2024-01-01T00:00:00.500000+00:00"


def test_unix_seconds_and_milliseconds_are_told_apart_by_size(tmp_path: Path) -> None:
    path = write(tmp_path, f"time,price\n{T0},1\n{(T0 + 1) * 1000},2\n{T0 + 2}.25,3\n")
    s = load(path, "BTCUSD")["BTCUSD"]
    assert s.times == [T0 * 10**6, (T0 + 1) * 10**6, (T0 + 2) * 10**6 + 250_000]


def test_a_bar_closing_up_goes_open_low_high_close_and_down_open_high_low_close(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "timestamp,open,high,low,close,volume\n"
        f"{T0},100,110,95,105,7\n"  # up
        f"{T0 + 3600},105,108,90,92,3\n",  # down
    )
    s = load(path, "BTCUSD")["BTCUSD"]
    assert s.kind == "bars"
    assert s.prices == [Decimal(p) for p in ("100", "95", "110", "105", "105", "108", "90", "92")]
    # the open at the bar's time; both extremes and the close at its last microsecond
    last = 3600 * 10**6 - 1
    assert [t - s.times[0] for t in s.times[:4]] == [0, last, last, last]
    assert s.times[4] == (T0 + 3600) * 10**6
    assert list(s.closes) == [3, 7]  # a range: bar k closes at point 4k + 3
    assert s.bars[1].close == Decimal(92) and s.bars[0].volume == Decimal(7)


def test_a_quiet_bar_has_zero_volume(tmp_path: Path) -> None:
    path = write(
        tmp_path, f"timestamp,open,high,low,close,volume\n{T0},1,1,1,1,0\n{T0 + 60},1,1,1,1,0.00\n"
    )
    assert [b.volume for b in load(path, "BTCUSD")["BTCUSD"].bars] == [0, 0]
    bad = write(tmp_path, f"timestamp,open,high,low,close,volume\n{T0},1,1,1,1,-1\n", "bad.csv")
    with pytest.raises(MarketDataError, match="bad.csv:2: volume '-1' must be zero or more"):
        load(bad, "BTCUSD")


def test_bar_length_can_be_given(tmp_path: Path) -> None:
    path = write(tmp_path, f"timestamp,open,high,low,close\n{T0},1,2,1,2\n")
    s = load(path, "BTCUSD", bar_seconds=60)["BTCUSD"]
    assert s.times[-1] - s.times[0] == 60 * 10**6 - 1


def test_a_market_column_splits_the_file_or_selects_one_market(tmp_path: Path) -> None:
    text = f"market,timestamp,price\nBTCUSD,{T0},42000\nETHUSD,{T0},2300\nBTCUSD,{T0 + 1},42001\n"
    path = write(tmp_path, text)
    both = load(path)
    assert sorted(both) == ["BTCUSD", "ETHUSD"]
    assert len(both["BTCUSD"]) == 2
    assert list(load(path, "ETHUSD")) == ["ETHUSD"]


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        (f"timestamp,price\n{T0},1\n{T0 + 1},abc\n", ":3:", "not a number"),
        (f"timestamp,price\n{T0},1\n{T0 + 1},-5\n", ":3:", "positive"),
        ("timestamp,price\n2024-01-01T00:00:00,1\n", ":2:", "no UTC offset"),
        ("timestamp,price\nyesterday,1\n", ":2:", "neither RFC 3339"),
        (f"timestamp,price\n{T0 + 5},1\n{T0},2\n", ":3:", "backwards"),
        (f"timestamp,open,high,low,close\n{T0},10,9,8,9\n", ":2:", "inconsistent"),
        (f"timestamp,open,high,close\n{T0},1,1,1\n", ":1:", "missing low"),
        ("when,price\n1,2\n", ":1:", "no timestamp column"),
        ("timestamp,amount\n1,2\n", ":1:", "needs price"),
        ("", "", "empty file"),
    ],
)
def test_a_bad_file_names_the_line_and_the_fault(
    tmp_path: Path, text: str, where: str, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(MarketDataError) as caught:
        load(path, "BTCUSD")
    message = str(caught.value)
    assert str(path) + where in message
    assert words in message


def test_without_a_market_column_the_market_must_be_named(tmp_path: Path) -> None:
    path = write(tmp_path, f"timestamp,price\n{T0},1\n")
    with pytest.raises(MarketDataError, match=r"data.csv:2: no market column"):
        load(path)


@pytest.mark.skipif(not parquet_available(), reason="pyarrow is not installed")
def test_parquet_files_read_like_csv(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"timestamp": [T0 * 1000, (T0 + 1) * 1000], "price": ["42000.5", "42001"]})
    pq.write_table(table, tmp_path / "p.parquet")
    s = load(tmp_path / "p.parquet", "BTCUSD")["BTCUSD"]
    assert s.prices == [Decimal("42000.5"), Decimal("42001")]
    assert s.times[1] - s.times[0] == 10**6
