"""The report's charts, drawn by Bokeh into the page: per market its price (candles with
volume under them for bar data, a line for trade data) with each round trip's entry and
exit joined, the equity with its running peak and the drawdown shaded between them, the
P/L of each trade at its exit, and the position held. Every chart shares one time axis
(pan, wheel zoom, box zoom, reset).

The charts only read the result: its timeline and bars, the equity rows and peak the
statistics computed, and the round trips (engine/backtest/trades.py); what they compute
is for drawing only, in floats. A page stays readable and small however long the run:
- at most MAX_CANDLES candles per market: past it, runs of consecutive bars are merged
  into one wider bar (first open, highest high, lowest low, last close, summed volume);
- at most about MAX_LINE_POINTS points per line, each bucket keeping its extremes;
- up to MAX_TRADES round trips, one glyph each; past it, the trades are aggregated per
  time bucket (TRADE_BUCKETS of them over the run): one marker per bucket at its mean
  exit, sized by its count, coloured by its net P/L.

Bokeh is imported only when a report is drawn: a run without a report never loads it."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from sandex.engine.backtest.price_files import MISSING, Bars, Decimals
from sandex.engine.backtest.statistics import EquityRows
from sandex.engine.backtest.timeline import ClosingBars
from sandex.engine.backtest.trades import Trade, round_trips

if TYPE_CHECKING:
    from sandex.engine.backtest.result import BacktestResult

MAX_CANDLES = 2_000
MAX_LINE_POINTS = 2_000
MAX_TRADES = 500
TRADE_BUCKETS = 200

P = TypeVar("P", bound=tuple[float, ...])
WIN, LOSS = "#1b8a5a", "#e5484d"
TOOLS = "xpan,xwheel_zoom,box_zoom,reset,save"


def chart_data(result: BacktestResult) -> dict[str, Any]:
    """What the charts draw, in floats, time in milliseconds (Bokeh's datetime unit)."""
    markets, times, mks, prices = result.markets, result.times, result.mks, result.prices
    _, positions, currency = result.equity_columns
    held_asset = positions[0] if positions else None
    trades = round_trips(result)
    t0, t1 = times[0], times[-1]
    series = []
    compact = _compact_bars(result)
    for m, name in enumerate(markets):
        if compact is not None:
            series.append(_candles_of_columns(compact))
            series[-1]["trades"] = _trades([t for t in trades if t.market == name], t0, t1)
            continue
        bars = [b for b, mk in zip(result.ohlc, mks, strict=False) if b is not None and mk == m]
        if bars:
            series.append(_candles(bars))
        else:
            points = [(times[i] / 1000, float(prices[i])) for i in range(len(times)) if mks[i] == m]
            line = thin(points)
            series.append(
                {"kind": "line", "time": [p[0] for p in line], "price": [p[1] for p in line]}
            )
        series[-1]["trades"] = _trades([t for t in trades if t.market == name], t0, t1)
    raw = result.raw_equity
    if isinstance(raw, EquityRows):  # arrays: floats made column by column
        at = (raw.row_times() / 1000).tolist()
        rows = thin(list(zip(at, raw.floats(3).tolist(), raw.floats(4).tolist(), strict=True)))
        amounts = [float(h[1][held_asset[0]]) for h in raw.holdings] if held_asset else []
        position = (
            thin(list(zip(at, [amounts[k] for k in raw.segs.tolist()], strict=True)))
            if held_asset
            else []
        )
    else:
        rows = thin([(r[0] / 1000, float(r[3]), float(r[4])) for r in raw])
        position = (
            thin([(r[0] / 1000, float(r[5][held_asset[0]])) for r in raw]) if held_asset else []
        )
    return {
        "markets": markets,
        "currency": currency,
        "series": series,
        "pnl": _trades(trades, t0, t1),
        "equity": {
            "time": [r[0] for r in rows],
            "equity": [r[1] for r in rows],
            "peak": [r[2] for r in rows],
        },
        "position": {"time": [p[0] for p in position], "amount": [p[1] for p in position]},
        "position_asset": held_asset[1] if held_asset else "",
    }


def thin(points: list[P], limit: int = MAX_LINE_POINTS) -> list[P]:
    """At most about `limit` points, each bucket keeping its lowest and highest (by the
    second value), so spikes and drawdowns survive."""
    if len(points) <= limit:
        return points
    size = len(points) / (limit / 2)
    out: list[P] = []
    start = 0.0
    while int(start) < len(points):
        bucket = points[int(start) : int(start + size) or int(start) + 1]
        lo = min(bucket, key=lambda p: p[1])
        hi = max(bucket, key=lambda p: p[1])
        out.extend(sorted({lo, hi}))
        start += size
    return out


def _candles(bars: list[Any]) -> dict[str, Any]:
    """The bars as candles, consecutive runs merged past MAX_CANDLES."""
    group = math.ceil(len(bars) / MAX_CANDLES)
    starts = [b.time.timestamp() * 1000 for b in bars]
    length = min((b - a for a, b in zip(starts, starts[1:], strict=False)), default=60_000.0)
    out: dict[str, Any] = {"kind": "candles", "width": length * group * 0.8}
    cols: dict[str, list[float]] = {k: [] for k in ("time", "open", "high", "low", "close")}
    volume: list[float] = []
    has_volume = any(b.volume is not None for b in bars)
    for k in range(0, len(bars), group):
        run = bars[k : k + group]
        cols["time"].append(starts[k] + length * len(run) / 2)
        cols["open"].append(float(run[0].open))
        cols["high"].append(float(max(b.high for b in run)))
        cols["low"].append(float(min(b.low for b in run)))
        cols["close"].append(float(run[-1].close))
        if has_volume:
            volume.append(float(sum(b.volume for b in run if b.volume is not None)))
    out.update(cols)
    out["volume"] = volume if has_volume else None
    return out


def _compact_bars(result: BacktestResult) -> Bars | None:
    """One market's loaded bars, when the run had them: the candles are then made from
    their columns, not from a `Bar` per bar (a million bars took ~700 MB)."""
    ohlc = result.ohlc
    if isinstance(ohlc, ClosingBars) and ohlc.one_market_of_bars():
        bars = ohlc.bars_of[0]
        return bars if isinstance(bars, Bars) and len(bars) else None
    return None


def _floats(column: Decimals) -> Any:
    """A column's values in floats (a missing one NaN)."""
    coefs = np.frombuffer(column.coefs, dtype=np.int64).astype(np.float64)
    exps = np.frombuffer(column.exps, dtype=np.int16).astype(np.float64)
    return np.where(exps == MISSING, np.nan, coefs * np.power(10.0, exps))


def _candles_of_columns(bars: Bars) -> dict[str, Any]:
    """`_candles` from the bar columns with numpy: the same candles, merged the same way."""
    n = len(bars)
    group = math.ceil(n / MAX_CANDLES)
    starts = np.frombuffer(bars.times, dtype=np.int64) / 1000
    length = float(np.diff(starts).min()) if n > 1 else 60_000.0
    firsts = np.arange(0, n, group)
    sizes = np.diff(np.append(firsts, n))
    out: dict[str, Any] = {"kind": "candles", "width": length * group * 0.8}
    out["time"] = (starts[firsts] + length * sizes / 2).tolist()
    # a column at a time, each dropped once merged: a million floats are 8 MB each
    out["open"] = _floats(bars.open)[firsts].tolist()
    out["high"] = np.maximum.reduceat(_floats(bars.high), firsts).tolist()
    out["low"] = np.minimum.reduceat(_floats(bars.low), firsts).tolist()
    out["close"] = _floats(bars.close)[firsts + sizes - 1].tolist()
    volumes = _floats(bars.volume)
    present = ~np.isnan(volumes)
    out["volume"] = (
        np.add.reduceat(np.where(present, volumes, 0.0), firsts).tolist() if present.any() else None
    )
    return out


def _trades(trades: list[Trade], t0: int, t1: int) -> dict[str, Any]:
    """The round trips one by one, or, past MAX_TRADES, per time bucket of their exits."""
    if len(trades) <= MAX_TRADES:
        return {
            "aggregated": False,
            "entry_time": [t.entry_time / 1000 for t in trades],
            "exit_time": [t.exit_time / 1000 for t in trades],
            "entry_price": [float(t.entry_price) for t in trades],
            "exit_price": [float(t.exit_price) for t in trades],
            "pnl": [float(t.pnl) for t in trades],
            "return_pct": [float(t.return_pct) for t in trades],
            "side": ["long" if t.amount > 0 else "short" for t in trades],
            "color": [WIN if t.pnl > 0 else LOSS for t in trades],
        }
    span = max(t1 - t0, 1)
    buckets: dict[int, list[Trade]] = {}
    for t in trades:
        buckets.setdefault(
            min((t.exit_time - t0) * TRADE_BUCKETS // span, TRADE_BUCKETS - 1), []
        ).append(t)
    cols: dict[str, list[Any]] = {
        k: [] for k in ("time", "price", "count", "wins", "pnl", "size", "color")
    }
    for _, group in sorted(buckets.items()):
        net = float(sum(t.pnl for t in group))
        cols["time"].append(sum(t.exit_time for t in group) / len(group) / 1000)
        cols["price"].append(float(sum(t.exit_price for t in group)) / len(group))
        cols["count"].append(len(group))
        cols["wins"].append(sum(1 for t in group if t.pnl > 0))
        cols["pnl"].append(net)
        cols["size"].append(min(6 + 2 * math.sqrt(len(group)), 30))
        cols["color"].append(WIN if net > 0 else LOSS)
    return {"aggregated": True, "width": span / TRADE_BUCKETS / 1000 * 0.9, **cols}


def layout(plot: dict[str, Any]) -> tuple[Any, int]:
    """The figures in one column sharing their time axis, and how many there are."""
    from bokeh.layouts import column
    from bokeh.models import BasicTickFormatter, ColumnDataSource, HoverTool
    from bokeh.models.annotations import Span
    from bokeh.plotting import figure

    figures: list[Any] = []

    def new(title: str, height: int, name: str) -> Any:
        shared = {"x_range": figures[0].x_range} if figures else {}
        fig = figure(
            title=title,
            height=height,
            sizing_mode="stretch_width",
            x_axis_type="datetime",
            tools=TOOLS,
            active_scroll="xwheel_zoom",
            active_drag="xpan",
            name=name,
            **shared,
        )
        fig.toolbar.logo = None
        fig.yaxis.formatter = BasicTickFormatter(use_scientific=False)
        figures.append(fig)
        return fig

    for name, s in zip(plot["markets"], plot["series"], strict=True):
        fig = new(f"{name} price, round trips joined (green: win, red: loss)", 320, "price")
        if s["kind"] == "candles":
            cols = {k: s[k] for k in ("time", "open", "high", "low", "close")}
            cols["color"] = [
                WIN if c >= o else LOSS for o, c in zip(s["open"], s["close"], strict=True)
            ]
            if s["volume"] is not None:
                cols["volume"] = s["volume"]
            src = ColumnDataSource(cols, name="candles")
            fig.segment("time", "high", "time", "low", source=src, color="color")
            fig.vbar(
                "time",
                s["width"],
                "open",
                "close",
                source=src,
                fill_color="color",
                line_color="color",
            )
            if s["volume"] is not None:
                vol = new(f"{name} volume", 110, "volume")
                vol.vbar(
                    "time",
                    s["width"],
                    "volume",
                    source=src,
                    fill_color="color",
                    line_color=None,
                    alpha=0.6,
                )
        else:
            src = ColumnDataSource({"time": s["time"], "price": s["price"]}, name="price")
            fig.line("time", "price", source=src, color="#2f6fd6", line_width=1.3)
        _draw_trades(fig, s["trades"], ColumnDataSource, HoverTool)

    eq = plot["equity"]
    fig = new(f"Equity ({plot['currency']}), drawdown shaded under its running peak", 240, "equity")
    src = ColumnDataSource(eq, name="equity")
    fig.varea(
        "time",
        "equity",
        "peak",
        source=src,
        fill_color=LOSS,
        fill_alpha=0.3,
        legend_label="drawdown",
    )
    fig.line("time", "peak", source=src, color="#8a94a6", line_dash="dashed", legend_label="peak")
    fig.line("time", "equity", source=src, color="#1b8a5a", line_width=1.5, legend_label="equity")
    fig.legend.location = "top_left"

    pnl = plot["pnl"]
    fig = new(f"P/L per trade at its exit ({plot['currency']})", 200, "pnl")
    fig.add_layout(Span(location=0, dimension="width", line_color="#8a94a6", line_dash="dashed"))
    if pnl["aggregated"]:
        fig.title.text = f"Net P/L of the trades exiting in each bucket ({plot['currency']})"
        src = ColumnDataSource(
            {k: pnl[k] for k in ("time", "pnl", "count", "wins", "color")}, name="pnl"
        )
        bars = fig.vbar(
            "time", pnl["width"], "pnl", source=src, fill_color="color", line_color=None
        )
        fig.add_tools(
            HoverTool(
                renderers=[bars],
                tooltips=[("trades", "@count"), ("wins", "@wins"), ("net P/L", "@pnl")],
            )
        )
    else:
        src = ColumnDataSource(
            {k: pnl[k] for k in ("exit_time", "pnl", "return_pct", "color")}, name="pnl"
        )
        dots = fig.scatter("exit_time", "pnl", source=src, color="color", size=7)
        fig.add_tools(
            HoverTool(renderers=[dots], tooltips=[("P/L", "@pnl"), ("return %", "@return_pct")])
        )

    if plot["position"]["time"]:
        fig = new(f"Position ({plot['position_asset']})", 160, "position")
        src = ColumnDataSource(plot["position"], name="position")
        fig.step("time", "amount", source=src, mode="after", color="#7a4fd6", line_width=1.5)
    for fig in figures[:-1]:
        fig.xaxis.visible = False
    return column(figures, sizing_mode="stretch_width"), len(figures)


def _draw_trades(fig: Any, trades: dict[str, Any], source: Any, hover: Any) -> None:
    if trades["aggregated"]:
        src = source(
            {k: trades[k] for k in ("time", "price", "count", "wins", "pnl", "size", "color")},
            name="trades",
        )
        dots = fig.scatter("time", "price", source=src, size="size", color="color", alpha=0.6)
        fig.add_tools(
            hover(
                renderers=[dots],
                tooltips=[("trades", "@count"), ("wins", "@wins"), ("net P/L", "@pnl")],
            )
        )
        return
    cols = {k: v for k, v in trades.items() if k != "aggregated"}
    cols["marker"] = ["triangle" if s == "long" else "inverted_triangle" for s in trades["side"]]
    src = source(cols, name="trades")
    fig.segment(
        "entry_time",
        "entry_price",
        "exit_time",
        "exit_price",
        source=src,
        color="color",
        line_width=2,
    )
    fig.scatter("entry_time", "entry_price", source=src, marker="marker", size=9, color="color")
    exits = fig.scatter(
        "exit_time", "exit_price", source=src, marker="circle", size=7, color="color"
    )
    fig.add_tools(
        hover(
            renderers=[exits],
            tooltips=[("P/L", "@pnl"), ("return %", "@return_pct"), ("side", "@side")],
        )
    )


__all__ = [
    "MAX_CANDLES",
    "MAX_LINE_POINTS",
    "MAX_TRADES",
    "TRADE_BUCKETS",
    "chart_data",
    "layout",
    "thin",
]
