"""Figures computed from a backtest's record: profit and loss, return, drawdown,
exposure, volume, fees, slippage, the executions table and the equity curve.

All in `Decimal`, from the result's timeline, holdings, flows and fills; the charts
(engine/backtest/charts.py) draw from these, in floats, apart."""

from __future__ import annotations

from collections import Counter
from decimal import ROUND_HALF_EVEN, Decimal
from typing import TYPE_CHECKING, Any, NamedTuple

from engine.backtest.price_files import from_micros
from engine.kernel.clock import format_time
from engine.kernel.money import MARKETS

if TYPE_CHECKING:
    from engine.backtest.result import BacktestResult, Fill

ZERO = Decimal(0)
INF = 1 << 62
EQUITY_ROWS = 50_000
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


def _amount(value: Decimal, places: int = 8) -> str:
    q = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
    text = format(q, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _ratio(value: Decimal) -> str:
    return _amount(value, 6)


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
    computed) and equity.csv's columns (markets, (index, asset) of positions, currency)."""

    summary: dict[str, Any]
    executions: list[dict[str, Any]]
    equity: list[tuple[Any, ...]]
    equity_columns: tuple[list[str], list[tuple[int, str]], str]


def compute(result: BacktestResult) -> Figures:
    """The summary and tables of summary.json, executions.csv and equity.csv."""
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

    start_value = _worth(holdings[0][1], cash, valued_by, latest)
    n = len(times)
    stride = max(1, n // EQUITY_ROWS)
    base_columns = [(a, assets[a]) for a in valued_by]
    equity, max_dd, max_dd_amount, exposed_us, exposure_sum = _walk(
        times, mks, prices, holdings, cash, valued_by, list(latest), start_value, stride
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
    duration = times[-1] - times[0]

    orders = result.orders
    executions, volume_base, volume_quote, fees, slippage = _executions(result.fills)
    taker = [
        f
        for f in result.fills
        if f.reference is not None and f.order_type in ("MARKET", "STOP_MARKET")
    ]
    summary: dict[str, Any] = {
        "markets": markets,
        "start": format_time(from_micros(times[0])),
        "end": format_time(from_micros(times[-1])),
        "points": n,
        "bars": result.bars,
        "seed": result.settings.seed,
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
            "base": {k: _amount(v) for k, v in sorted(volume_base.items())},
            "quote": _amount(volume_quote),
        },
        "fees": _amount(fees),
        "starting_balances": _balances(assets, holdings[0][1]),
        "final_balances": _final_balances(result.balances),
        "starting_equity": _amount(start_value),
        "final_equity": _amount(final_value),
        "external_flows": _amount(flows_value),
        "pnl": _amount(pnl),
        "return": _ratio(pnl / start_value) if start_value > 0 else None,
        "max_drawdown": _ratio(max_dd),
        "max_drawdown_amount": _amount(max_dd_amount),
        "exposure": {
            "time": _ratio(Decimal(exposed_us) / Decimal(duration)) if duration else "0",
            "average": _ratio(exposure_sum / n),
        },
        "slippage": slippage,
        # the same figures when every fill is a market order's (a subset of equal size)
        "market_order_slippage": dict(slippage)
        if len(taker) == len(result.fills)
        else _slippage(taker),
        "unvalued_assets": unvalued,
        "errors": result.errors,
        "log_hash": result.log_hash,
    }
    return Figures(summary, executions, equity, (markets, base_columns, currency))


def equity_rows(
    raw: list[tuple[Any, ...]], columns: tuple[list[str], list[tuple[int, str]], str]
) -> list[dict[str, Any]]:
    """equity.csv's rows, as text, from the rows `compute` made."""
    markets, positions, currency = columns
    rows = []
    for t, price, m, value, peak, held, cash in raw:
        row = {
            "time": format_time(from_micros(t)),
            "price": format(price, "f"),
            "market": markets[m],
            "equity": _amount(value),
            "drawdown": _ratio((peak - value) / peak if peak > 0 else ZERO),
        }
        for a, asset in positions:
            row[f"position_{asset}"] = _amount(held[a])
        row[f"cash_{currency}"] = _amount(cash)
        rows.append(row)
    return rows


def _worth(
    held: tuple[Decimal, ...], cash: int, valued_by: dict[int, int], latest: list[Decimal]
) -> Decimal:
    """The value of a holding: its cash plus each priced asset at its market's latest price."""
    total = held[cash]
    for a, m in valued_by.items():
        if held[a]:
            total += held[a] * latest[m]
    return total


def _walk(
    times: list[int],
    mks: list[int],
    prices: list[Decimal],
    holdings: list[tuple[int, tuple[Decimal, ...]]],
    cash: int,
    valued_by: dict[int, int],
    latest: list[Decimal],
    start_value: Decimal,
    stride: int,
) -> tuple[list[tuple[Any, ...]], Decimal, Decimal, int, Decimal]:
    """The walk over every point: equity rows, deepest drawdown (ratio and amount), time
    exposed and the sum of exposures. `latest` starts at each market's first price."""
    n = len(times)
    equity_rows: list[tuple[Any, ...]] = []
    append = equity_rows.append

    # The deepest drawdown is found at the lowest value since the last peak: with the
    # peak fixed, (peak - value) / peak only grows as the value falls, so the division
    # is done for each new low, not for each point.
    peak = trough = start_value
    max_dd = ZERO
    max_dd_amount = ZERO
    exposed_us = 0
    exposure_sum = ZERO
    h = 0
    held = holdings[0][1]
    value = start_value
    last = n - 1
    changes = iter([*(c[0] for c in holdings[1:]), INF])
    next_change = next(changes)

    def holding(held: tuple[Decimal, ...]) -> tuple[bool, tuple[Decimal, int] | None]:
        """Whether a priced asset is held, and (amount, market) when only one is: the
        value is then the cash plus that amount at the market's price."""
        valued = [(held[a], m) for a, m in valued_by.items() if held[a]]
        return bool(valued), valued[0] if len(valued) == 1 else None

    cash_held = held[cash]
    position, only = holding(held)
    for i in range(n):
        t = times[i]
        changed = t >= next_change
        if changed:
            while next_change <= t:
                h += 1
                next_change = next(changes)
            held = holdings[h][1]
            cash_held = held[cash]
            position, only = holding(held)
        m = mks[i]
        latest[m] = prices[i]
        if position:
            value = (
                cash_held + only[0] * latest[only[1]]
                if only is not None
                else _worth(held, cash, valued_by, latest)
            )
        elif changed:
            value = cash_held
        if value > peak:
            peak = trough = value
        elif value < trough and peak > 0:
            trough = value
            drawdown = (peak - value) / peak
            if drawdown > max_dd:
                max_dd = drawdown
                max_dd_amount = peak - value
        if position:
            if i < last:
                exposed_us += times[i + 1] - t
            if value > 0:
                exposure_sum += (value - cash_held) / value
        if changed or i % stride == 0 or i == last:
            append((t, prices[i], m, value, peak, held, cash_held))
    return equity_rows, max_dd, max_dd_amount, exposed_us, exposure_sum


def _price_at(times: list[int], mks: list[int], prices: list[Decimal], m: int, at: int) -> Decimal:
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
    return {asset: _amount(held[a]) for a, asset in enumerate(assets) if held[a]}


def _final_balances(balances: dict[str, dict[str, Decimal]]) -> dict[str, dict[str, str]]:
    """The flow's final balances, leaving out assets whose amounts all show as 0."""
    out = {}
    for asset, kinds in balances.items():
        row = {kind: _amount(amount) for kind, amount in kinds.items()}
        if any(v != "0" for v in row.values()):
            out[asset] = row
    return out


def _executions(
    fills: list[Fill],
) -> tuple[list[dict[str, Any]], dict[str, Decimal], Decimal, Decimal, dict[str, Any]]:
    rows = []
    volume_base: dict[str, Decimal] = {}
    volume_quote = ZERO
    fees = ZERO
    for f in fills:
        v = f.view
        spec = MARKETS[v["market"]]
        amount = Decimal(v["amount"])
        price = Decimal(v["price"])
        volume_base[spec.base] = volume_base.get(spec.base, ZERO) + amount
        volume_quote += Decimal(v["gross_trade_amount"])
        fees += Decimal(v["commission"])
        bps = ""
        if f.reference:
            sign = 1 if v["side"] == "BUY" else -1
            bps = _amount(sign * (price - f.reference) / f.reference * 10000, 4)
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
                "gross_trade_amount": v["gross_trade_amount"],
                "commission": v["commission"],
                "commission_asset": v["commission_asset"],
                "liquidity": f.liquidity,
                "reference_price": format(f.reference, "f") if f.reference else "",
                "slippage_bps": bps,
            }
        )
    return rows, volume_base, volume_quote, fees, _slippage(fills)


def _slippage(fills: list[Fill]) -> dict[str, Any]:
    """Fills against the reference price when their order was placed: the cost in the
    quote asset (positive: paid more or sold for less) and its notional-weighted bps."""
    cost = ZERO
    notional = ZERO
    orders = set()
    for f in fills:
        if f.reference is None:
            continue
        v = f.view
        amount = Decimal(v["amount"])
        sign = 1 if v["side"] == "BUY" else -1
        cost += sign * (Decimal(v["price"]) - f.reference) * amount
        notional += f.reference * amount
        orders.add(v["order_id"])
    return {
        "orders": len(orders),
        "cost": _amount(cost),
        "average_bps": _amount(cost / notional * 10000, 4) if notional else "0",
    }


__all__ = ["EXECUTION_COLUMNS", "Figures", "compute", "equity_rows"]
