"""Projections: the in-memory state (appliers) and the read-model tables derived from it."""

from engine.read.readmodels import TABLES, all_rows, rows_for

__all__ = ["TABLES", "all_rows", "rows_for"]
