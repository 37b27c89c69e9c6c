"""Backtests: an order flow run against historical prices on the sandbox's engine."""
