"""Market data files for backtests: trades or ticks, or OHLCV bars, as reference paths.

A file is CSV (always) or Parquet (when pyarrow is installed). Its header names the
columns, in any order and case:

- trades or ticks: `timestamp, price[, amount]`
- bars: `timestamp, open, high, low, close[, volume]`
- either may carry a `market` column; without one, the file is one market's.

A timestamp is RFC 3339 with an offset (`2024-01-01T00:00:00Z`) or a unix time: a
number below 100,000,000,000 is seconds, above it milliseconds (the two ranges meet
in 1973 and in the year 5138). Prices are read straight into `Decimal`.

A bar becomes four reference points: its open at the bar's time, then, at the bar's last
microsecond, the extreme it reached first, the other extreme and the close, all three at
one instant (a strategy runs between instants, never inside one: docs/backtests.md, "The
bar model"). A bar that closes up (or flat) went open -> low -> high -> close; one that
closes down went open -> high -> low -> close. The bar's length is the shortest gap
between two bars of the file, or `bar_seconds`.

Anything wrong in a file is a `MarketDataError` naming the file and the line (CSV) or
row (Parquet).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple

from engine.kernel.clock import EPOCH

_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")
MILLIS_FROM = 100_000_000_000
_US = timedelta(microseconds=1)
BAR_COLUMNS = ("open", "high", "low", "close")
_ALIASES = {"time": "timestamp", "size": "amount", "qty": "amount", "symbol": "market"}


class MarketDataError(ValueError):
    """A data file that cannot be used: the message says where and why."""


class Bar(NamedTuple):
    """One OHLCV bar; immutable (a named tuple: a bar file holds many, and a frozen
    dataclass took several times as long to build)."""

    time: datetime
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal
    volume: Decimal | None


@dataclass
class Series:
    """One market's reference path: times in microseconds since the epoch, prices.

    For bar data, `bars[k]` closes at point `closes[k]`."""

    market: str
    kind: str  # "trades" or "bars"
    times: list[int] = field(default_factory=list)
    prices: list[Decimal] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    closes: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.times)


def to_micros(t: datetime) -> int:
    return (t - EPOCH) // _US


def from_micros(us: int) -> datetime:
    return EPOCH + timedelta(0, 0, us)  # positional: keywords cost half again


def parse_timestamp(text: str) -> int:
    """Microseconds since the epoch of an RFC 3339 time or a unix time in s or ms."""
    if text.isdigit():
        whole = int(text)
        return whole * 1000 if whole >= MILLIS_FROM else whole * 1_000_000
    try:  # the common case, an RFC 3339 time as written (Z accepted since Python 3.11)
        quick = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        if quick.tzinfo is not None:
            return (quick - EPOCH) // _US
    value = text.strip()
    if _NUMBER.match(value):
        number = Decimal(value)
        scale = 1000 if number >= MILLIS_FROM else 1_000_000
        return int(number * scale)
    if not value:
        raise ValueError("empty timestamp")
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"timestamp {text!r} is neither RFC 3339 nor a unix time in seconds or ms"
        ) from None
    if t.tzinfo is None:
        raise ValueError(f"timestamp {text!r} has no UTC offset (add Z for UTC)")
    return to_micros(t.astimezone(UTC))


def _price(text: Any, name: str) -> Decimal:
    if isinstance(text, float):
        text = repr(text)
    try:
        value = text if isinstance(text, Decimal) else Decimal(str(text).strip())
    except InvalidOperation:
        raise ValueError(f"{name} {text!r} is not a number") from None
    if not value.is_finite() or value <= 0:
        raise ValueError(f"{name} {text!r} must be a positive number")
    return value


def _volume(text: Any) -> Decimal:
    """A bar's volume: zero is a quiet bar, not a fault."""
    try:
        value = Decimal(repr(text) if isinstance(text, float) else str(text).strip())
    except InvalidOperation:
        raise ValueError(f"volume {text!r} is not a number") from None
    if not value.is_finite() or value < 0:
        raise ValueError(f"volume {text!r} must be zero or more")
    return value


def _columns(header: list[str], where: str) -> dict[str, int]:
    names = [_ALIASES.get(h.strip().lower(), h.strip().lower()) for h in header]
    found = {n: i for i, n in enumerate(names) if n}
    if len(found) != len([n for n in names if n]):
        raise MarketDataError(f"{where}: a column is named twice in the header")
    if "timestamp" not in found:
        raise MarketDataError(
            f"{where}: the header has no timestamp column (found: {', '.join(names)})"
        )
    bars = [c for c in BAR_COLUMNS if c in found]
    if bars and len(bars) != len(BAR_COLUMNS):
        missing = ", ".join(c for c in BAR_COLUMNS if c not in found)
        raise MarketDataError(f"{where}: bars need open, high, low and close; missing {missing}")
    if not bars and "price" not in found:
        raise MarketDataError(
            f"{where}: the header needs price (trades) or open, high, low, close (bars)"
        )
    if bars and "price" in found:
        raise MarketDataError(f"{where}: a file holds trades (price) or bars (open...), not both")
    return found


class _Builder:
    """Rows into series, checking each as it comes."""

    def __init__(self, source: str, market: str | None, bar_seconds: float | None) -> None:
        self.source = source
        self.market = market
        self.bar_seconds = bar_seconds
        self.rows: dict[str, list[tuple[int, Any]]] = {}
        self.kind = ""

    def add_rows(
        self,
        rows: Iterable[tuple[int, list[Any]]],
        where_of: Callable[[int], str],
        cols: dict[str, int],
        text: bool,
    ) -> None:
        """Every row after the header. The common rows, trades or bars of a one-market
        CSV file that check out, are kept on a short path; any other row (the first,
        a blank one, one with a fault to name) goes through `add`."""
        add = self.add
        short = text and "market" not in cols
        at = cols["timestamp"]
        price_at = cols.get("price", -1)
        o_at, h_at, l_at, c_at = (cols.get(name, -1) for name in BAR_COLUMNS)
        v_at = cols.get("volume")
        width = len(cols)
        kept: list[tuple[int, Any]] | None = None
        trades = False
        for n, row in rows:
            if kept is not None:
                if trades:
                    if len(row) == width:
                        try:
                            t = parse_timestamp(row[at])
                            price = Decimal(row[price_at])
                        except (ValueError, InvalidOperation):
                            pass
                        else:
                            if price.is_finite() and price > 0 and t >= kept[-1][0]:
                                kept.append((t, price))
                                continue
                elif len(row) >= 5:
                    try:
                        t = parse_timestamp(row[at])
                        o = Decimal(row[o_at])
                        h = Decimal(row[h_at])
                        low = Decimal(row[l_at])
                        c = Decimal(row[c_at])
                        volume = row[v_at] if v_at is not None else ""
                        v = Decimal(volume) if volume else None
                    except (ValueError, InvalidOperation, IndexError):
                        pass
                    else:
                        if (
                            0 < low <= o <= h
                            and low <= c <= h
                            and h.is_finite()
                            and t > kept[-1][0]
                            and (v is None or (v.is_finite() and v >= 0))
                        ):
                            kept.append((t, (o, h, low, c, v)))
                            continue
            first = row[0] if row else ""
            if isinstance(first, str) and not first.strip() and _blank(row):
                continue
            add(n, where_of, cols, row)
            if short and kept is None:
                kept = self.rows.get(self.market or "")
                trades = self.kind == "trades"

    def add(
        self, n: int, where_of: Callable[[int], str], cols: dict[str, int], row: list[Any]
    ) -> None:
        def cell(name: str) -> Any:
            i = cols.get(name)
            if i is None or i >= len(row):
                return None
            value = row[i]
            return value.strip() if isinstance(value, str) else value

        try:
            market = cell("market")
            if market in (None, ""):
                if self.market is None:
                    raise ValueError("no market column: name the market (--market)")
                market = self.market
            elif self.market is not None and market != self.market:
                return
            raw_time = cell("timestamp")
            if raw_time in (None, ""):
                raise ValueError("empty timestamp")
            t = _timestamp(raw_time)
            if "price" in cols:
                self.kind = "trades"
                value: Any = _price(cell("price"), "price")
            else:
                self.kind = "bars"
                o, h, low, c = (_price(cell(n), n) for n in BAR_COLUMNS)
                if not (low <= o <= h and low <= c <= h):
                    raise ValueError(
                        f"bar is inconsistent: low {low} <= open {o}, close {c} <= high {h}"
                        " does not hold"
                    )
                volume = cell("volume")
                value = (o, h, low, c, None if volume in (None, "") else _volume(volume))
        except ValueError as exc:
            raise MarketDataError(f"{where_of(n)}: {exc}") from None
        kept = self.rows.setdefault(str(market), [])
        if kept:
            last = kept[-1][0]
            if t < last or (t == last and self.kind == "bars"):
                raise MarketDataError(
                    f"{where_of(n)}: timestamp goes backwards for {market}"
                    + (" (bars must be strictly increasing)" if t == last else "")
                )
        kept.append((t, value))

    def series(self) -> dict[str, Series]:
        if not self.rows:
            wanted = f" for {self.market}" if self.market else ""
            raise MarketDataError(f"{self.source}: no data rows{wanted}")
        out = {}
        for market, rows in self.rows.items():
            s = Series(market, self.kind)
            if self.kind == "trades":
                s.times = [t for t, _ in rows]
                s.prices = [p for _, p in rows]
            else:
                _bars_to_points(s, rows, self.bar_seconds, self.source)
            out[market] = s
        return out


def _timestamp(raw: Any) -> int:
    if isinstance(raw, datetime):
        t = raw if raw.tzinfo is not None else raw.replace(tzinfo=UTC)
        return to_micros(t.astimezone(UTC))
    if isinstance(raw, int | float | Decimal) and not isinstance(raw, bool):
        raw = format(Decimal(str(raw)), "f")
    return parse_timestamp(str(raw))


def _bars_to_points(
    s: Series, rows: list[tuple[int, Any]], bar_seconds: float | None, source: str
) -> None:
    if bar_seconds is not None:
        length = int(Decimal(str(bar_seconds)) * 1_000_000)
    elif len(rows) > 1:
        length = min(b[0] - a[0] for a, b in zip(rows, rows[1:], strict=False))
    else:
        length = 60_000_000
    if length < 2:
        raise MarketDataError(f"{source}: a bar must last at least 2 microseconds")
    last = length - 1  # the bar's last microsecond: its path and close
    times, prices, bars = s.times, s.prices, s.bars
    make = tuple.__new__  # a Bar without its Python-level __new__: half the cost
    for t, (o, h, low, c, volume) in rows:
        if c >= o:
            prices += (o, low, h, c)
        else:
            prices += (o, h, low, c)
        close = t + last
        times += (t, close, close, close)
        bars.append(make(Bar, (EPOCH + timedelta(0, 0, t), o, h, low, c, volume)))
    s.closes += range(len(times) - 4 * len(rows) + 3, len(times), 4)


def _csv_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, row): the text naming the line is made only for a message."""
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        try:
            for row in reader:
                yield reader.line_num, row
        except UnicodeDecodeError:
            raise MarketDataError(f"{path}: not a CSV file (not UTF-8 text)") from None
        except csv.Error as exc:
            raise MarketDataError(f"{path}:{reader.line_num}: not CSV: {exc}") from None


def _parquet_rows(path: Path) -> Iterator[tuple[int, list[Any]]]:
    """(row number, row), the header as row 0."""
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many kinds for a bad file
        raise MarketDataError(f"{path}: not a readable Parquet file: {exc}") from None
    names = table.column_names
    yield 0, list(names)
    columns = [table.column(n).to_pylist() for n in names]
    for i in range(table.num_rows):
        yield i + 1, [c[i] for c in columns]


def _blank(row: list[Any]) -> bool:
    return all(isinstance(v, str) and not v.strip() for v in row)


def parquet_available() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def load(
    path: str | Path, market: str | None = None, bar_seconds: float | None = None
) -> dict[str, Series]:
    """Every market's series in a file (only `market`'s when the file has a market
    column and one is named)."""
    p = Path(path)
    if not p.exists():
        raise MarketDataError(f"{p}: no such file")
    if p.is_dir():
        raise MarketDataError(f"{p}: a directory, not a data file")
    rows: Iterable[tuple[int, list[Any]]]
    if p.suffix.lower() in (".parquet", ".pq"):
        if not parquet_available():
            raise MarketDataError(f"{p}: reading Parquet needs pyarrow (pip install pyarrow)")
        rows = _parquet_rows(p)

        def where(n: int) -> str:
            return f"{p}: row {n}" if n else f"{p}: header"
    else:
        rows = _csv_rows(p)

        def where(n: int) -> str:
            return f"{p}:{n}"

    builder = _Builder(str(p), market, bar_seconds)
    cols: dict[str, int] | None = None
    rows = iter(rows)
    for n, row in rows:
        # a row is blank when every cell is an empty string: its first cell tells most
        first = row[0] if row else ""
        if isinstance(first, str) and not first.strip() and _blank(row):
            continue
        if isinstance(first, str) and first.lstrip().startswith("#"):
            continue
        cols = _columns([str(v) for v in row], where(n))
        break
    if cols is None:
        raise MarketDataError(f"{p}: empty file (a header line and data rows are needed)")
    builder.add_rows(rows, where, cols, text=p.suffix.lower() not in (".parquet", ".pq"))
    return builder.series()


def load_many(
    paths: Iterable[str | Path], market: str | None = None, bar_seconds: float | None = None
) -> dict[str, Series]:
    """Series from several files; a market may come from one file only."""
    out: dict[str, Series] = {}
    for path in paths:
        for name, s in load(path, market, bar_seconds).items():
            if name in out:
                raise MarketDataError(f"{path}: market {name} is also in another file")
            out[name] = s
    return out


__all__ = [
    "Bar",
    "MarketDataError",
    "Series",
    "from_micros",
    "load",
    "load_many",
    "parquet_available",
    "parse_timestamp",
    "to_micros",
]
