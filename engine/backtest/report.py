"""The report of a backtest: figures, executions, the equity curve and an HTML page.

Figures are computed in `Decimal` from the run's fills, holdings and price points;
floats appear only in the page's drawing. The page is self-contained (inline SVG and
CSS, a few lines of script that only check the drawing), so it opens with no network.
"""

from __future__ import annotations

import csv
import html
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from engine.backtest.price_files import Series, from_micros
from engine.config.settings import Settings
from engine.domain.trading import trading_state
from engine.kernel.clock import format_time
from engine.kernel.money import MARKETS

ZERO = Decimal(0)
INF = 1 << 62
RATIO = Decimal("0.000001")
EQUITY_ROWS = 50_000
PLOT_POINTS = 1200
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


@dataclass
class BacktestResult:
    summary: dict[str, Any]
    executions: list[dict[str, Any]]
    log_hash: str
    db: str | None
    # Equity rows as computed (time, price, market, equity, peak, holdings, cash), made
    # into text only when asked for (most runs never are).
    raw_equity: list[tuple[Any, ...]] = field(default_factory=list, repr=False)
    equity_columns: tuple[list[str], list[tuple[int, str]], str] = ([], [], "")
    # What the page's charts are drawn from, turned into floats only when it is drawn.
    plot_source: dict[str, Any] = field(default_factory=dict, repr=False)
    _equity: list[dict[str, Any]] | None = field(default=None, repr=False)
    _plot: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def equity(self) -> list[dict[str, Any]]:
        """equity.csv's rows: time, price, market, equity, drawdown, positions, cash."""
        if self._equity is None:
            markets, positions, currency = self.equity_columns
            rows = []
            for t, price, m, value, peak, held, cash in self.raw_equity:
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
            self._equity = rows
        return self._equity

    @property
    def plot(self) -> dict[str, Any]:
        """The charts' data in floats (they are drawn, never reported)."""
        if self._plot is None:
            self._plot = _plot(self)
        return self._plot

    def write(self, out: str | Path) -> Path:
        """summary.json, executions.csv, equity.csv and report.html in `out`."""
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")
        _csv(folder / "executions.csv", self.executions, EXECUTION_COLUMNS)
        columns = list(self.equity[0]) if self.equity else ["time", "equity"]
        _csv(folder / "equity.csv", self.equity, columns)
        (folder / "report.html").write_text(render_html(self))
        return folder


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


def _csv(path: Path, rows: list[dict[str, Any]], columns: list[str]) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def build_result(
    runner: Any,
    series: dict[str, Series],
    settings: Settings,
    log_hash: str,
    db: str | None,
    errors: list[dict[str, Any]],
) -> BacktestResult:
    markets: list[str] = runner.markets
    currency = MARKETS[markets[0]].quote
    assets: list[str] = runner.assets
    # Each asset is valued through the run's market that prices it in the currency.
    valued_by: dict[int, int] = {}
    for a, asset in enumerate(assets):
        for m, name in enumerate(markets):
            spec = MARKETS[name]
            if spec.base == asset and spec.quote == currency:
                valued_by[a] = m
    cash = assets.index(currency)
    unvalued = [asset for a, asset in enumerate(assets) if a != cash and a not in valued_by]

    times, mks, prices = runner.times, runner.mks, runner.prices
    holdings = runner.holdings
    latest = [prices[runner.mks.index(m)] for m in range(len(markets))]

    start_value = _worth(holdings[0][1], cash, valued_by, latest)
    n = len(times)
    stride = max(1, n // EQUITY_ROWS)
    base_columns = [(a, assets[a]) for a in valued_by]
    equity_rows, max_dd, max_dd_amount, exposed_us, exposure_sum = _walk(
        times, mks, prices, holdings, cash, valued_by, list(latest), start_value, stride
    )
    for m in range(len(markets)):  # the latest price of each market, for the final value
        latest[m] = prices[len(mks) - 1 - mks[::-1].index(m)]
    final_held = holdings[-1][1]
    final_value = _worth(final_held, cash, valued_by, latest)
    flows_value = ZERO
    for at, asset, amount in runner.flows:
        if asset == currency:
            flows_value += amount
        elif asset in assets and assets.index(asset) in valued_by:
            m = valued_by[assets.index(asset)]
            flows_value += amount * _price_at(times, mks, prices, m, at)
    pnl = final_value - start_value - flows_value
    duration = times[-1] - times[0]

    tr = trading_state(runner.engine.state)
    orders = [o for o in tr.orders.values() if o.profile_id == runner.profile_id]
    executions, volume_base, volume_quote, fees, slippage = _executions(runner.fills)
    taker = [
        f
        for f in runner.fills
        if f.reference is not None and f.order_type in ("MARKET", "STOP_MARKET")
    ]
    summary: dict[str, Any] = {
        "markets": markets,
        "start": format_time(from_micros(times[0])),
        "end": format_time(from_micros(times[-1])),
        "points": n,
        "bars": sum(len(s.bars) for s in series.values()),
        "seed": settings.seed,
        "settings": {
            k: (format(v, "f") if isinstance(v, Decimal) else v)
            for k, v in settings.model_dump().items()
            if k in SETTINGS_SHOWN
        },
        "currency": currency,
        "orders": {
            "total": len(orders),
            "by_status": dict(sorted(Counter(o.status for o in orders).items())),
            "by_type": dict(sorted(Counter(o.type for o in orders).items())),
        },
        "executions": len(executions),
        "volume": {
            "base": {k: _amount(v) for k, v in sorted(volume_base.items())},
            "quote": _amount(volume_quote),
        },
        "fees": _amount(fees),
        "starting_balances": _balances(assets, holdings[0][1]),
        "final_balances": _final_balances(runner, assets),
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
        if len(taker) == len(runner.fills)
        else _slippage(taker),
        "unvalued_assets": unvalued,
        "errors": errors,
        "log_hash": log_hash,
    }
    source = {
        "markets": markets,
        "times": times,
        "mks": mks,
        "prices": prices,
        "executions": executions,
        "position_asset": base_columns[0] if base_columns else None,
        "currency": currency,
    }
    result = BacktestResult(summary, executions, log_hash, db, equity_rows)
    result.plot_source = source
    result.equity_columns = (markets, base_columns, currency)
    return result


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


def _plot(result: BacktestResult) -> dict[str, Any]:
    source = result.plot_source
    markets, times, mks, prices = (source[k] for k in ("markets", "times", "mks", "prices"))
    held_asset = source["position_asset"]
    rows = result.raw_equity
    return {
        "markets": markets,
        "prices": [
            [(times[i], float(prices[i])) for i in range(len(times)) if mks[i] == m]
            for m in range(len(markets))
        ],
        "fills": [
            (markets.index(e["market"]), e["executed_at"], float(Decimal(e["price"])), e["side"])
            for e in source["executions"]
            if e["market"] in markets
        ],
        "equity": [(r[0], float(r[3])) for r in rows],
        "position": [(r[0], float(r[5][held_asset[0]])) for r in rows] if held_asset else [],
        "position_asset": held_asset[1] if held_asset else "",
        "currency": source["currency"],
    }


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


def _final_balances(runner: Any, assets: list[str]) -> dict[str, dict[str, str]]:
    ledger = runner.engine.state.ledger
    pid = runner.profile_id
    out = {}
    for asset in sorted({a for (acct, a) in ledger.balances if acct.startswith(pid + ":")}):
        row = {
            kind: _amount(ledger.balance(f"{pid}:{kind}", asset))
            for kind in ("available", "trading", "withdrawing")
        }
        if any(v != "0" for v in row.values()):
            out[asset] = row
    return out


def _executions(
    fills: list[Any],
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


def _slippage(fills: list[Any]) -> dict[str, Any]:
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


# -- the page ------------------------------------------------------------------------------

_W, _H = 960, 260
_PAD_L, _PAD_R, _PAD_T, _PAD_B = 80, 20, 16, 28


def _thin(points: list[tuple[int, float]], limit: int = PLOT_POINTS) -> list[tuple[int, float]]:
    """At most about `limit` points keeping each bucket's extremes, so spikes survive."""
    if len(points) <= limit:
        return points
    size = len(points) / (limit / 2)
    out: list[tuple[int, float]] = []
    start = 0.0
    while int(start) < len(points):
        bucket = points[int(start) : int(start + size) or int(start) + 1]
        lo = min(bucket, key=lambda p: p[1])
        hi = max(bucket, key=lambda p: p[1])
        out.extend(sorted({lo, hi}))
        start += size
    return out


class _Frame:
    def __init__(self, t0: int, t1: int, lo: float, hi: float) -> None:
        if hi <= lo:
            hi, lo = hi + 1.0, lo - 1.0
        margin = (hi - lo) * 0.05
        self.t0, self.t1 = t0, max(t1, t0 + 1)
        self.lo, self.hi = lo - margin, hi + margin

    def x(self, t: int) -> float:
        return _PAD_L + (t - self.t0) / (self.t1 - self.t0) * (_W - _PAD_L - _PAD_R)

    def y(self, v: float) -> float:
        return _PAD_T + (self.hi - v) / (self.hi - self.lo) * (_H - _PAD_T - _PAD_B)

    def axes(self) -> str:
        parts = [
            f'<rect x="{_PAD_L}" y="{_PAD_T}" width="{_W - _PAD_L - _PAD_R}"'
            f' height="{_H - _PAD_T - _PAD_B}" class="frame"/>'
        ]
        for k in range(5):
            v = self.lo + (self.hi - self.lo) * (k + 0.5) / 5
            y = self.y(v)
            parts.append(
                f'<line x1="{_PAD_L}" x2="{_W - _PAD_R}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            )
            parts.append(
                f'<text x="{_PAD_L - 6}" y="{y + 4:.1f}" class="ylabel">{_short(v)}</text>'
            )
        for k in range(5):
            t = self.t0 + (self.t1 - self.t0) * k // 4
            x = self.x(t)
            label = format_time(from_micros(t))[:16].replace("T", " ")
            anchor = "start" if k == 0 else "end" if k == 4 else "middle"
            parts.append(
                f'<text x="{x:.1f}" y="{_H - 8}" class="xlabel" text-anchor="{anchor}">{label}</text>'
            )
        return "".join(parts)


def _short(v: float) -> str:
    a = abs(v)
    if a >= 1_000_000:
        return f"{v / 1_000_000:.2f}M"
    if a >= 10_000:
        return f"{v / 1000:.1f}k"
    if a >= 100:
        return f"{v:.0f}"
    return f"{v:.4g}"


def _path(frame: _Frame, points: list[tuple[int, float]], step: bool = False) -> str:
    out = []
    prev_y = None
    for k, (t, v) in enumerate(points):
        x, y = frame.x(t), frame.y(v)
        if k == 0:
            out.append(f"M{x:.1f},{y:.1f}")
        elif step:
            out.append(f"H{x:.1f}V{y:.1f}" if prev_y is not None else f"L{x:.1f},{y:.1f}")
        else:
            out.append(f"L{x:.1f},{y:.1f}")
        prev_y = y
    return "".join(out)


def _svg(title: str, body: str, kind: str) -> str:
    return (
        f"<figure><figcaption>{html.escape(title)}</figcaption>"
        f'<svg class="chart" data-chart="{kind}" viewBox="0 0 {_W} {_H}" width="{_W}"'
        f' height="{_H}" xmlns="http://www.w3.org/2000/svg" role="img">{body}</svg></figure>'
    )


def _price_chart(result: BacktestResult, m: int) -> str:
    plot = result.plot
    series = plot["prices"][m]
    t0 = min(s[0][0] for s in plot["prices"] if s)
    t1 = max(s[-1][0] for s in plot["prices"] if s)
    fills = [f for f in plot["fills"] if f[0] == m]
    values = [v for _, v in series] + [f[2] for f in fills]
    frame = _Frame(t0, t1, min(values), max(values))
    body = [frame.axes(), f'<path d="{_path(frame, _thin(series))}" class="price"/>']
    for _, at, price, side in fills:
        from engine.backtest.price_files import parse_timestamp

        x, y = frame.x(parse_timestamp(at)), frame.y(price)
        if side == "BUY":
            pts = f"{x:.1f},{y - 1:.1f} {x - 5:.1f},{y + 8:.1f} {x + 5:.1f},{y + 8:.1f}"
            body.append(f'<polygon points="{pts}" class="buy"><title>BUY {price}</title></polygon>')
        else:
            pts = f"{x:.1f},{y + 1:.1f} {x - 5:.1f},{y - 8:.1f} {x + 5:.1f},{y - 8:.1f}"
            body.append(
                f'<polygon points="{pts}" class="sell"><title>SELL {price}</title></polygon>'
            )
    name = plot["markets"][m]
    return _svg(f"{name} reference price, buys ▲ and sells ▼", "".join(body), "price")


def _equity_chart(result: BacktestResult) -> str:
    points = _thin(result.plot["equity"])
    t0, t1 = points[0][0], points[-1][0]
    values = [v for _, v in points]
    frame = _Frame(t0, t1, min(values), max(values))
    peak = values[0]
    under = []
    for t, v in points:
        peak = max(peak, v)
        under.append((t, peak))
    area = (
        _path(frame, points)
        + "".join(f"L{frame.x(t):.1f},{frame.y(v):.1f}" for t, v in reversed(under))
        + "Z"
    )
    body = (
        frame.axes()
        + f'<path d="{area}" class="drawdown"/>'
        + f'<path d="{_path(frame, points)}" class="equity"/>'
    )
    currency = result.plot["currency"]
    return _svg(f"Equity ({currency}), drawdown shaded", body, "equity")


def _position_chart(result: BacktestResult) -> str:
    points = result.plot["position"]
    if not points:
        return ""
    points = _thin(points)
    values = [v for _, v in points]
    frame = _Frame(points[0][0], points[-1][0], min(0.0, *values), max(0.0, *values))
    zero = frame.y(0.0)
    body = (
        frame.axes()
        + f'<line x1="{_PAD_L}" x2="{_W - _PAD_R}" y1="{zero:.1f}" y2="{zero:.1f}" class="zero"/>'
        + f'<path d="{_path(frame, points, step=True)}" class="position"/>'
    )
    return _svg(f"Position ({result.plot['position_asset']})", body, "position")


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2430;background:#fff}
h1{font-size:20px;margin:0 0 4px}p.sub{color:#5b6678;margin:0 0 16px}
table{border-collapse:collapse;margin:8px 0 20px}td,th{padding:3px 10px;border-bottom:1px solid #e3e7ee;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:0 0 18px}figcaption{font-weight:600;margin-bottom:4px}
.frame{fill:#fafbfd;stroke:#c9d0db}.grid{stroke:#e6e9ef}.zero{stroke:#8a94a6;stroke-dasharray:4 3}
.ylabel{font-size:11px;fill:#5b6678;text-anchor:end}.xlabel{font-size:11px;fill:#5b6678}
.price{fill:none;stroke:#2f6fd6;stroke-width:1.3}.equity{fill:none;stroke:#1b8a5a;stroke-width:1.5}
.drawdown{fill:#e5484d;fill-opacity:.25;stroke:none}.position{fill:none;stroke:#7a4fd6;stroke-width:1.5}
.buy{fill:#1b8a5a}.sell{fill:#e5484d}
"""

# Checks, once the page is laid out, that each chart drew something; a test reads the
# result from the DOM of a headless browser.
_CHECK = """
addEventListener('load',function(){var n=0;document.querySelectorAll('svg.chart').forEach(
function(s){var b=s.getBoundingClientRect(),p=s.querySelector('path.price,path.equity,path.position');
if(b.width>0&&b.height>0&&p&&p.getTotalLength()>0){n++;s.setAttribute('data-drawn','yes')}});
document.body.setAttribute('data-charts-drawn',String(n))});
"""


def _rows(pairs: list[tuple[str, Any]]) -> str:
    return "".join(
        f"<tr><th>{html.escape(k)}</th><td class='n'>{html.escape(str(v))}</td></tr>"
        for k, v in pairs
    )


def render_html(result: BacktestResult) -> str:
    s = result.summary
    figures = [
        ("PnL", f"{s['pnl']} {s['currency']}"),
        ("Return", s["return"]),
        ("Max drawdown", f"{s['max_drawdown']} ({s['max_drawdown_amount']} {s['currency']})"),
        ("Starting equity", s["starting_equity"]),
        ("Final equity", s["final_equity"]),
        ("Exposure (time, average)", f"{s['exposure']['time']}, {s['exposure']['average']}"),
        ("Orders", s["orders"]["total"]),
        ("Orders by status", ", ".join(f"{k} {v}" for k, v in s["orders"]["by_status"].items())),
        ("Executions", s["executions"]),
        ("Volume", f"{s['volume']['quote']} {s['currency']}"),
        ("Fees", f"{s['fees']} {s['currency']}"),
        (
            "Slippage",
            f"{s['slippage']['average_bps']} bps, {s['slippage']['cost']} {s['currency']}",
        ),
        ("Points", s["points"]),
        ("Log hash", s["log_hash"]),
    ]
    charts = [_price_chart(result, m) for m in range(len(result.plot["markets"]))]
    charts.append(_equity_chart(result))
    charts.append(_position_chart(result))
    shown = result.executions[:500]
    execution_rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(e[c]))}</td>"
            for c in (
                "executed_at",
                "side",
                "order_type",
                "amount",
                "price",
                "commission",
                "slippage_bps",
            )
        )
        + "</tr>"
        for e in shown
    )
    more = (
        f"<p>{len(result.executions) - len(shown)} more in executions.csv</p>"
        if len(result.executions) > len(shown)
        else ""
    )
    balances = _rows(
        [
            (k, ", ".join(f"{kk} {vv}" for kk, vv in v.items()))
            for k, v in s["final_balances"].items()
        ]
    )
    title = f"Backtest {' '.join(s['markets'])} {s['start'][:10]} to {s['end'][:10]}"
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        f"<p class='sub'>sandex backtest, seed {s['seed']}, {_generated(s)}</p>"
        f"<table>{_rows(figures)}</table>"
        + "".join(charts)
        + f"<h2>Final balances</h2><table>{balances}</table>"
        + "<h2>Executions</h2><table><tr><th>time</th><th>side</th><th>type</th><th>amount</th>"
        "<th>price</th><th>fee</th><th>slippage bps</th></tr>"
        + execution_rows
        + "</table>"
        + more
        + f"<script>{_CHECK}</script></body></html>\n"
    )


def _generated(summary: dict[str, Any]) -> str:
    """The data's span, not the wall clock: the same run gives the same page."""
    start = datetime.fromisoformat(summary["start"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(summary["end"].replace("Z", "+00:00"))
    return f"over {end - start} of data"


__all__ = ["BacktestResult", "build_result", "render_html"]
