"""Market data files for backtests: trades or ticks, or OHLCV bars, as reference paths.

A file is CSV (always) or Parquet (when pyarrow is installed). Its header names the
columns, in any order and case:

- trades or ticks: `timestamp, price[, amount]`
- bars: `timestamp, open, high, low, close[, volume]`
- either may carry a `market` column; without one, the file is one market's.

A timestamp is RFC 3339 with an offset (`2024-01-01T00:00:00Z`) or a unix time: a
number below 100,000,000,000 is seconds, above it milliseconds (the two ranges meet
in 1973 and in the year 5138). Prices are read exactly: kept as integer coefficients
and exponents (`Decimals`, 10 bytes a price), each a `Decimal` again when read.

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
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Context, Decimal, InvalidOperation, getcontext
from operator import mul as _times
from pathlib import Path
from typing import Any, NamedTuple, overload

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


# Reads of a column are exact whatever the caller's decimal context: a value's
# coefficient has at most 18 digits (int64), well inside this precision.
EXACT = Context(prec=40)
_MISSING = -(1 << 15)  # the exponent of a value that is not there (a bar's volume)
_UNITS: dict[int, Decimal] = {}
_BATCH = 4096  # bars made at once for a run that reads them in order


def unit(exp: int) -> Decimal:
    """1E`exp`, made once per exponent."""
    one = _UNITS.get(exp)
    if one is None:
        one = _UNITS[exp] = Decimal((0, (1,), exp))
    return one


def parts(text: str) -> tuple[int, int]:
    """(coefficient, exponent) of a decimal's text, exactly as `Decimal(text)` reads it;
    plain `digits[.digits]` without a Decimal, anything else through one."""
    whole, _, fraction = text.partition(".")
    if fraction.isdigit() or not fraction:
        try:
            return int(whole + fraction), -len(fraction)
        except ValueError:
            pass
    return decimal_parts(Decimal(text.strip()))


def decimal_parts(value: Decimal) -> tuple[int, int]:
    """(coefficient, exponent) of a finite Decimal."""
    sign, digits, exp = value.as_tuple()
    if not isinstance(exp, int):
        raise ValueError(f"{value} is not a finite number")
    coef = int("".join(map(str, digits)) or "0")
    return (-coef if sign else coef), exp


class Times(array):  # type: ignore[type-arg]
    """Times in microseconds, an `array('q')` (8 bytes a point) that also equals the
    list of the same numbers, as the lists it replaced did."""

    def __new__(cls, values: Any = ()) -> Times:
        return super().__new__(cls, "q", values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            return self.tolist() == other
        return super().__eq__(other)  # type: ignore[no-any-return]

    __hash__ = None  # type: ignore[assignment]


class Decimals(Sequence[Decimal]):
    """A column of exact decimals kept as int64 coefficients and int16 exponents: ten
    bytes a value where a list of Decimals takes about 110. A value is made into a
    Decimal (the same digits and exponent as read) only when it is read."""

    __slots__ = ("coefs", "exps")

    def __init__(self, values: Iterable[Decimal | None] = ()) -> None:
        self.coefs = array("q")
        self.exps = array("h")
        for value in values:
            self.append(value)

    def add(self, coef: int, exp: int) -> None:
        """Append a value by its parts; one that does not fit is refused (ValueError)."""
        if not -32_000 < exp < 32_000:
            raise ValueError(f"exponent {exp} is out of range")
        try:
            self.coefs.append(coef)
        except OverflowError:
            raise ValueError(f"{coef}E{exp} has more than 18 digits") from None
        self.exps.append(exp)

    def append(self, value: Decimal | None) -> None:
        if value is None:
            self.coefs.append(0)
            self.exps.append(_MISSING)
        else:
            self.add(*decimal_parts(value))

    def __len__(self) -> int:
        return len(self.coefs)

    @overload
    def __getitem__(self, i: int) -> Decimal: ...
    @overload
    def __getitem__(self, i: slice) -> list[Decimal]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        exp = self.exps[i]
        if exp == _MISSING:
            return None
        return EXACT.multiply(self.coefs[i], _UNITS.get(exp) or unit(exp))

    def __iter__(self) -> Iterator[Decimal]:
        return (self[k] for k in range(len(self.coefs)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Decimals({list(self)!r})"


class Bars(Sequence[Bar]):
    """A bar file's bars, kept as columns (`Decimals`, the times in an array): a `Bar`
    is made when one is read, so a million bars take ~60 bytes each, not ~700."""

    __slots__ = ("_made", "_made_from", "close", "down", "high", "low", "open", "times", "volume")

    def __init__(self) -> None:
        self.times = Times()  # each bar's start, in us
        self.open, self.high, self.low, self.close = (Decimals() for _ in range(4))
        self.volume = Decimals()
        self.down = bytearray()  # 1 where the bar closes under its open
        # the bars made last, from bar `_made_from` on: a run reads them in order
        self._made: list[Bar] = []
        self._made_from = 0

    def bar(self, k: int) -> Bar:
        """Bar `k` (k >= 0), made with the next ones in a batch: a run asks for each in turn."""
        j = k - self._made_from
        made = self._made
        if 0 <= j < len(made):
            return made[j]
        self._made = made = self._batch(k, min(k + _BATCH, len(self.times)))
        self._made_from = k
        return made[0]

    def _batch(self, start: int, end: int) -> list[Bar]:
        cols = (self.open, self.high, self.low, self.close)
        exps = set().union(*(c.exps[start:end] for c in cols))
        volumes = self.volume.exps[start:end]
        if len(exps) != 1 or getcontext().prec < 19 or min(volumes, default=0) == _MISSING:
            return [self[k] for k in range(start, end)]
        # One exponent for the prices, volumes all there: coefficient x 1E-exponent
        # (exact in any context of 19 digits or more, checked above) in one comprehension.
        one = unit(exps.pop())
        units = _UNITS
        new = tuple.__new__
        return [
            new(
                Bar,
                (
                    EPOCH + timedelta(0, 0, t),
                    o * one,
                    h * one,
                    low * one,
                    c * one,
                    v * (units.get(e) or unit(e)),
                ),
            )
            for t, o, h, low, c, v, e in zip(
                self.times[start:end],
                *(c.coefs[start:end] for c in cols),
                self.volume.coefs[start:end],
                volumes,
                strict=True,
            )
        ]

    def __len__(self) -> int:
        return len(self.times)

    @overload
    def __getitem__(self, k: int) -> Bar: ...
    @overload
    def __getitem__(self, k: slice) -> list[Bar]: ...
    def __getitem__(self, k: int | slice) -> Any:
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        # Made inline, as on_bar needs one per bar: coefficient x 1E-exponent is exact
        # in any context of 19 digits or more (18-digit coefficients), else in EXACT's.
        mul = _times if getcontext().prec >= 19 else EXACT.multiply
        units = _UNITS
        o, h, low, c, v = self.open, self.high, self.low, self.close, self.volume
        ve = v.exps[k]
        return tuple.__new__(  # a Bar without its Python-level __new__: half the cost
            Bar,
            (
                EPOCH + timedelta(0, 0, self.times[k]),
                mul(o.coefs[k], units.get(o.exps[k]) or unit(o.exps[k])),
                mul(h.coefs[k], units.get(h.exps[k]) or unit(h.exps[k])),
                mul(low.coefs[k], units.get(low.exps[k]) or unit(low.exps[k])),
                mul(c.coefs[k], units.get(c.exps[k]) or unit(c.exps[k])),
                None if ve == _MISSING else mul(v.coefs[k], units.get(ve) or unit(ve)),
            ),
        )

    def __iter__(self) -> Iterator[Bar]:
        return (self[k] for k in range(len(self.times)))

    def path(self, k: int) -> tuple[Decimals, Decimals, Decimals, Decimals]:
        """The columns of bar `k`'s four points in path order."""
        if self.down[k]:
            return self.open, self.high, self.low, self.close
        return self.open, self.low, self.high, self.close


class BarPoints(Sequence[Decimal]):
    """The prices of a bar file's points, four a bar in path order, read from its bars."""

    __slots__ = ("bars",)

    def __init__(self, bars: Bars) -> None:
        self.bars = bars

    def __len__(self) -> int:
        return 4 * len(self.bars)

    @overload
    def __getitem__(self, i: int) -> Decimal: ...
    @overload
    def __getitem__(self, i: slice) -> list[Decimal]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        k, slot = divmod(i, 4)
        return self.bars.path(k)[slot][k]

    def __iter__(self) -> Iterator[Decimal]:
        return (self[k] for k in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


@dataclass
class Series:
    """One market's reference path: times in microseconds since the epoch, prices.

    For bar data, `bars[k]` closes at point `closes[k]`. Loaded files hold compact
    columns (an array of times, `Decimals`, `Bars`); lists work as well."""

    market: str
    kind: str  # "trades" or "bars"
    times: Sequence[int] = field(default_factory=list)
    prices: Sequence[Decimal] = field(default_factory=list)
    bars: Sequence[Bar] = field(default_factory=list)
    closes: Sequence[int] = field(default_factory=list)

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
    """Rows into series, checking each as it comes; kept as columns from the start."""

    def __init__(self, source: str, market: str | None, bar_seconds: float | None) -> None:
        self.source = source
        self.market = market
        self.bar_seconds = bar_seconds
        self.trades: dict[str, tuple[array[int], Decimals]] = {}
        self.bars: dict[str, Bars] = {}
        self.kind = ""

    def add_rows(
        self,
        rows: Iterable[tuple[int, list[Any]]],
        where_of: Callable[[int], str],
        cols: dict[str, int],
        text: bool,
    ) -> None:
        """Every row after the header. The common rows, trades or bars of a one-market
        CSV file that check out, are kept on a short path (plain decimal text is read
        into integers, no Decimal made); any other row (the first, a blank one, one
        with a fault to name) goes through `add`."""
        add = self.add
        short = text and "market" not in cols
        at = cols["timestamp"]
        price_at = cols.get("price", -1)
        o_at, h_at, l_at, c_at = (cols.get(name, -1) for name in BAR_COLUMNS)
        v_at = cols.get("volume")
        width = len(cols)
        times: array[int] | None = None
        column = Decimals()
        bars = Bars()
        opens = highs = lows = closes = volumes = array("q")
        opens_e = highs_e = lows_e = closes_e = volumes_e = array("h")
        down = bytearray()
        trades = False
        for n, row in rows:
            if times is not None:
                if trades:
                    if len(row) == width:
                        try:
                            t = parse_timestamp(row[at])
                            coef, exp = parts(row[price_at])
                            if coef > 0 and t >= times[-1]:
                                column.add(coef, exp)
                                times.append(t)
                                continue
                        except (ValueError, ArithmeticError):
                            pass
                elif len(row) >= 5:
                    try:
                        t = parse_timestamp(row[at])
                        # plain `digits[.digits]` text, read as integers on one exponent
                        # (`parts`, inline: this is most of a bar file's reading)
                        o, _, fo = row[o_at].partition(".")
                        h, _, fh = row[h_at].partition(".")
                        low, _, fl = row[l_at].partition(".")
                        c, _, fc = row[c_at].partition(".")
                        oe = -len(fo)
                        fractions = fo + fh + fl + fc
                        if (fractions.isdigit() or not fractions) and (
                            oe == -len(fh) == -len(fl) == -len(fc) > -32_000
                        ):
                            o = int(o + fo)
                            h = int(h + fh)
                            low = int(low + fl)
                            c = int(c + fc)
                        else:
                            raise ValueError  # `add` reads it, or names its fault
                        volume = row[v_at] if v_at is not None else ""
                        v, ve = parts(volume) if volume else (0, _MISSING)
                        if (
                            (ve > -32_000 or not volume)
                            and 0 < low <= o <= h
                            and low <= c <= h
                            and v >= 0
                            and t > times[-1]
                        ):
                            # an int64 coefficient or int16 exponent that does not fit
                            # raises OverflowError: the row is undone and goes to `add`
                            opens.append(o)
                            highs.append(h)
                            lows.append(low)
                            closes.append(c)
                            volumes.append(v)
                            opens_e.append(oe)
                            highs_e.append(oe)
                            lows_e.append(oe)
                            closes_e.append(oe)
                            volumes_e.append(ve)
                            down.append(c < o)
                            times.append(t)
                            continue
                    except (ValueError, ArithmeticError, IndexError):
                        pass
                    _undo(bars, len(times))
            first = row[0] if row else ""
            if isinstance(first, str) and not first.strip() and _blank(row):
                continue
            add(n, where_of, cols, row)
            if short and times is None:
                name = self.market or ""
                trades = self.kind == "trades"
                if trades and name in self.trades:
                    times, column = self.trades[name]
                elif not trades and name in self.bars:
                    bars = self.bars[name]
                    times = bars.times
                    opens, highs, lows, closes, volumes = (
                        c.coefs for c in (bars.open, bars.high, bars.low, bars.close, bars.volume)
                    )
                    opens_e, highs_e, lows_e, closes_e, volumes_e = (
                        c.exps for c in (bars.open, bars.high, bars.low, bars.close, bars.volume)
                    )
                    down = bars.down

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
            market = str(market)
            raw_time = cell("timestamp")
            if raw_time in (None, ""):
                raise ValueError("empty timestamp")
            t = _timestamp(raw_time)
            if "price" in cols:
                self.kind = "trades"
                price = _price(cell("price"), "price")
                times, column = self.trades.setdefault(market, (Times(), Decimals()))
                self._check_time(t, times, market, n, where_of)
                column.append(price)
            else:
                self.kind = "bars"
                o, h, low, c = (_price(cell(n), n) for n in BAR_COLUMNS)
                if not (low <= o <= h and low <= c <= h):
                    raise ValueError(
                        f"bar is inconsistent: low {low} <= open {o}, close {c} <= high {h}"
                        " does not hold"
                    )
                volume = cell("volume")
                v = None if volume in (None, "") else _volume(volume)
                bars = self.bars.setdefault(market, Bars())
                times = bars.times
                self._check_time(t, times, market, n, where_of)
                k = len(times)
                try:
                    for col, value in zip(
                        (bars.open, bars.high, bars.low, bars.close, bars.volume),
                        (o, h, low, c, v),
                        strict=True,
                    ):
                        col.append(value)
                except ValueError:
                    _undo(bars, k)
                    raise
                bars.down.append(c < o)
        except ValueError as exc:
            raise MarketDataError(f"{where_of(n)}: {exc}") from None
        times.append(t)

    def _check_time(
        self, t: int, times: array[int], market: str, n: int, where_of: Callable[[int], str]
    ) -> None:
        if times:
            last = times[-1]
            if t < last or (t == last and self.kind == "bars"):
                raise MarketDataError(
                    f"{where_of(n)}: timestamp goes backwards for {market}"
                    + (" (bars must be strictly increasing)" if t == last else "")
                )

    def series(self) -> dict[str, Series]:
        if not self.trades and not self.bars:
            wanted = f" for {self.market}" if self.market else ""
            raise MarketDataError(f"{self.source}: no data rows{wanted}")
        out = {}
        for market, (times, prices) in self.trades.items():
            out[market] = Series(market, "trades", times, prices)
        for market, bars in self.bars.items():
            out[market] = _bars_to_points(market, bars, self.bar_seconds, self.source)
        return out


def _undo(bars: Bars, k: int) -> None:
    """Drop what a row that failed half way appended to the columns after bar `k`."""
    for col in (bars.open, bars.high, bars.low, bars.close, bars.volume):
        del col.coefs[k:]
        del col.exps[k:]
    del bars.down[k:]


def _timestamp(raw: Any) -> int:
    if isinstance(raw, datetime):
        t = raw if raw.tzinfo is not None else raw.replace(tzinfo=UTC)
        return to_micros(t.astimezone(UTC))
    if isinstance(raw, int | float | Decimal) and not isinstance(raw, bool):
        raw = format(Decimal(str(raw)), "f")
    return parse_timestamp(str(raw))


def _bars_to_points(market: str, bars: Bars, bar_seconds: float | None, source: str) -> Series:
    starts = bars.times
    if bar_seconds is not None:
        length = int(Decimal(str(bar_seconds)) * 1_000_000)
    elif len(starts) > 1:
        length = min(b - a for a, b in zip(starts, starts[1:], strict=False))
    else:
        length = 60_000_000
    if length < 2:
        raise MarketDataError(f"{source}: a bar must last at least 2 microseconds")
    last = length - 1  # the bar's last microsecond: its path and close
    times = Times(bytes(32 * len(starts)))
    times[0::4] = starts
    for slot in (1, 2, 3):
        times[slot::4] = array("q", map(last.__add__, starts))  # no list of a million ints
    n = len(times)
    return Series(market, "bars", times, BarPoints(bars), bars, range(3, n, 4))


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
