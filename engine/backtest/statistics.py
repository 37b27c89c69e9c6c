"""Figures computed from a backtest's record: profit and loss, return statistics
(CAGR, volatility, Sharpe, Sortino, Calmar, drawdown and its duration, exposure, buy
and hold), the round trips' statistics, volume, fees, slippage, the executions and
trades tables and the equity curve.

All in `Decimal`, from the result's timeline, holdings, flows and fills (square roots,
logarithms and powers by Decimal's own `sqrt`, `ln` and `exp`); one market on the
compact timeline is walked in exact integers with numpy (`_walk_compact`), with the
same figures; only the average exposure, a mean of ratios, is summed in floats. The
charts (engine/backtest/charts.py) draw from these, in floats, apart. Ratios are shown as
percentages with two decimals under `_pct` keys, other ratios (Sharpe, Sortino,
Calmar, profit factor) with four, amounts at their asset's precision (at most 8
decimals), durations in ISO 8601."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterator, Sequence
from decimal import ROUND_HALF_EVEN, Context, Decimal, Overflow, localcontext
from itertools import chain
from typing import TYPE_CHECKING, Any, NamedTuple, overload

import numpy as np

from sandex.engine.backtest.price_files import EXACT, decimal_parts, from_micros, unit, view
from sandex.engine.backtest.timeline import OnTick
from sandex.engine.backtest.trades import PRECISION, Trade, pair
from sandex.engine.kernel.clock import format_time
from sandex.engine.kernel.money import ASSET_PRECISION, MARKETS

if TYPE_CHECKING:
    from sandex.engine.backtest.result import BacktestResult, Fill

ZERO = Decimal(0)
ONE = Decimal(1)
HUNDRED = Decimal(100)
INF = 1 << 62
EQUITY_ROWS = 50_000
KEPT_RETURNS = 100_000  # returns kept between the two passes up to this many (~10 MB)
DAY_US = 86_400_000_000
# A year in calendar time, 365.25 days, in microseconds: CAGR's and annualisation's.
YEAR_US = 31_557_600_000_000
SLIPPAGE_MEASURE = (
    "fill price against the reference price at the fill, in bps, positive = cost"
    " (for a market order the reference at the fill is the arrival price)"
)
SETTINGS_SHOWN = (
    "maker_fee_rate",
    "taker_fee_rate",
    "market_spread_bps",
    "market_levels",
    "market_level_step_bps",
    "market_level_notional",
    "market_step_seconds",
    "order_submission_latency_ms",
)


def _amount(value: Decimal, decimals: int = 8) -> str:
    q = value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN)
    text = format(q, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def places(asset: str) -> int:
    """Decimals an amount of `asset` is shown with: its transfer precision, at most 8
    (the engine's base step; an 18-decimal ETH amount shows as 8)."""
    return min(ASSET_PRECISION.get(asset, 8), 8)


def _money(value: Decimal, asset: str) -> str:
    return _amount(value, places(asset))


def exact(value: Decimal) -> str:
    """An amount with every digit it has (trailing zeros dropped): what the files hold,
    so that their amounts add up; the page rounds them (`shown`)."""
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def shown(amount: str, asset: str) -> str:
    """An exact amount's text as the page shows it: at its asset's precision."""
    return _fixed(Decimal(amount), places(asset))


def _fixed(value: Decimal, decimals: int) -> str:
    # Enough digits for every whole digit too (a CAGR can have many).
    digits = Context(prec=max(PRECISION, value.adjusted() + decimals + 2))
    q = value.quantize(Decimal(1).scaleb(-decimals), ROUND_HALF_EVEN, digits)
    return format(ZERO.quantize(q) if q.is_zero() else q, "f")


def _pct(value: Decimal | None) -> str | None:
    """A percentage (already x 100) with two decimals."""
    return None if value is None else _fixed(value, 2)


def _ratio(value: Decimal | None) -> str | None:
    """A ratio that is not a percentage (Sharpe, profit factor) with four decimals."""
    return None if value is None else _fixed(value, 4)


def duration(us: int | None) -> str | None:
    """An ISO 8601 duration in whole days, hours, minutes and seconds (P1DT2H5S), to the
    nearest second (half up): a mean of durations has fractions nobody reads."""
    if us is None:
        return None
    whole = (abs(us) + 500_000) // 1_000_000
    sign = "-" if us < 0 and whole else ""
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, seconds = divmod(rest, 60)
    time = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M"), (seconds, "S")) if n)
    text = f"{sign}P{f'{days}D' if days else ''}"
    if time or not days:
        text += f"T{time or '0S'}"
    return text


TRADE_COLUMNS = [
    "market",
    "entry_time",
    "exit_time",
    "duration",
    "amount",
    "entry_price",
    "exit_price",
    "pnl",
    "return_pct",
    "fees",
]
EXECUTION_COLUMNS = [
    "execution_id",
    "executed_at",
    "order_id",
    "order_type",
    "market",
    "side",
    "amount",
    "price",
    "gross_trade_amount",
    "commission",
    "commission_asset",
    "liquidity",
    "reference_price",
    "slippage_bps",
]


class Figures(NamedTuple):
    """What `compute` answers: the summary, the executions table, the equity rows (as
    computed), equity.csv's columns (markets, (index, asset) of positions, currency) and
    the closed round trips."""

    summary: dict[str, Any]
    executions: list[dict[str, Any]]
    equity: list[tuple[Any, ...]]
    equity_columns: tuple[list[str], list[tuple[int, str]], str]
    trades: list[Trade]


def compute(result: BacktestResult) -> Figures:
    """The summary and tables of summary.json, executions.csv, trades.csv and equity.csv."""
    with localcontext(prec=PRECISION):
        return _compute(result)


def _compute(result: BacktestResult) -> Figures:
    markets = result.markets
    currency = MARKETS[markets[0]].quote
    assets = result.assets
    # Each asset is valued through the run's market that prices it in the currency.
    valued_by: dict[int, int] = {}
    for a, asset in enumerate(assets):
        for m, name in enumerate(markets):
            spec = MARKETS[name]
            if spec.base == asset and spec.quote == currency:
                valued_by[a] = m
    cash = assets.index(currency)
    unvalued = [asset for a, asset in enumerate(assets) if a != cash and a not in valued_by]

    times, mks, prices = result.times, result.mks, result.prices
    holdings = result.holdings
    latest = [prices[mks.index(m)] for m in range(len(markets))]
    first_price = latest[0]

    start_value = _worth(holdings[0][1], cash, valued_by, latest)
    n = len(times)
    stride = max(1, n // EQUITY_ROWS)
    base_columns = [(a, assets[a]) for a in valued_by]
    ends = _period_ends(times, mks, len(markets), result.bars)
    held_from = _held_from(result)
    walked = None
    if isinstance(prices, OnTick) and len(markets) == 1:
        walked = _walk_compact(
            times, prices, holdings, held_from, cash, valued_by, start_value, stride, ends
        )
    if walked is None:
        walked = _walk(
            times,
            mks,
            prices,
            holdings,
            held_from,
            cash,
            valued_by,
            list(latest),
            start_value,
            stride,
            ends,
        )
    for m in range(len(markets)):  # the latest price of each market, for the final value
        latest[m] = prices[len(mks) - 1 - mks[::-1].index(m)]
    final_held = holdings[-1][1]
    final_value = _worth(final_held, cash, valued_by, latest)
    flows_value = ZERO
    for at, asset, amount in result.flows:
        if asset == currency:
            flows_value += amount
        elif asset in assets and assets.index(asset) in valued_by:
            m = valued_by[assets.index(asset)]
            flows_value += amount * _price_at(times, mks, prices, m, at)
    pnl = final_value - start_value - flows_value
    span = times[-1] - times[0]
    growth = (start_value + pnl) / start_value if start_value > 0 else None
    returns = _Returns(start_value, walked.samples)
    cagr = _cagr(growth, span)
    risk = _risk(returns, span)

    orders = result.orders
    executions, volume_base, volume_quote, fees = _executions(result.fills)
    trades, still_open = pair(result.fills)
    summary: dict[str, Any] = {
        "markets": markets,
        "start": format_time(from_micros(times[0])),
        "end": format_time(from_micros(times[-1])),
        "points": n,
        "bars": result.bars,
        "seed": result.settings.seed,
        "fill_at": result.fill_at,
        "settings": {
            k: (format(v, "f") if isinstance(v, Decimal) else v)
            for k, v in result.settings.model_dump().items()
            if k in SETTINGS_SHOWN
        },
        "currency": currency,
        "orders": {
            "total": len(orders),
            "by_status": dict(sorted(Counter(status for status, _ in orders).items())),
            "by_type": dict(sorted(Counter(kind for _, kind in orders).items())),
        },
        "executions": len(executions),
        "volume": {
            "base": {k: exact(v) for k, v in sorted(volume_base.items())},
            "quote": exact(volume_quote),
        },
        "fees": exact(fees),
        "starting_balances": _balances(assets, holdings[0][1]),
        "final_balances": _final_balances(result.balances),
        "starting_equity": _money(start_value, currency),
        "final_equity": _money(final_value, currency),
        "external_flows": _money(flows_value, currency),
        "pnl": _money(pnl, currency),
        "return_pct": _pct((growth - ONE) * HUNDRED) if growth is not None else None,
        "cagr_pct": _pct(cagr * HUNDRED) if cagr is not None else None,
        "volatility_pct": _pct(risk.volatility * HUNDRED) if risk.volatility is not None else None,
        "sharpe": _ratio(risk.sharpe),
        "sortino": _ratio(risk.sortino),
        "calmar": _ratio(cagr / walked.max_dd) if cagr is not None and walked.max_dd else None,
        "max_drawdown_pct": _pct(walked.max_dd * HUNDRED),
        "max_drawdown_amount": _money(walked.max_dd_amount, currency),
        "max_drawdown_duration": duration(walked.max_dd_us),
        "exposure_pct": _pct(Decimal(walked.exposed_us) / span * HUNDRED) if span else "0.00",
        "average_exposure_pct": _pct(walked.exposure_sum / n * HUNDRED),
        "buy_and_hold_return_pct": _pct((latest[0] / first_price - ONE) * HUNDRED),
        "return_periods": {
            "period": "bar" if ends.bars else "day",
            "count": len(returns),
            "per_year": _ratio(risk.per_year),
        },
        "trades": trade_statistics(trades, still_open, currency),
        "slippage": {"measure": SLIPPAGE_MEASURE, **_slippage(result.fills, currency)},
        "slippage_by_order_type": {
            kind: _slippage([f for f in result.fills if f.order_type == kind], currency)
            for kind in sorted({f.order_type for f in result.fills})
        },
        "unvalued_assets": unvalued,
        "errors": result.errors,
        "params": result.params,
        "log_hash": result.log_hash,
    }
    return Figures(summary, executions, walked.rows, (markets, base_columns, currency), trades)


def trade_statistics(trades: list[Trade], still_open: int, currency: str) -> dict[str, Any]:
    """summary["trades"]: the closed round trips' count and figures, and how many are open."""
    count = len(trades)
    if not count:
        return {
            "count": 0,
            "open": still_open,
            **dict.fromkeys(
                (
                    "win_rate_pct",
                    "profit_factor",
                    "avg_trade_pct",
                    "best_trade_pct",
                    "worst_trade_pct",
                    "avg_pnl",
                    "expectancy",
                    "avg_duration",
                    "max_duration",
                )
            ),
        }
    wins = [t.pnl for t in trades if t.pnl > 0]
    losses = [t.pnl for t in trades if t.pnl < 0]
    gross_profit, gross_loss = sum(wins, ZERO), -sum(losses, ZERO)
    # Expectancy, as traders write it: win rate x average win - loss rate x average
    # loss; it comes to the mean pnl per trade (a trade at zero counts as neither).
    expectancy = (gross_profit - gross_loss) / count
    durations = [t.exit_time - t.entry_time for t in trades]
    return {
        "count": count,
        "open": still_open,
        "win_rate_pct": _pct(Decimal(len(wins)) / count * HUNDRED),
        "profit_factor": _ratio(gross_profit / gross_loss) if gross_loss else None,
        "avg_trade_pct": _pct(sum((t.return_pct for t in trades), ZERO) / count),
        "best_trade_pct": _pct(max(t.return_pct for t in trades)),
        "worst_trade_pct": _pct(min(t.return_pct for t in trades)),
        "avg_pnl": _money(sum((t.pnl for t in trades), ZERO) / count, currency),
        "expectancy": _money(expectancy, currency),
        "avg_duration": duration(int((Decimal(sum(durations)) / count).to_integral_value())),
        "max_duration": duration(max(durations)),
    }


class _Risk(NamedTuple):
    per_year: Decimal | None
    volatility: Decimal | None
    sharpe: Decimal | None
    sortino: Decimal | None


class _Returns:
    """Each period's return: its closing equity against the previous period's (the
    first period's against the starting equity). Made again for each pass over them,
    not kept: a million bars' returns would be a hundred megabytes of Decimals. A
    period whose equity did not move returns zero, without a division."""

    def __init__(self, start_value: Decimal, samples: Sequence[Decimal] | Samples) -> None:
        self.start_value = start_value
        self.samples = samples
        self.moving: Any = None  # compact samples: (the periods that moved, the equity before)
        if isinstance(samples, Samples):
            values = samples.values
            self.count = int(samples.start > 0) + int((values[:-1] > 0).sum())
            moved = np.flatnonzero(values[1:] != values[:-1]) + 1  # each period that moved
            if values[0] != samples.start:
                moved = np.concatenate([[0], moved])
            self.moving = moved
            return
        self.count = 0
        last = start_value
        for value in samples:
            self.count += last > 0
            last = value

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Decimal]:
        if isinstance(self.samples, Samples):
            yield from self._compact(self.samples)
            return
        before = self.start_value
        for value in self.samples:
            if before > 0:
                yield ZERO if value == before else value / before - ONE
            before = value

    @staticmethod
    def _compact(samples: Samples) -> Iterator[Decimal]:
        """The returns of compact samples, a block at a time: ZERO where the equity did
        not move, with no Decimal made for it."""
        values = samples.values
        before = np.concatenate([[samples.start], values[:-1]])
        for lo in range(0, len(values), _BLOCK):
            vs, bs = values[lo : lo + _BLOCK], before[lo : lo + _BLOCK]
            for v, b, moved in zip(vs.tolist(), bs.tolist(), (vs != bs).tolist(), strict=True):
                if b > 0:
                    yield Decimal(v) / Decimal(b) - ONE if moved else ZERO

    def nonzero(self) -> Iterator[Decimal]:
        """The returns that are not zero, in period order."""
        if self.moving is None:
            return (r for r in self if r)
        assert isinstance(self.samples, Samples)
        return self._moved(self.samples.values, self.moving, self.samples.start)

    @staticmethod
    def _moved(values: Any, moved: Any, start: int) -> Iterator[Decimal]:
        before = np.concatenate([[start], values[:-1]])
        for lo in range(0, len(moved), _BLOCK):  # a block at a time, as Python ints
            at = moved[lo : lo + _BLOCK]
            for v, b in zip(values[at].tolist(), before[at].tolist(), strict=True):
                if b > 0:
                    yield Decimal(v) / Decimal(b) - ONE


def _cagr(growth: Decimal | None, span: int) -> Decimal | None:
    """(final / start) ^ (365.25 days / the run's duration) - 1, in calendar time; none
    for a run shorter than a day (minutes extrapolated to a year make a number of
    thousands of digits that says nothing)."""
    if growth is None or span < DAY_US:
        return None
    if growth <= 0:
        return -ONE
    try:
        return (growth.ln() * YEAR_US / span).exp() - ONE
    except Overflow:  # beyond 10^999999
        return None


def _risk(returns: _Returns, span: int) -> _Risk:
    """Annualised volatility, Sharpe and Sortino (risk-free rate 0) of the period
    returns; a year holds as many periods as the run had per 365.25 days."""
    count = len(returns)
    if count < 2 or span <= 0:
        return _Risk(None, None, None, None)
    per_year = Decimal(count) * YEAR_US / span
    root = per_year.sqrt()
    # Two passes over the returns, each sum in period order: a short run's returns are
    # made once and kept, a long run's made again for each pass. A zero return adds
    # nothing to the first pass, nor to the second when the mean is 0.
    kept = list(returns) if count <= KEPT_RETURNS else None

    def every() -> Iterator[Decimal]:
        return iter(returns) if kept is None else iter(kept)

    def moving() -> Iterator[Decimal]:
        return returns.nonzero() if kept is None else (r for r in kept if r)

    total = below = ZERO
    for r in moving():
        total += r
        if r < 0:
            below += r * r
    mean = total / count
    if mean.is_zero():
        variance = sum((r * r for r in moving()), ZERO) / (count - 1)
    else:
        still = (ZERO - mean) ** 2  # a zero return's term, made once
        variance = sum((still if r is ZERO else (r - mean) ** 2 for r in every()), ZERO) / (
            count - 1
        )
    std = variance.sqrt()
    downside = (below / count).sqrt()
    return _Risk(
        per_year,
        std * root,
        mean / std * root if std else None,
        mean / downside * root if downside else None,
    )


class _Ends(NamedTuple):
    """The points that end a return period (sorted indices), and whether they are bars."""

    points: Sequence[int]
    bars: bool


def _period_ends(times: Sequence[int], mks: Sequence[int], markets: int, bars: int) -> _Ends:
    """Bar data: each bar's last point (bars have the same number of points each);
    other data: each UTC day's last point. Points that share an instant count at the
    last of them."""
    n = len(times)
    per_bar = n // bars if bars else 0
    if per_bar and per_bar * bars == n:
        closes: Sequence[int]
        if markets == 1:
            closes = range(per_bar - 1, n, per_bar)
        else:
            seen = [0] * markets
            closes = []
            for i, m in enumerate(mks):
                seen[m] += 1
                if seen[m] % per_bar == 0:
                    closes.append(i)
        return _Ends(_last_of_instant(times, closes), True)
    days = []
    i = 0
    while i < n:  # one search per day, not a look at every point
        i = bisect_left(times, (times[i] // DAY_US + 1) * DAY_US, i)
        days.append(i - 1)
    return _Ends(days, False)


def _last_of_instant(times: Sequence[int], points: Sequence[int]) -> Sequence[int]:
    """Each point moved to the last point at its time, once (an array: 8 bytes each)."""
    n = len(times)
    if isinstance(times, array) and n:
        at = np.frombuffer(times, dtype=np.int64)
        last = np.searchsorted(at, at[np.asarray(points, dtype=np.int64)], side="right") - 1
        if len(last):
            last = last[np.concatenate([[True], last[1:] != last[:-1]])]
        moved = array("q")
        moved.frombytes(last.astype(np.int64).tobytes())
        return moved
    out = array("q")
    for i in points:
        while i + 1 < n and times[i + 1] == times[i]:
            i += 1
        if not out or out[-1] != i:
            out.append(i)
    return out


def equity_rows(
    raw: Sequence[tuple[Any, ...]], columns: tuple[list[str], list[tuple[int, str]], str]
) -> list[dict[str, Any]]:
    """equity.csv's rows, as text, from the rows `compute` made."""
    return list(iter_equity_rows(raw, columns))


def iter_equity_rows(
    raw: Sequence[tuple[Any, ...]], columns: tuple[list[str], list[tuple[int, str]], str]
) -> Iterator[dict[str, Any]]:
    """`equity_rows` one at a time: equity.csv is written without a list of them all."""
    markets, positions, currency = columns
    for t, price, m, value, peak, held, cash in raw:
        row = {
            "time": format_time(from_micros(t)),
            "price": format(price, "f"),
            "market": markets[m],
            "equity": _money(value, currency),
            "drawdown_pct": _pct((peak - value) / peak * HUNDRED if peak > 0 else ZERO),
        }
        for a, asset in positions:
            row[f"position_{asset}"] = _money(held[a], asset)
        row[f"cash_{currency}"] = _money(cash, currency)
        yield row


def _held_from(result: BacktestResult) -> Sequence[int]:
    """The first point each entry of the holdings is held at: the runner's, or for a
    record made by hand, the first point after the entry's instant."""
    if result.held_from is not None:
        return result.held_from
    times = result.times
    return [0, *(bisect_right(times, t) for t, _ in result.holdings[1:])]


def _worth(
    held: tuple[Decimal, ...], cash: int, valued_by: dict[int, int], latest: list[Decimal]
) -> Decimal:
    """The value of a holding: its cash plus each priced asset at its market's latest price."""
    total = held[cash]
    for a, m in valued_by.items():
        if held[a]:
            total += held[a] * latest[m]
    return total


class _Walked(NamedTuple):
    rows: list[tuple[Any, ...]]  # equity rows, sampled: each point with what was held there
    max_dd: Decimal  # deepest drawdown, as a fraction of its peak
    max_dd_amount: Decimal
    max_dd_us: int | None  # longest time under a previous peak (None: never under one)
    exposed_us: int  # time holding a priced asset
    exposure_sum: Decimal  # the sum over points of the share of equity in positions
    samples: Sequence[Decimal] | Samples  # the equity at each period's end, its trades made


def _walk(
    times: Sequence[int],
    mks: Sequence[int],
    prices: Sequence[Decimal],
    holdings: list[tuple[int, tuple[Decimal, ...]]],
    held_from: Sequence[int],
    cash: int,
    valued_by: dict[int, int],
    latest: list[Decimal],
    start_value: Decimal,
    stride: int,
    ends: _Ends,
) -> _Walked:
    """The walk over every point: equity rows, drawdown (deepest, as a ratio and an
    amount, and longest), time exposed, the sum of exposures and the equity at each
    period's end. `latest` starts at each market's first price.

    Two values of each point: the rows and the drawdown value it with what was held at
    it (`held_from`: a sale at a bar's close does not hide the bar's low, a purchase
    there does not make one); the period's returns and the exposure with what was held
    once its instant's trades were made (`holdings`' times), as a period ends."""
    n = len(times)
    equity_rows: list[tuple[Any, ...]] = []
    append = equity_rows.append

    # The deepest drawdown is found at the lowest value since the last peak: with the
    # peak fixed, (peak - value) / peak only grows as the value falls, so the division
    # is done for each new low, not for each point.
    peak = trough = start_value
    peak_at = times[0]
    under = False
    longest: int | None = None
    max_dd = ZERO
    max_dd_amount = ZERO
    exposed_us = 0
    exposure_sum = ZERO
    samples: list[Decimal] = []
    period_ends = chain(ends.points, (INF,))
    next_end = next(period_ends)
    h = 0
    held = holdings[0][1]
    value = start_value
    last = n - 1
    changes = iter([*(c[0] for c in holdings[1:]), INF])
    next_change = next(changes)
    at_points = iter([*held_from[1:], INF])
    next_at = next(at_points)
    k = 0  # the entry of `holdings` held at the point

    def holding(held: tuple[Decimal, ...]) -> tuple[bool, tuple[Decimal, int] | None]:
        """Whether a priced asset is held, and (amount, market) when only one is: the
        value is then the cash plus that amount at the market's price."""
        valued = [(held[a], m) for a, m in valued_by.items() if held[a]]
        return bool(valued), valued[0] if len(valued) == 1 else None

    cash_held = held[cash]
    position, only = holding(held)
    point_held, point_cash, point_position, point_only = held, cash_held, position, only
    point_value = start_value
    # One pass over the three columns: iterating is cheaper than indexing each. With one
    # market on the compact timeline (engine/backtest/timeline.py) the pass reads its
    # ticks, and a point's price is made (ticks x tick, exact here) only where it is
    # used: a position to value, or an equity row.
    lazy = isinstance(prices, OnTick) and len(latest) == 1
    tick = prices.tick_of[0] if isinstance(prices, OnTick) else ONE
    column: Sequence[Any] = prices.ticks if lazy and isinstance(prices, OnTick) else prices
    for i, (t, m, price) in enumerate(zip(times, mks, column, strict=True)):
        changed = t >= next_change
        if changed:
            while next_change <= t:
                h += 1
                next_change = next(changes)
            held = holdings[h][1]
            cash_held = held[cash]
            position, only = holding(held)
        moved = i >= next_at
        if moved:
            while next_at <= i:
                k += 1
                next_at = next(at_points)
            point_held = holdings[k][1]
            point_cash = point_held[cash]
            point_position, point_only = holding(point_held)
        if not lazy:
            latest[m] = price
        elif position or point_position:
            price = latest[0] = price * tick
        if position:
            value = (
                cash_held + only[0] * latest[only[1]]
                if only is not None
                else _worth(held, cash, valued_by, latest)
            )
        elif changed:
            value = cash_held
        if point_position:
            point_value = (
                point_cash + point_only[0] * latest[point_only[1]]
                if point_only is not None
                else _worth(point_held, cash, valued_by, latest)
            )
        elif moved:
            point_value = point_cash
        # Time under water runs from the last point at the peak to the first point
        # back at (or above) it, or to the end.
        if point_value >= peak:
            if under:
                under = False
                if longest is None or t - peak_at > longest:
                    longest = t - peak_at
            peak_at = t
            if point_value > peak:
                peak = trough = point_value
        else:
            under = True
            if point_value < trough and peak > 0:
                trough = point_value
                drawdown = (peak - point_value) / peak
                if drawdown > max_dd:
                    max_dd = drawdown
                    max_dd_amount = peak - point_value
        if position:
            if i < last:
                exposed_us += times[i + 1] - t
            if value > 0:
                exposure_sum += (value - cash_held) / value
        if i == next_end:
            samples.append(value)
            next_end = next(period_ends)
        if moved or i % stride == 0 or i == last:
            append(
                (
                    t,
                    price * tick if lazy and not (position or point_position) else price,
                    m,
                    point_value,
                    peak,
                    point_held,
                    point_cash,
                )
            )
    if under and (longest is None or times[-1] - peak_at > longest):
        longest = times[-1] - peak_at
    return _Walked(equity_rows, max_dd, max_dd_amount, longest, exposed_us, exposure_sum, samples)


# -- one market on the compact timeline, in integers ------------------------------------
#
# The walk above, done with numpy for a run of one market on the compact timeline: each
# point's equity is an integer on one exponent (cash + amount x ticks x tick: exact, as
# Decimal's is), so the peak, the deepest drawdown (the first point of the largest
# ratio, compared exactly in Python integers), time under water and time exposed come
# out exactly as the walk's. The equity rows and the period-end samples stay integer
# arrays, made Decimals when read. Only the average exposure, a ratio, is summed in
# floats. Runs whose integers could pass int64 take the walk.

_SAFE = 1 << 62
_BLOCK = 1 << 16  # points walked at once


class EquityRows(Sequence[tuple[Any, ...]]):
    """The sampled equity rows of a compact walk, each made when read: (time, price,
    market, equity, peak, holdings, cash) as the walk's rows are."""

    __slots__ = ("exp", "holdings", "points", "peaks", "segs", "tick", "ticks", "times", "values")

    def __init__(
        self,
        *,
        exp: int,
        holdings: list[tuple[int, tuple[Decimal, ...], Decimal]],
        points: Any,
        peaks: Any,
        segs: Any,
        tick: Decimal,
        ticks: array[int],
        times: array[int],
        values: Any,
    ) -> None:
        self.exp = exp  # equity and peaks are integers x 10^exp
        self.holdings = holdings  # (time, holdings, cash) of each change
        self.points = points  # each row's point (numpy)
        self.peaks = peaks
        self.segs = segs  # each row's entry in `holdings`
        self.tick = tick
        self.ticks = ticks
        self.times = times
        self.values = values

    def __len__(self) -> int:
        return len(self.points)

    @overload
    def __getitem__(self, k: int) -> tuple[Any, ...]: ...
    @overload
    def __getitem__(self, k: slice) -> list[tuple[Any, ...]]: ...
    def __getitem__(self, k: int | slice) -> Any:
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        i = int(self.points[k])
        held = self.holdings[int(self.segs[k])]
        return (
            self.times[i],
            EXACT.multiply(self.ticks[i], self.tick),
            0,
            _scaled(int(self.values[k]), self.exp),
            _scaled(int(self.peaks[k]), self.exp),
            held[1],
            held[2],
        )

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return (self[k] for k in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def floats(self, column: int) -> Any:
        """Column 3 (equity) or 4 (peak) in floats, for the charts."""
        values = self.values if column == 3 else self.peaks
        return values.astype(np.float64) * 10.0**self.exp

    def row_times(self) -> Any:
        return np.frombuffer(self.times, dtype=np.int64)[self.points]


class Samples:
    """The equity at each period's end, integers on one exponent (and the starting
    equity's, `start`); Decimals when read."""

    __slots__ = ("exp", "start", "values")

    def __init__(self, values: Any, exp: int, start: int) -> None:
        self.values = values
        self.exp = exp
        self.start = start

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Decimal]:
        exp = self.exp
        return (_scaled(v, exp) for (block,) in _blocks(self.values) for v in block)


def _blocks(*columns: Any) -> Iterator[tuple[list[int], ...]]:
    """Arrays as lists of Python ints, a block at a time (a million ints take 36 MB)."""
    for lo in range(0, len(columns[0]), _BLOCK):
        yield tuple(c[lo : lo + _BLOCK].tolist() for c in columns)


def _scaled(coef: int, exp: int) -> Decimal:
    return EXACT.multiply(coef, unit(exp))


def _walk_compact(
    times: Any,
    prices: OnTick,
    holdings: list[tuple[int, tuple[Decimal, ...]]],
    held_from: Sequence[int],
    cash: int,
    valued_by: dict[int, int],
    start_value: Decimal,
    stride: int,
    ends: _Ends,
) -> _Walked | None:
    """`_walk` for one market on the compact timeline; None when int64 could overflow."""
    n = len(times)
    if not n or len(valued_by) > 1:
        return None
    asset = next(iter(valued_by), None)
    tick = prices.tick_of[0]
    tc, te = decimal_parts(tick)
    parts = []
    for _, held in holdings:
        cc, ce = decimal_parts(held[cash])
        ac, ae = decimal_parts(held[asset]) if asset is not None else (0, 0)
        parts.append((cc, ce, ac * tc, ae + te))
    exp = min(min(ce, ke) for _, ce, _, ke in parts)
    cs = [cc * 10 ** (ce - exp) for cc, ce, _, _ in parts]
    ks = [kc * 10 ** (ke - exp) for _, _, kc, ke in parts]
    ticks = view(prices.ticks)
    top = int(ticks.max())
    if max(abs(c) + abs(k) * top for c, k in zip(cs, ks, strict=True)) >= _SAFE:
        return None
    at = np.frombuffer(times, dtype=np.int64) if isinstance(times, array) else np.array(times)
    changes = np.array([h[0] for h in holdings[1:]], dtype=np.int64)
    at_points = np.array(held_from[1:], dtype=np.int64)
    c_of = np.array(cs, dtype=np.int64)
    k_of = np.array(ks, dtype=np.int64)
    start = cs[0] + ks[0] * int(ticks[0])
    if _scaled(start, exp) != start_value:
        return None
    period_ends = np.asarray(ends.points, dtype=np.int64)
    # What carries from one block of points to the next.
    peak = start
    best: tuple[int, int] | None = None  # (peak, equity) of the deepest drawdown so far
    peak_at = int(at[0])  # the time of the last point at the peak
    under = False
    longest: int | None = None
    exposed_us = 0
    exposure = 0.0
    seg_before = 0
    picked_rows: list[tuple[Any, Any, Any, Any]] = []
    samples_of: list[Any] = []
    for lo in range(0, n, _BLOCK):  # in blocks: a million bars' temporaries stay small
        hi = min(lo + _BLOCK, n)
        block_at = at[lo:hi]
        # as a period ends (returns, exposure): what its instant's trades left
        segs = np.searchsorted(changes, block_at, side="right")
        values = c_of[segs] + k_of[segs] * ticks[lo:hi]
        # at each point (drawdown, rows): what was held there
        held_at = np.searchsorted(at_points, np.arange(lo, hi, dtype=np.int64), side="right")
        worth = c_of[held_at] + k_of[held_at] * ticks[lo:hi]
        peaks = np.maximum.accumulate(np.maximum(worth, peak))
        before = np.empty(hi - lo, dtype=np.int64)
        before[0] = peak
        before[1:] = peaks[:-1]
        peak = int(peaks[-1])
        # The deepest drawdown: the first point of the largest (peak - value) / peak,
        # found in floats and decided in integers.
        down = (peaks > 0) & (worth < peaks)
        if down.any():
            ratio = np.where(down, (peaks - worth) / np.where(down, peaks, 1), 0.0)
            deepest = float(ratio.max())
            for i in np.flatnonzero(ratio >= deepest * (1 - 1e-9)).tolist():
                p, v = int(peaks[i]), int(worth[i])
                if best is None or (p - v) * best[0] > (best[0] - best[1]) * p:
                    best = (p, v)
            del ratio
        # Time under water: from the last point at the peak to the first back at it.
        at_peak = np.flatnonzero(worth >= before)
        if len(at_peak):
            if under or at_peak[0] > 0:
                gap = int(block_at[at_peak[0]]) - peak_at
                longest = gap if longest is None else max(longest, gap)
            gaps = np.flatnonzero(np.diff(at_peak) > 1)
            if len(gaps):
                gap = int((block_at[at_peak[gaps + 1]] - block_at[at_peak[gaps]]).max())
                longest = gap if longest is None else max(longest, gap)
            peak_at = int(block_at[at_peak[-1]])
            under = bool(at_peak[-1] < hi - lo - 1)
        else:
            under = True
        # Exposure: time and share of equity in a position.
        holding = k_of[segs] != 0
        steps = np.diff(at[lo : min(hi + 1, n)])
        exposed_us += int(steps[holding[: len(steps)]].sum())
        share = holding & (values > 0)
        if share.any():
            v = values[share].astype(np.float64)
            exposure += float(((v - c_of[segs[share]]) / v).sum())
        # Rows: each change of holdings, every `stride`-th point and the last.
        picked = np.empty(hi - lo, dtype=bool)
        picked[0] = held_at[0] != seg_before
        picked[1:] = held_at[1:] != held_at[:-1]
        picked[(-lo) % stride :: stride] = True
        if hi == n:
            picked[-1] = True
        points = np.flatnonzero(picked)
        picked_rows.append((points + lo, peaks[points], held_at[points], worth[points]))
        seg_before = int(held_at[-1])
        mine = period_ends[(period_ends >= lo) & (period_ends < hi)]
        samples_of.append(values[mine - lo])
    if under:
        gap = int(at[-1]) - peak_at
        longest = gap if longest is None else max(longest, gap)
    max_dd, max_dd_amount = ZERO, ZERO
    if best is not None:
        p, v = best
        max_dd = _scaled(p - v, exp) / _scaled(p, exp)
        max_dd_amount = _scaled(p - v, exp)
    exposure_sum = Decimal(repr(exposure)) if exposure else ZERO
    columns = [np.concatenate(c) for c in zip(*picked_rows, strict=True)]
    rows = EquityRows(
        exp=exp,
        holdings=[(t, held, held[cash]) for t, held in holdings],
        points=columns[0],
        peaks=columns[1],
        segs=columns[2],
        tick=tick,
        ticks=prices.ticks,
        times=times if isinstance(times, array) else array("q", times),
        values=columns[3],
    )
    samples = Samples(np.concatenate(samples_of), exp, start)
    return _Walked(
        rows,  # type: ignore[arg-type]
        max_dd,
        max_dd_amount,
        longest,
        exposed_us,
        exposure_sum,
        samples,  # type: ignore[arg-type]
    )


def _price_at(
    times: Sequence[int], mks: Sequence[int], prices: Sequence[Decimal], m: int, at: int
) -> Decimal:
    found = None
    for i, t in enumerate(times):
        if t > at:
            break
        if mks[i] == m:
            found = prices[i]
    if found is None:
        found = next(prices[i] for i in range(len(times)) if mks[i] == m)
    return found


def _balances(assets: list[str], held: tuple[Decimal, ...]) -> dict[str, str]:
    return {asset: exact(held[a]) for a, asset in enumerate(assets) if held[a]}


def _final_balances(balances: dict[str, dict[str, Decimal]]) -> dict[str, dict[str, str]]:
    """The flow's final balances, exact, leaving out assets whose amounts are all 0."""
    out = {}
    for asset, kinds in balances.items():
        row = {kind: exact(amount) for kind, amount in kinds.items()}
        if any(v != "0" for v in row.values()):
            out[asset] = row
    return out


def _executions(
    fills: list[Fill],
) -> tuple[list[dict[str, Any]], dict[str, Decimal], Decimal, Decimal]:
    """executions.csv's rows (as the API shows an execution, with the notional and the
    commission exact, so that the rows add up to the fees), the volume per base asset
    and in the quote asset, and the fees in the quote asset."""
    rows = []
    volume_base: dict[str, Decimal] = {}
    volume_quote = ZERO
    fees = ZERO
    for f in fills:
        v = f.view
        spec = MARKETS[v["market"]]
        amount = Decimal(v["amount"])
        price = Decimal(v["price"])
        gross = Decimal(v["gross_trade_amount"])
        commission = Decimal(v["commission"])
        volume_base[spec.base] = volume_base.get(spec.base, ZERO) + amount
        volume_quote += gross
        fees += commission * price if v["commission_asset"] == spec.base else commission
        bps = ""
        if f.reference:
            bps = _fixed(_side(v) * (price - f.reference) / f.reference * 10000, 2)
        rows.append(
            {
                "execution_id": v["execution_id"],
                "executed_at": v["executed_at"],
                "order_id": v["order_id"],
                "order_type": f.order_type,
                "market": v["market"],
                "side": v["side"],
                "amount": v["amount"],
                "price": v["price"],
                "gross_trade_amount": exact(gross),
                "commission": exact(commission),
                "commission_asset": v["commission_asset"],
                "liquidity": f.liquidity,
                "reference_price": format(f.reference, "f") if f.reference else "",
                "slippage_bps": bps,
            }
        )
    return rows, volume_base, volume_quote, fees


def trade_rows(trades: list[Trade]) -> list[dict[str, str]]:
    """trades.csv's rows: amounts at their asset's precision, prices two decimals finer
    than the market's tick (an average price falls between ticks)."""
    rows = []
    for t in trades:
        spec = MARKETS[t.market]
        finer = max(0, -spec.tick.as_tuple().exponent) + 2  # type: ignore[operator]
        rows.append(
            {
                "market": t.market,
                "entry_time": format_time(from_micros(t.entry_time)),
                "exit_time": format_time(from_micros(t.exit_time)),
                "duration": duration(t.exit_time - t.entry_time) or "",
                "amount": _money(t.amount, spec.base),
                "entry_price": _amount(t.entry_price, finer),
                "exit_price": _amount(t.exit_price, finer),
                "pnl": _money(t.pnl, spec.quote),
                "return_pct": _fixed(t.return_pct, 2),
                "fees": _money(t.fees, spec.quote),
            }
        )
    return rows


def _side(view: dict[str, Any]) -> int:
    return 1 if view["side"] == "BUY" else -1


def _slippage(fills: list[Fill], currency: str) -> dict[str, Any]:
    """Fills against the reference price at the fill: the cost in the quote asset
    (positive: paid more or sold for less) and its notional-weighted bps."""
    cost = ZERO
    notional = ZERO
    orders = set()
    for f in fills:
        if f.reference is None:
            continue
        v = f.view
        amount = Decimal(v["amount"])
        cost += _side(v) * (Decimal(v["price"]) - f.reference) * amount
        notional += f.reference * amount
        orders.add(v["order_id"])
    return {
        "orders": len(orders),
        "cost": _money(cost, currency),
        "average_bps": _fixed(cost / notional * 10000, 2) if notional else "0.00",
    }


__all__ = [
    "EXECUTION_COLUMNS",
    "TRADE_COLUMNS",
    "Figures",
    "compute",
    "duration",
    "equity_rows",
    "exact",
    "iter_equity_rows",
    "places",
    "shown",
    "trade_rows",
    "trade_statistics",
]
