"""The read side: every SELECT of the committed read-model tables, in one place.

The tables are written by the writer's projection stage (engine/runtime/projection.py);
the modules here read them, each for one noun: `queries` (profiles, balances, transfers,
fiat instructions, orders, executions, and their paging), `feed`, `sandbox_snapshots`,
`webhook_status`, `clients`, `database_contents`. They read on connections from
`connections`, the one place that asks the store for them. Imported by module
(`from sandex.engine.read import feed`)."""
