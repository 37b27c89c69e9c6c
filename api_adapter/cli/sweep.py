"""`sandex sweep`: one strategy over many parameter sets (a grid or an Optuna search),
each a backtest of its own, on local processes or a Dask cluster; sweep.csv and a
heatmap."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def sweep(args: argparse.Namespace) -> int:
    """`sandex sweep`: 0 with the table written (failed runs are rows), 2 when the sweep
    cannot be made."""
    from sandex.api_adapter.cli.errors import require_extra

    require_extra("sweep", "sandex sweep")  # said before any run, not after them
    from sandex.api_adapter.cli.run_options import Usage, pairs, run_options
    from sandex.api_adapter.problem_types import domain_problem_body
    from sandex.engine.backtest import BacktestError, Search
    from sandex.engine.backtest import sweep as run_sweep

    try:
        options = run_options(args)
        params = pairs(args.param, "--param", "NAME=VALUE")
        grid = pairs(args.grid, "--grid", "NAME=A,B,C or NAME=LOW:HIGH:STEP")
        ranges = pairs(args.range, "--range", "NAME=LOW:HIGH[:STEP] or NAME=A,B,C")
        if (args.optuna is None) == (not grid):
            raise Usage("give --grid NAME=VALUES, or --optuna N with --range NAME=LOW:HIGH")
        if ranges and args.optuna is None:
            raise Usage("--range is for an Optuna search (--optuna N)")
        heatmap = None
        if args.heatmap:
            heatmap = [p.strip() for p in args.heatmap.split(",")]
    except Usage as exc:
        print(f"sandex: {exc}", file=sys.stderr)
        return 2
    search = None
    if args.optuna is not None:
        search = Search(
            trials=args.optuna,
            ranges=ranges,
            metric=args.minimize or args.maximize or "sharpe",
            maximize=args.minimize is None,
            seed=args.search_seed,
            batch=args.batch,
        )
    try:
        result = run_sweep(
            args.strategy,
            args.data,
            args.market,
            grid=grid or None,
            search=search,
            params=params or None,
            executor=args.executor,
            n_jobs=args.jobs,
            scheduler=args.scheduler,
            db_dir=args.db_dir,
            out=args.out,
            heatmap=heatmap,
            metric=args.metric,
            problems=domain_problem_body,
            **options,
        )
    except BacktestError as exc:
        print(f"sandex: {exc}", file=sys.stderr)
        return 2
    failed = result.errors
    print(f"{len(result.rows)} runs, {len(failed)} failed")
    if failed:
        print(f"  first failure: {failed[0].params}: {failed[0].error}")
    best = result.best
    if best is not None:
        print(f"  best {result.metric} {getattr(best, result.metric)}: {best.params}")
    for path in result.files:
        print(f"  {Path(path)}")
    return 0
