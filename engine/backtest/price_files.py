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
import operator
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Context, Decimal, InvalidOperation, getcontext
from itertools import accumulate
from operator import mul as _times
from pathlib import Path
from typing import Any, NamedTuple, overload

import numpy as np

from sandex.engine.kernel.clock import EPOCH

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
MISSING = _MISSING = -(1 << 15)  # the exponent of a value that is not there (a bar's volume)
_UNITS: dict[int, Decimal] = {}
_BATCH = 4096  # bars made at once for a run that reads them in order


def unit(exp: int) -> Decimal:
    """1E`exp`, made once per exponent."""
    one = _UNITS.get(exp)
    if one is None:
        one = _UNITS[exp] = Decimal((0, (1,), exp))
    return one


def view(column: Any) -> Any:
    """A numpy view of an array's items (no copy), of its own item type."""
    return np.frombuffer(column, dtype=np.dtype(column.typecode)) if len(column) else np.zeros(0)


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
            new(Bar, (when, o * one, h * one, low * one, c * one, v * (units.get(e) or unit(e))))
            for when, o, h, low, c, v, e in zip(
                _datetimes(self.times[start:end]),
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


def _datetimes(times: array[int]) -> Iterator[datetime]:
    """The datetimes of ascending times in us, each the one before plus the step: a
    datetime and a timedelta added (a step's timedelta made once), not a timedelta made
    and added to the epoch for each, which took five times as long."""
    if not times:
        return iter(())
    steps = np.diff(np.frombuffer(times, dtype=np.int64)).tolist()
    made: dict[int, timedelta] = {}
    deltas = [made.get(d) or made.setdefault(d, timedelta(0, 0, d)) for d in steps]
    return accumulate(deltas, operator.add, initial=from_micros(times[0]))


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
    starts = np.frombuffer(bars.times, dtype=np.int64) if bars.times else np.zeros(0, np.int64)
    if bar_seconds is not None:
        length = int(Decimal(str(bar_seconds)) * 1_000_000)
    elif len(starts) > 1:
        length = int(np.diff(starts).min())
    else:
        length = 60_000_000
    if length < 2:
        raise MarketDataError(f"{source}: a bar must last at least 2 microseconds")
    last = length - 1  # the bar's last microsecond: its path and close
    times = Times(bytes(32 * len(starts)))
    if len(starts):  # written in place: no temporary as large as the times
        points = np.frombuffer(times, dtype=np.int64).reshape(-1, 4)
        points[:, 0] = starts
        for slot in (1, 2, 3):
            points[:, slot] = starts
            points[:, slot] += last
        del points
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


# -- plain CSV files, read with numpy ----------------------------------------------------
#
# Most files are plain: one market, no quotes, every row the header's width, prices
# `digits[.digits]`, times all RFC 3339 in UTC (`Z`) or with an offset, or all unix
# times. Such a file is read in blocks with numpy, exactly: a price's digits become its
# integer coefficient by integer arithmetic (no float), its fraction's length its
# exponent, as `parts` reads them. Anything else in a block (a quote, a blank line, a
# sign, a fault to name) sends the whole file to the row reader, which reads it or
# names the fault; so a plain file answers what the row reader would.

_BLOCK = 1 << 22  # bytes read at once: a million bars' file is never held whole
_POW10 = np.array([10**k for k in range(19)], dtype=np.int64)
_DIGITS = 18  # an int64 holds any 18 digits
_DOT, _ZERO = ord("."), ord("0")


class _NotPlain(Exception):
    """A block the numpy reader does not read: the row reader reads the file."""


def _right_aligned(buf: Any, starts: Any, ends: Any, width: int) -> list[Any]:
    """The columns of each field's last `width` bytes, left to right, a field shorter
    padded with '0' on the left (a column at a time: no index matrix)."""
    lengths = ends - starts
    short = lengths.min() < width
    columns = []
    for back in range(width, 0, -1):
        column = buf[np.maximum(ends - back, 0)]
        if short:
            column = np.where(lengths < back, np.uint8(_ZERO), column)
        columns.append(column)
    return columns


def _numbers(buf: Any, starts: Any, ends: Any) -> tuple[Any, Any, Any]:
    """(coefficients, exponents, empty) of fields of plain decimal text `digits[.digits]`
    (an empty field is 0 and flagged); _NotPlain for any other text."""
    lengths = ends - starts
    n = len(lengths)
    width = int(lengths.max()) if n else 0
    if width > _DIGITS + 1:
        raise _NotPlain
    coefs = np.zeros(n, dtype=np.int64)
    dot_at = np.full(n, -1, dtype=np.int64)  # the dot's column, -1: none
    for c, chars in enumerate(_right_aligned(buf, starts, ends, width)):
        dots = chars == _DOT
        digits = chars - np.uint8(_ZERO)  # a byte under '0' wraps above 9
        if ((digits > 9) & ~dots).any():
            raise _NotPlain
        if dots.any():
            if (dots & (dot_at >= 0)).any():
                raise _NotPlain  # two dots
            dot_at[dots] = c
            coefs = np.where(dots, coefs, coefs * 10 + digits)  # Horner's rule past the dot
        else:
            coefs = coefs * 10 + digits
    has_dot = dot_at >= 0
    # a dot neither first nor last (`5.` and `.5` go to the row reader)
    if (has_dot & ((dot_at == width - 1) | (dot_at == width - lengths))).any():
        raise _NotPlain
    if (lengths - has_dot > _DIGITS).any():
        raise _NotPlain
    exps = np.where(has_dot, dot_at - (width - 1), 0).astype(np.int16)
    return coefs, exps, lengths == 0


def _days_from_civil(y: Any, m: Any, d: Any) -> Any:
    """Days since 1970-01-01 of proleptic Gregorian dates (H. Hinnant's algorithm)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    doy = (153 * (m + np.where(m > 2, -3, 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


_MONTH_DAYS = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)


def _micros_of(buf: Any, starts: Any, ends: Any) -> Any:
    """Microseconds since the epoch of fields that are all unix times (digits: seconds,
    or ms from `MILLIS_FROM`) or all `YYYY-MM-DDTHH:MM:SS` with `Z` or `+HH:MM`; as
    `parse_timestamp` reads them. _NotPlain for anything else."""
    lengths = ends - starts
    width = int(lengths.max())
    if width > 25 or int(lengths.min()) == 0:
        raise _NotPlain
    chars = _right_aligned(buf, starts, ends, width)  # unix times padded with '0'
    digit = [c - np.uint8(_ZERO) for c in chars]  # a byte under '0' wraps above 9
    if width <= _DIGITS and all((d <= 9).all() for d in digit):
        whole = np.zeros(len(starts), dtype=np.int64)
        for d in digit:
            whole = whole * 10 + d
        return np.where(whole >= MILLIS_FROM, whole * 1000, whole * 1_000_000)
    if width != int(lengths.min()):
        raise _NotPlain

    def number(*at: int) -> Any:
        value = np.zeros(len(starts), dtype=np.int64)
        for c in at:
            if (digit[c] > 9).any():
                raise _NotPlain
            value = value * 10 + digit[c]
        return value

    if width == 20:
        if (chars[19] != ord("Z")).any():
            raise _NotPlain
        offset = 0
    elif width == 25:
        sign = chars[19]
        signed = (sign == ord("+")) | (sign == ord("-"))
        if not signed.all() or (chars[22] != ord(":")).any():
            raise _NotPlain
        oh, om = number(20, 21), number(23, 24)
        if (oh >= 24).any() or (om >= 60).any():
            raise _NotPlain
        offset = np.where(sign == ord("-"), -1, 1) * (oh * 3600 + om * 60)
    else:
        raise _NotPlain
    sep = chars[10]
    if (
        any((chars[c] != ord("-")).any() for c in (4, 7))
        or any((chars[c] != ord(":")).any() for c in (13, 16))
        or ((sep != ord("T")) & (sep != ord(" "))).any()
    ):
        raise _NotPlain
    y = number(0, 1, 2, 3)
    mo = number(5, 6)
    d = number(8, 9)
    h = number(11, 12)
    mi = number(14, 15)
    s = number(17, 18)
    month_ok = (mo >= 1) & (mo <= 12)
    leap = (y % 4 == 0) & ((y % 100 != 0) | (y % 400 == 0))
    last_day = _MONTH_DAYS[np.where(month_ok, mo, 1)] + (leap & (mo == 2))
    if not (
        month_ok.all()
        and (y >= 1).all()
        and ((d >= 1) & (d <= last_day)).all()
        and ((h < 24) & (mi < 60) & (s < 60)).all()
    ):
        raise _NotPlain
    seconds = _days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset
    return seconds * 1_000_000


class _PlainReader:
    """A plain file's rows, block by block, into the columns the row reader makes."""

    def __init__(self, cols: dict[str, int], width: int, rows: int) -> None:
        self.cols = cols
        self.width = width
        self.bars: Bars | None = None
        self.trades: tuple[Times, Decimals] | None = None
        self.filled = 0  # rows written
        # Every column made at its full size at once and written in place: grown block
        # by block, the reallocations left a third more memory taken than the columns.
        if "price" in cols:
            self.trades = (_sized(Times(), rows), _sized_decimals(rows))
            self.arrays: list[Any] = [self.trades[0], self.trades[1].coefs, self.trades[1].exps]
        else:
            bars = self.bars = Bars()
            _sized(bars.times, rows)
            for column in (bars.open, bars.high, bars.low, bars.close, bars.volume):
                _sized(column.coefs, rows)
                _sized(column.exps, rows)
            bars.down.extend(bytes(rows))
            self.arrays = [bars.times, bars.down] + [
                a
                for c in (bars.open, bars.high, bars.low, bars.close, bars.volume)
                for a in (c.coefs, c.exps)
            ]

    def _put(self, column: Any, values: Any) -> None:
        """Write a block's values at the rows not yet filled."""
        kind = {"q": np.int64, "h": np.int16}.get(getattr(column, "typecode", ""), np.uint8)
        view = np.frombuffer(column, dtype=kind)
        view[self.filled : self.filled + len(values)] = values
        del view

    def last_time(self) -> int | None:
        times = self.trades[0] if self.trades is not None else self.bars.times  # type: ignore[union-attr]
        return times[self.filled - 1] if self.filled else None

    def trim(self) -> None:
        """Drop the rows the size allowed for and no line filled."""
        for a in self.arrays:
            del a[self.filled :]

    def add(self, block: bytes) -> None:
        """Complete lines, each ending with a newline."""
        if b"\r" in block:
            block = block.replace(b"\r\n", b"\n")
            if b"\r" in block:
                raise _NotPlain
        if b'"' in block:
            raise _NotPlain
        buf = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero(buf == ord("\n"))
        lines = len(ends)
        commas = np.flatnonzero(buf == ord(","))
        seps = self.width - 1
        if len(commas) != lines * seps:
            raise _NotPlain
        starts = np.empty(lines, dtype=np.int64)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        grid = commas.reshape(lines, seps) if seps else np.empty((lines, 0), dtype=np.int64)
        if seps and ((grid[:, 0] < starts) | (grid[:, -1] > ends)).any():
            raise _NotPlain  # a line with too many commas next to one with too few
        field_starts = np.concatenate([starts[:, None], grid + 1], axis=1)
        field_ends = np.concatenate([grid, ends[:, None]], axis=1)

        def field(name: str) -> tuple[Any, Any]:
            i = self.cols[name]
            return field_starts[:, i], field_ends[:, i]

        times = _micros_of(buf, *field("timestamp"))
        if self.trades is not None:
            self._trades(times, *_numbers(buf, *field("price")))
            return
        prices = [_numbers(buf, *field(name)) for name in BAR_COLUMNS]
        if any(empty.any() for _, _, empty in prices):
            raise _NotPlain
        if "volume" in self.cols:
            volumes, volume_exps, missing = _numbers(buf, *field("volume"))
            volume_exps = np.where(missing, _MISSING, volume_exps).astype(np.int16)
        else:
            volumes = np.zeros(lines, dtype=np.int64)
            volume_exps = np.full(lines, _MISSING, dtype=np.int16)
        self._bars(times, prices, volumes, volume_exps)

    def _ordered(self, times: Any, last: int | None, strictly: bool) -> None:
        steps = np.diff(times)
        if last is not None:
            steps = np.concatenate([[times[0] - last], steps])
        if len(steps) and (steps.min() <= 0 if strictly else steps.min() < 0):
            raise _NotPlain  # the row reader names the line

    def _trades(self, times: Any, coefs: Any, exps: Any, empty: Any) -> None:
        assert self.trades is not None
        column_times, column = self.trades
        if empty.any() or (coefs <= 0).any():
            raise _NotPlain
        self._ordered(times, self.last_time(), strictly=False)
        if self.filled + len(times) > len(column_times):
            raise _NotPlain  # more lines than counted: the file changed under us
        self._put(column_times, times)
        self._put(column.coefs, coefs)
        self._put(column.exps, exps)
        self.filled += len(times)

    def _bars(self, times: Any, prices: list[Any], volumes: Any, volume_exps: Any) -> None:
        bars = self.bars
        assert bars is not None
        (o, oe, _), (h, he, _), (lo, le, _), (c, ce, _) = prices
        common = np.minimum(np.minimum(oe, he), np.minimum(le, ce)).astype(np.int64)
        scaled = []
        for coef, exp in zip((o, h, lo, c), (oe, he, le, ce), strict=True):
            shift = exp.astype(np.int64) - common
            if shift.any():
                if (coef >= _POW10[np.maximum(_DIGITS - shift, 0)]).any():
                    raise _NotPlain  # past int64 on a common exponent
                coef = coef * _POW10[shift]
            scaled.append(coef)
        so, sh, sl, sc = scaled
        if not ((sl > 0) & (sl <= so) & (so <= sh) & (sl <= sc) & (sc <= sh)).all():
            raise _NotPlain
        self._ordered(times, self.last_time(), strictly=True)
        if self.filled + len(times) > len(bars.times):
            raise _NotPlain  # more lines than counted: the file changed under us
        self._put(bars.times, times)
        for column, coef, exp in (
            (bars.open, o, oe),
            (bars.high, h, he),
            (bars.low, lo, le),
            (bars.close, c, ce),
            (bars.volume, volumes, volume_exps),
        ):
            self._put(column.coefs, coef)
            self._put(column.exps, exp)
        self._put(bars.down, sc < so)
        self.filled += len(times)


def _sized(column: Any, rows: int) -> Any:
    """`column` (empty) grown to `rows` zeros in place, with no temporary of that size."""
    column.append(0)
    column *= rows
    return column


def _sized_decimals(rows: int) -> Decimals:
    column = Decimals()
    _sized(column.coefs, rows)
    _sized(column.exps, rows)
    return column


def _lines(f: Any) -> int:
    """The lines from the file's position on (one not ending in a newline counts),
    counted in blocks; the position is put back."""
    at = f.tell()
    count = 0
    last = b""
    while block := f.read(_BLOCK):
        count += block.count(b"\n")
        last = block[-1:]
    f.seek(at)
    return count + (last not in (b"", b"\n"))


def _plain_csv(
    path: Path, market: str | None, bar_seconds: float | None
) -> dict[str, Series] | None:
    """A plain CSV file's series, read with numpy; None when the file is not plain (the
    row reader then reads it, or names its fault)."""
    if market is None:
        return None
    with path.open("rb") as f:
        try:
            header = f.readline().decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            return None
        if not header.strip() or header.lstrip().startswith("#") or '"' in header:
            return None
        names = header.split(",")
        try:
            cols = _columns(names, str(path))
        except MarketDataError:
            return None
        if "market" in cols:
            return None
        reader = _PlainReader(cols, len(names), _lines(f))
        carry = b""
        try:
            while True:
                block = f.read(_BLOCK)
                if not block:
                    break
                data = carry + block
                cut = data.rfind(b"\n") + 1
                carry = data[cut:]
                if cut:
                    reader.add(data[:cut])
            if carry:
                reader.add(carry + b"\n")
        except _NotPlain:
            return None
    reader.trim()
    if reader.trades is not None:
        times, prices = reader.trades
        if not times:
            return None
        return {market: Series(market, "trades", times, prices)}
    assert reader.bars is not None
    if not reader.bars.times:
        return None
    return {market: _bars_to_points(market, reader.bars, bar_seconds, str(path))}


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
        plain = _plain_csv(p, market, bar_seconds)
        if plain is not None:
            return plain
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
