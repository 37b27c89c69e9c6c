"""An Optuna search over a strategy's parameters: a seeded TPE sampler asks for trials in
batches of a fixed size, the batch runs on the sweep's executor, and the answers are told
in order, so a seed gives the same trials whatever the executor or the number of cores."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sandex.engine.backtest.errors import BacktestError
from sandex.engine.backtest.grid import Range, range_of


@dataclass(frozen=True)
class Search:
    """`trials` runs choosing `ranges` (name -> `low:high[:step]` or `a,b,c`) to maximize
    (or minimize) `metric`. `batch` trials are asked at a time: it, not the executor,
    decides what the sampler knows when it asks."""

    trials: int
    ranges: Mapping[str, str] = field(default_factory=dict)
    metric: str = "sharpe"
    maximize: bool = True
    seed: int = 0
    batch: int = 4


def parse_ranges(cls: type, search: Search) -> list[Range]:
    if search.trials < 1:
        raise BacktestError(f"an Optuna search of {search.trials} trials: give at least 1")
    if search.batch < 1:
        raise BacktestError(f"batch {search.batch}: at least 1")
    if not search.ranges:
        raise BacktestError("an Optuna search needs at least one range (name=low:high)")
    return [range_of(cls, name, spec) for name, spec in search.ranges.items()]


def _suggest(trial: Any, r: Range) -> Any:
    """The trial's value of `r`: ints as Optuna's ints, Decimals and choices by their
    index, so that no value passes through a float."""
    if r.choices or isinstance(r.low, Decimal):
        return r.value(trial.suggest_int(r.name, 0, r.count - 1))
    assert isinstance(r.low, int) and isinstance(r.step, int)
    high = r.low + (r.count - 1) * r.step
    return trial.suggest_int(r.name, r.low, high, step=r.step)


def optimize(
    search: Search,
    ranges: Sequence[Range],
    evaluate: Callable[[list[dict[str, Any]]], list[Any]],
    score: Callable[[Any], float | None],
) -> list[Any]:
    """Run `search.trials` trials; `evaluate` runs a batch of parameter sets and answers
    their rows, `score` a row's objective (None: a failed trial). Answers every row, in
    trial order."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize" if search.maximize else "minimize",
        sampler=optuna.samplers.TPESampler(seed=search.seed),
    )
    rows: list[Any] = []
    while len(rows) < search.trials:
        trials = [study.ask() for _ in range(min(search.batch, search.trials - len(rows)))]
        batch = evaluate([{r.name: _suggest(t, r) for r in ranges} for t in trials])
        for trial, row in zip(trials, batch, strict=True):
            value = score(row)
            if value is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, value)
        rows.extend(batch)
    return rows


__all__ = ["Search", "optimize", "parse_ranges"]
