"""The report's charts: their data, in floats (they are drawn, never reported), and
the inline SVG of the price with its fills, the equity curve with its drawdown shaded
and the position over time."""

from __future__ import annotations

import html
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from engine.backtest.price_files import from_micros, parse_timestamp
from engine.kernel.clock import format_time

if TYPE_CHECKING:
    from engine.backtest.result import BacktestResult

PLOT_POINTS = 1200


def chart_data(result: BacktestResult) -> dict[str, Any]:
    """What the charts draw, from the result's timeline, executions and equity rows."""
    markets, times, mks, prices = result.markets, result.times, result.mks, result.prices
    _, positions, currency = result.equity_columns
    held_asset = positions[0] if positions else None
    rows = result.raw_equity
    return {
        "markets": markets,
        "prices": [
            [(times[i], float(prices[i])) for i in range(len(times)) if mks[i] == m]
            for m in range(len(markets))
        ],
        "fills": [
            (markets.index(e["market"]), e["executed_at"], float(Decimal(e["price"])), e["side"])
            for e in result.executions
            if e["market"] in markets
        ],
        "equity": [(r[0], float(r[3])) for r in rows],
        "position": [(r[0], float(r[5][held_asset[0]])) for r in rows] if held_asset else [],
        "position_asset": held_asset[1] if held_asset else "",
        "currency": currency,
    }


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


def price_chart(plot: dict[str, Any], m: int) -> str:
    """Market `m`'s reference price, its buys and sells marked."""
    series = plot["prices"][m]
    t0 = min(s[0][0] for s in plot["prices"] if s)
    t1 = max(s[-1][0] for s in plot["prices"] if s)
    fills = [f for f in plot["fills"] if f[0] == m]
    values = [v for _, v in series] + [f[2] for f in fills]
    frame = _Frame(t0, t1, min(values), max(values))
    body = [frame.axes(), f'<path d="{_path(frame, _thin(series))}" class="price"/>']
    for _, at, price, side in fills:
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


def equity_chart(plot: dict[str, Any]) -> str:
    """The equity curve, the drawdown under its running peak shaded."""
    points = _thin(plot["equity"])
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
    currency = plot["currency"]
    return _svg(f"Equity ({currency}), drawdown shaded", body, "equity")


def position_chart(plot: dict[str, Any]) -> str:
    """The position held over time; none when no priced asset is held."""
    points = plot["position"]
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
    return _svg(f"Position ({plot['position_asset']})", body, "position")


__all__ = ["chart_data", "equity_chart", "position_chart", "price_chart"]
