"""The parameter sets of a sweep: a grid's values (`fast=5,10,20`, `slow=20:60:10`) and a
search's ranges (`fast=5:50`, `invest=0.5:0.99:0.01`), typed like the strategy's defaults.

Values are exact: an int or Decimal range is stepped in its own type, never in float."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sandex.engine.backtest.errors import BacktestError
from sandex.engine.backtest.strategy import declared_params, param_value

# A grid larger than this is a mistake more often than a plan.
MAX_COMBINATIONS = 1_000_000


@dataclass(frozen=True)
class Range:
    """An int or Decimal parameter's values `low, low + step, ...` up to `high`, or a
    choice among `choices` (any other type)."""

    name: str
    low: int | Decimal | None = None
    high: int | Decimal | None = None
    step: int | Decimal | None = None
    choices: tuple[Any, ...] = ()

    @property
    def count(self) -> int:
        """How many values the range holds."""
        if self.choices:
            return len(self.choices)
        assert self.low is not None and self.high is not None and self.step is not None
        return int((self.high - self.low) // self.step) + 1

    def value(self, k: int) -> Any:
        """The k-th value (0-based)."""
        if self.choices:
            return self.choices[k]
        assert self.low is not None and self.step is not None
        return self.low + k * self.step

    def values(self) -> list[Any]:
        return [self.value(k) for k in range(self.count)]


def _default(cls: type, name: str) -> Any:
    declared = declared_params(cls)
    if name not in declared:
        known = ", ".join(sorted(declared)) or "none"
        raise BacktestError(
            f"parameter {name}: {cls.__name__} has no such parameter (its parameters: {known})"
        )
    return declared[name]


def range_of(cls: type, name: str, spec: str) -> Range:
    """`low:high[:step]` for an int or Decimal parameter (step 1 for an int, else the
    finest decimal place of low and high); `a,b,c` (a choice) for any parameter."""
    default = _default(cls, name)
    text = spec.strip()
    numeric = isinstance(default, int | Decimal | float) and not isinstance(default, bool)
    if ":" not in text:
        choices = [param_value(name, default, v) for v in text.split(",")]
        if not text or len(set(choices)) != len(choices):
            raise BacktestError(f"parameter {name}={spec!r}: give distinct values a,b,c")
        return Range(name, choices=tuple(choices))
    if not numeric:
        raise BacktestError(f"parameter {name}={spec!r}: a range low:high is for numbers")
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise BacktestError(f"parameter {name}={spec!r}: write low:high or low:high:step")
    low, high = (param_value(name, default, p) for p in parts[:2])
    if len(parts) == 3:
        step = param_value(name, default, parts[2])
    elif isinstance(low, int):
        step = 1
    else:
        places = min(low.as_tuple().exponent, high.as_tuple().exponent)
        assert isinstance(places, int)
        step = Decimal(1).scaleb(places)
    if step <= 0:
        raise BacktestError(f"parameter {name}={spec!r}: the step must be above 0")
    if high < low:
        raise BacktestError(f"parameter {name}={spec!r}: high is below low")
    return Range(name, low, high, step)


def grid_values(cls: type, name: str, spec: str | Sequence[Any]) -> list[Any]:
    """One grid axis: a list of values, `a,b,c` or `low:high[:step]` (high included when
    the steps reach it)."""
    if isinstance(spec, str):
        return range_of(cls, name, spec).values()
    default = _default(cls, name)
    values = [param_value(name, default, v) for v in spec]
    if not values:
        raise BacktestError(f"parameter {name}: the grid gives it no value")
    return values


def combinations(cls: type, grid: Mapping[str, str | Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's axes, the first axis varying slowest."""
    axes = {name: grid_values(cls, name, spec) for name, spec in grid.items()}
    total = 1
    for values in axes.values():
        total *= len(values)
    if total > MAX_COMBINATIONS:
        raise BacktestError(f"the grid has {total:,} combinations (at most {MAX_COMBINATIONS:,})")
    names = list(axes)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*axes.values())]


__all__ = ["MAX_COMBINATIONS", "Range", "combinations", "grid_values", "range_of"]
