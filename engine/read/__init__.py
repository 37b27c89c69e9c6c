"""The read side: every SELECT of the committed read-model tables, in one place.

`readmodels` turns a registry's read-model tables (each module's `Registration.tables`)
into the store's tables and each commit's rows (the writer commits them with each event); the modules beside it read them, each for one noun: `queries` (profiles,
balances, transfers, fiat instructions, orders, executions, and their paging), `feed`,
`sandbox_snapshots`, `webhook_status`, `clients`, `database_contents`. They read on
connections from `connections`, the one place that asks the store for them. Imported by
module (`from engine.read import feed`): this file re-exports only what the writer and
the tools take from `readmodels`."""

from engine.read.readmodels import Projection

__all__ = ["Projection"]
