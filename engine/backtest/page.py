"""The report's HTML page: one self-contained file (Bokeh's script and the charts' data
inline, no CDN), so it opens with no network: the figures, the charts
(engine/backtest/charts.py), the final balances and the executions."""

from __future__ import annotations

import html
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sandex.engine.backtest.charts import chart_data, layout
from sandex.engine.backtest.statistics import shown as rounded

if TYPE_CHECKING:
    from sandex.engine.backtest.result import BacktestResult

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2430;background:#fff;height:auto}
h1{font-size:20px;margin:0 0 4px}p.sub{color:#5b6678;margin:0 0 16px}
table{border-collapse:collapse;margin:8px 0 20px}td,th{padding:3px 10px;border-bottom:1px solid #e3e7ee;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
"""

# Before Bokeh loads: keep every script error, for the checks below and a test to read.
_TRAP = """
window.reportErrors=[];addEventListener('error',function(e){reportErrors.push(String(e.message))});
"""

# Once Bokeh has drawn: count the figures (inside its shadow roots) whose canvas has
# a size and painted pixels other than the background, and write that count and any
# script error on the report's first element, where a headless browser's DOM dump shows them.
_CHECK = """
(function(){var tries=0;function figures(root,out){root.querySelectorAll('*').forEach(
function(el){if(el.classList.contains('bk-Figure'))out.push(el);if(el.shadowRoot)figures(el.shadowRoot,out)});
return out}
function painted(fig){var found=false;(function walk(r){
r.querySelectorAll('canvas').forEach(function(c){if(found||!c.width||!c.height)return;
var d=c.getContext('2d').getImageData(0,0,c.width,c.height).data;
for(var i=0;i<d.length;i+=4){if(d[i+3]&&(d[i]<240||d[i+1]<240||d[i+2]<240)){found=true;break}}});
r.querySelectorAll('*').forEach(function(e){if(e.shadowRoot)walk(e.shadowRoot)})})(fig.shadowRoot||fig);
return found}
function check(){var figs=figures(document,[]),n=figs.filter(painted).length,b=document.getElementById('report');
b.setAttribute('data-charts-drawn',String(n));b.setAttribute('data-script-errors',String(reportErrors.length));
if(reportErrors.length)b.setAttribute('data-script-error-text',reportErrors.join(' | '));
if(n<Number(b.getAttribute('data-charts'))&&++tries<100)setTimeout(check,100)}
addEventListener('load',function(){setTimeout(check,100)})})();
"""

# Bokeh's page (bokeh.core.templates.FILE) with the report around its charts.
_TEMPLATE = """
{% block preamble %}<script>{{ trap | safe }}</script>{% endblock %}
{% block postamble %}<style>{{ page_css | safe }}</style>{% endblock %}
{% block inner_body %}<div id="report" data-charts="{{ figures }}">{{ header | safe }}</div>{{ super() }}{{ footer | safe }}
<script>{{ check | safe }}</script>{% endblock %}
"""


def _rows(pairs: list[tuple[str, Any]]) -> str:
    return "".join(
        f"<tr><th>{html.escape(k)}</th><td class='n'>{html.escape(str(v))}</td></tr>"
        for k, v in pairs
    )


def _shown(value: Any) -> str:
    """A figure's text; an undefined one (no trades, no variance) as a dash."""
    return "—" if value is None else str(value)


def _pct(value: Any) -> str:
    return "—" if value is None else f"{value} %"


def render_html(result: BacktestResult) -> str:
    """report.html: the figures, the charts, the final balances and the executions."""
    s = result.summary
    t = s["trades"]
    figures = [
        ("PnL", f"{s['pnl']} {s['currency']}"),
        ("Return", _pct(s["return_pct"])),
        ("Buy and hold return", _pct(s["buy_and_hold_return_pct"])),
        ("CAGR", _pct(s["cagr_pct"])),
        ("Volatility (annualised)", _pct(s["volatility_pct"])),
        (
            "Sharpe, Sortino, Calmar",
            ", ".join(_shown(s[k]) for k in ("sharpe", "sortino", "calmar")),
        ),
        ("Max drawdown", f"{s['max_drawdown_pct']} % ({s['max_drawdown_amount']} {s['currency']})"),
        ("Max drawdown duration", _shown(s["max_drawdown_duration"])),
        ("Trades (closed, open)", f"{t['count']}, {t['open']}"),
        ("Win rate", _pct(t["win_rate_pct"])),
        ("Profit factor", _shown(t["profit_factor"])),
        (
            "Trade: average, best, worst",
            ", ".join(_pct(t[k]) for k in ("avg_trade_pct", "best_trade_pct", "worst_trade_pct")),
        ),
        ("Expectancy (per trade)", f"{_shown(t['expectancy'])} {s['currency']}"),
        (
            "Trade duration: average, longest",
            f"{_shown(t['avg_duration'])}, {_shown(t['max_duration'])}",
        ),
        ("Starting equity", s["starting_equity"]),
        ("Final equity", s["final_equity"]),
        ("Exposure (time, average)", f"{s['exposure_pct']} %, {s['average_exposure_pct']} %"),
        ("Orders", s["orders"]["total"]),
        ("Orders by status", ", ".join(f"{k} {v}" for k, v in s["orders"]["by_status"].items())),
        ("Executions", s["executions"]),
        ("Volume", f"{rounded(s['volume']['quote'], s['currency'])} {s['currency']}"),
        ("Fees", f"{rounded(s['fees'], s['currency'])} {s['currency']}"),
        (
            "Slippage",
            f"{s['slippage']['average_bps']} bps, {s['slippage']['cost']} {s['currency']}"
            f" ({s['slippage']['measure']})",
        ),
        ("Points", s["points"]),
        ("Log hash", s["log_hash"]),
    ]
    shown = result.executions[:500]
    execution_rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(value))}</td>"
            for value in (
                e["executed_at"],
                e["side"],
                e["order_type"],
                e["amount"],
                e["price"],
                rounded(e["commission"], e["commission_asset"]),
                e["slippage_bps"],
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
            (k, ", ".join(f"{kk} {rounded(vv, k)}" for kk, vv in v.items()))
            for k, v in s["final_balances"].items()
        ]
    )
    title = f"Backtest {' '.join(s['markets'])} {s['start'][:10]} to {s['end'][:10]}"
    header = (
        f"<h1>{html.escape(title)}</h1>"
        f"<p class='sub'>sandex backtest, seed {s['seed']}, {_generated(s)}</p>"
        f"<table>{_rows(figures)}</table>"
    )
    footer = (
        f"<h2>Final balances</h2><table>{balances}</table>"
        "<h2>Executions</h2><table><tr><th>time</th><th>side</th><th>type</th><th>amount</th>"
        "<th>price</th><th>fee</th><th>slippage bps</th></tr>" + execution_rows + "</table>" + more
    )
    return _page(result, title, header, footer)


def _page(result: BacktestResult, title: str, header: str, footer: str) -> str:
    """Bokeh's standalone page, its script inline (bokeh.resources.INLINE: only the
    bundles the charts use), the report's tables around the charts."""
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    charts, count = layout(chart_data(result))
    return file_html(
        charts,
        INLINE,
        title,
        template=_TEMPLATE,
        template_variables={
            "page_css": _CSS,
            "trap": _TRAP,
            "header": header,
            "footer": footer,
            "check": _CHECK,
            "figures": count,
        },
    )


def _generated(summary: dict[str, Any]) -> str:
    """The data's span, not the wall clock: the page says nothing of when it was made."""
    start = datetime.fromisoformat(summary["start"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(summary["end"].replace("Z", "+00:00"))
    return f"over {end - start} of data"


__all__ = ["render_html"]
