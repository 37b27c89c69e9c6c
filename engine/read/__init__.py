"""The read side: every SELECT of the committed read-model tables, in one place.

`readmodels` declares the tables that projections fill (the writer commits them with
each event); the modules beside it read them, each for one noun: `queries` (profiles,
balances, transfers, fiat instructions, orders, executions, and their paging), `feed`,
`sandbox_snapshots`, `webhook_status`, `clients`, `database_contents`. They read on
connections from `connections`, the one place that asks the store for them. Imported by
module (`from engine.read import feed`): this file re-exports only what the writer and
the tools take from `readmodels`, so a domain module that registers a table does not
load the store."""

from engine.read.readmodels import TABLES, all_rows, rows_for

__all__ = ["TABLES", "all_rows", "rows_for"]
