"""The report's HTML page: one self-contained file (inline SVG and CSS, a few lines of
script that only check the drawing), so it opens with no network."""

from __future__ import annotations

import html
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.backtest.charts import chart_data, equity_chart, position_chart, price_chart

if TYPE_CHECKING:
    from engine.backtest.result import BacktestResult

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
    """report.html: the figures, the charts, the final balances and the executions."""
    s = result.summary
    figures = [
        ("PnL", f"{s['pnl']} {s['currency']}"),
        ("Return", f"{s['return_pct']} %"),
        ("Max drawdown", f"{s['max_drawdown_pct']} % ({s['max_drawdown_amount']} {s['currency']})"),
        ("Starting equity", s["starting_equity"]),
        ("Final equity", s["final_equity"]),
        ("Exposure (time, average)", f"{s['exposure_pct']} %, {s['average_exposure_pct']} %"),
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
    plot = chart_data(result)
    charts = [price_chart(plot, m) for m in range(len(plot["markets"]))]
    charts.append(equity_chart(plot))
    charts.append(position_chart(plot))
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


__all__ = ["render_html"]
