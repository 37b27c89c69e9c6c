"""Sweeps: one strategy over the same data with many parameter sets, each set a backtest
of its own (a grid's every combination, or an Optuna search's trials), run on an executor
(engine/backtest/executors.py), gathered in one table and a heatmap.

Runs are independent: each opens its own engine over its own log (a temporary file,
dropped, unless `db_dir` keeps one per combination) and answers a small `SweepRow`, not its
whole result; a combination that raises is a row with its error, not the sweep's end. A
run depends only on its data, parameters and settings, so its row and log hash are the
same whatever the executor."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from sandex.engine.backtest import executors
from sandex.engine.backtest.errors import BacktestError
from sandex.engine.backtest.grid import combinations
from sandex.engine.backtest.search import Search, optimize, parse_ranges
from sandex.engine.backtest.strategy import parse_params, strategy_class
from sandex.engine.kernel.money import MARKETS

# The figures of a row, in sweep.csv's order after the parameters.
METRICS = ("return_pct", "sharpe", "max_drawdown_pct", "trades")
COLUMNS = (*METRICS, "log_hash", "error")
# `run`'s settings a sweep passes to every run, as `sandex backtest` takes them.
RUN_OPTIONS = frozenset(
    {
        "deposits",
        "maker_fee",
        "taker_fee",
        "spread_bps",
        "levels",
        "level_step_bps",
        "level_notional",
        "settings",
        "seed",
        "bar_seconds",
        "fill_at",
        "problems",
    }
)


@dataclass(frozen=True)
class SweepRow:
    """One run of a sweep: its parameters and figures (Decimal text, or None when the
    summary has none), its log hash, or the error that stopped it."""

    params: dict[str, Any]
    return_pct: str | None = None
    sharpe: str | None = None
    max_drawdown_pct: str | None = None
    trades: int | None = None
    log_hash: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Task:
    """What a worker needs for one run; picklable (a strategy is named by its spec
    `path.py:Class` or given as an importable class)."""

    strategy: str | type
    params: dict[str, Any]
    data: Any
    market: Any
    options: dict[str, Any]
    db: str | None = None


def run_one(task: Task) -> SweepRow:
    """One backtest of a sweep, in whatever process the executor chose."""
    from sandex.engine.backtest.runner import run

    try:
        result = run(
            task.data,
            task.market,
            strategy=task.strategy,
            params=task.params,
            db=task.db,
            **task.options,
        )
    except Exception as exc:  # a failed combination is a row, not the sweep's end
        text = " ".join(str(exc).split()) or "(no message)"
        return SweepRow(dict(task.params), error=f"{type(exc).__name__}: {text}")
    s = result.summary
    trades = s.get("trades")
    return SweepRow(
        dict(task.params),
        return_pct=_text(s.get("return_pct")),
        sharpe=_text(s.get("sharpe")),
        max_drawdown_pct=_text(s.get("max_drawdown_pct")),
        trades=trades.get("count") if isinstance(trades, dict) else None,
        log_hash=s.get("log_hash") or result.log_hash,
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return format(value, "f") if isinstance(value, Decimal) else str(value)


def value_text(value: Any) -> str:
    """A parameter's value in sweep.csv."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    return "" if value is None else str(value)


@dataclass
class SweepResult:
    """Every run of a sweep, in grid (or trial) order; `names` are the parameter columns."""

    names: list[str]
    rows: list[SweepRow]
    metric: str = "sharpe"
    maximize: bool = True
    files: list[Path] = field(default_factory=list)

    def score(self, row: SweepRow) -> Decimal | None:
        value = getattr(row, self.metric)
        return None if value is None or row.error else Decimal(str(value))

    def objective(self, row: SweepRow) -> float | None:
        """The row's metric as Optuna takes it (a float: the search's guide, never an amount)."""
        value = self.score(row)
        return None if value is None else float(value)

    @property
    def best(self) -> SweepRow | None:
        """The row with the best `metric` (the first of equals), or None if none has one."""
        best: SweepRow | None = None
        for row in self.rows:
            value = self.score(row)
            if value is None:
                continue
            top = None if best is None else self.score(best)
            if top is None or (value > top if self.maximize else value < top):
                best = row
        return best

    @property
    def errors(self) -> list[SweepRow]:
        return [r for r in self.rows if r.error]

    def write_csv(self, path: str | Path) -> Path:
        """sweep.csv: the parameters, then return_pct, sharpe, max_drawdown_pct, trades,
        log_hash and error; an empty cell where a run has no value."""
        target = Path(path)
        with target.open("w", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow([*self.names, *COLUMNS])
            for row in self.rows:
                cells = [value_text(row.params.get(n)) for n in self.names]
                cells += [value_text(getattr(row, c)) for c in COLUMNS]
                writer.writerow(cells)
        return target

    def write_heatmap(self, path: str | Path, x: str, y: str, metric: str | None = None) -> Path:
        """A self-contained HTML heatmap of `metric` (default: the sweep's) over x and y."""
        from sandex.engine.backtest.heatmap import heatmap_html

        chosen = metric or self.metric
        target = Path(path)
        maximize = self.maximize if chosen == self.metric else True
        target.write_text(heatmap_html(self.rows, x, y, chosen, maximize=maximize))
        return target


def _strategy_class(strategy: Any) -> type:
    if isinstance(strategy, str):
        return strategy_class(strategy)
    if isinstance(strategy, type):
        return strategy
    raise BacktestError(
        "a sweep takes a strategy class or path.py:Class, not an instance: each run makes its own"
    )


def _absolute(path: str | Path) -> str:
    return str(Path(path).absolute())


def _absolute_spec(spec: str) -> str:
    target, _, name = spec.rpartition(":")
    return f"{_absolute(target)}:{name}" if target.endswith(".py") else spec


def _check_axes(names: Sequence[str], heatmap: Sequence[str] | None, metric: str) -> None:
    if metric not in METRICS:
        raise BacktestError(f"metric {metric!r}: one of {', '.join(METRICS)}")
    if heatmap is None:
        return
    if len(heatmap) != 2 or heatmap[0] == heatmap[1]:
        raise BacktestError("a heatmap is drawn over two different parameters, e.g. fast,slow")
    for name in heatmap:
        if name not in names:
            raise BacktestError(
                f"heatmap parameter {name}: not swept (swept: {', '.join(names) or 'none'})"
            )


def sweep(
    strategy: Any,
    data: Any = None,
    market: str | Sequence[str] | None = None,
    *,
    grid: Mapping[str, str | Sequence[Any]] | None = None,
    search: Search | None = None,
    params: Mapping[str, Any] | None = None,
    executor: str = "joblib",
    n_jobs: int | None = None,
    scheduler: Any = None,
    db_dir: str | Path | None = None,
    out: str | Path | None = None,
    heatmap: Sequence[str] | None = None,
    metric: str | None = None,
    **options: Any,
) -> SweepResult:
    """Run `strategy` (a class or `path.py:Class`) over `data` once per parameter set:
    every combination of `grid` (name -> values, `a,b,c` or `low:high[:step]`), or the
    trials of an Optuna `search`. `params` fixes other parameters for every run;
    `options` are `run`'s (deposits, fees, spread, settings, seed...).

    `executor` is "joblib" (local processes, `n_jobs` default the cores), "dask"
    (`scheduler`: an address or a Client; none starts a local cluster) or "serial".
    With `out`, sweep.csv and (over `heatmap`'s two parameters, default the first two
    swept) heatmap.html of `metric` (default the search's, else sharpe) go there."""
    cls = _strategy_class(strategy)
    unknown = sorted(set(options) - RUN_OPTIONS)
    if unknown:
        raise BacktestError(f"sweep: no option {unknown[0]} (run's options: {sorted(RUN_OPTIONS)})")
    if data is None:
        raise BacktestError("no price data: give data")
    for name in [market] if isinstance(market, str) else list(market or []):
        if name not in MARKETS:
            raise BacktestError(f"market {name} is not a sandex market")
    if (grid is None) == (search is None):
        raise BacktestError("give exactly one of a grid and an Optuna search")
    fixed = parse_params(cls, params)
    if grid is not None:
        sets = combinations(cls, grid)
        swept = list(grid)
    else:
        assert search is not None
        ranges = parse_ranges(cls, search)
        swept = [r.name for r in ranges]
    twice = sorted(set(swept) & set(fixed))
    if twice:
        raise BacktestError(f"parameter {twice[0]} is both fixed and swept")
    chosen = metric or (search.metric if search is not None else "sharpe")
    # the search's direction for its own metric; any other is best when highest
    maximize = search.maximize if search is not None and chosen == search.metric else True
    if search is not None:
        _check_axes(swept, None, search.metric)
    axes = list(heatmap) if heatmap is not None else (swept[:2] if len(swept) >= 2 else None)
    _check_axes(swept, axes, chosen)
    folder = Path(out) if out is not None else None
    if folder is not None and folder.exists() and not folder.is_dir():
        raise BacktestError(f"{folder} is a file; a sweep writes into a folder")
    db_folder = Path(db_dir) if db_dir is not None else None
    if db_folder is not None:
        if db_folder.exists() and not db_folder.is_dir():
            raise BacktestError(f"{db_folder} is a file; --db-dir is a folder")
        db_folder.mkdir(parents=True, exist_ok=True)
    # Paths made absolute: a worker need not share this process's working directory.
    spec: str | type = _absolute_spec(strategy) if isinstance(strategy, str) else cls
    if isinstance(data, str | Path):
        data = _absolute(data)
    elif isinstance(data, Sequence):
        data = [_absolute(d) if isinstance(d, str | Path) else d for d in data]
    made = [0]

    def task(values: Mapping[str, Any]) -> Task:
        made[0] += 1
        db = None if db_folder is None else str(db_folder / f"{made[0]:04d}.db")
        return Task(spec, {**fixed, **values}, data, market, dict(options), db)

    with executors.executor(executor, n_jobs, scheduler) as map_tasks:
        if search is None:
            rows = map_tasks(run_one, [task(s) for s in sets])
        else:
            objective = SweepResult([], [], search.metric, search.maximize)
            rows = optimize(
                search,
                ranges,
                lambda batch: map_tasks(run_one, [task(s) for s in batch]),
                objective.objective,
            )
    result = SweepResult([*swept, *fixed], rows, chosen, maximize)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        result.files.append(result.write_csv(folder / "sweep.csv"))
        if axes is not None:
            result.files.append(result.write_heatmap(folder / "heatmap.html", axes[0], axes[1]))
    return result


__all__ = ["COLUMNS", "METRICS", "SweepRow", "Search", "SweepResult", "Task", "run_one", "sweep"]
