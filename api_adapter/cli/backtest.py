"""`sandex backtest`: an order flow or a strategy over historical prices, and its report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def backtest(args: argparse.Namespace) -> int:
    """`sandex backtest`: 0 with a summary, 2 when the run cannot be made."""
    from sandex.api_adapter.cli.progress import progress_bar
    from sandex.api_adapter.cli.run_options import Usage, pairs, run_options
    from sandex.api_adapter.problem_types import domain_problem_body
    from sandex.engine.backtest import ApiError, BacktestError, run
    from sandex.engine.backtest.statistics import shown as rounded

    try:
        options = run_options(args)
        params = pairs(args.param, "--param", "NAME=VALUE")
    except Usage as exc:
        print(f"sandex: {exc}", file=sys.stderr)
        return 2
    if params and args.flow:
        print("sandex: --param sets a --strategy's parameters; a flow has none", file=sys.stderr)
        return 2
    with progress_bar("backtest", "prices", off=args.no_progress) as shown:
        try:
            result = run(
                args.data,
                args.market,
                strategy=args.strategy,
                flow=args.flow,
                db=args.db,
                out=args.out,
                progress=shown,
                problems=domain_problem_body,
                params=params or None,
                **options,
            )
        except (BacktestError, ApiError) as exc:
            print(f"sandex: {exc}", file=sys.stderr)
            return 2
    s = result.summary
    t = s["trades"]
    print(
        f"{' '.join(s['markets'])} {s['start']} .. {s['end']}: {s['points']} points,"
        f" {s['orders']['total']} orders, {s['executions']} executions\n"
        f"  pnl {s['pnl']} {s['currency']} (return {_shown(s['return_pct'], '%')}),"
        f" max drawdown {_shown(s['max_drawdown_pct'], '%')}, Sharpe {_shown(s['sharpe'])},"
        f" fees {rounded(s['fees'], s['currency'])} {s['currency']}\n"
        f"  trades {t['count']} closed, {t['open']} open,"
        f" win rate {_shown(t['win_rate_pct'], '%')}\n"
        f"  log {s['log_hash']}"
    )
    if s["errors"]:
        print(f"  {len(s['errors'])} flow steps were refused; see summary.json")
    if args.out:
        print(f"  report: {Path(args.out) / 'report.html'}")
    return 0


def _shown(figure: str | None, unit: str = "") -> str:
    """A summary figure as printed: `n/a` when it is undefined (no variance, no trade)."""
    return "n/a" if figure is None else f"{figure}{' ' + unit if unit else ''}"
