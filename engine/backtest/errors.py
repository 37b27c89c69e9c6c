"""What stops a backtest before it runs."""

from __future__ import annotations


class BacktestError(ValueError):
    """A backtest that cannot start: bad data, flow, strategy or settings."""


__all__ = ["BacktestError"]
