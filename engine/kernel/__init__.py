"""The kernel: clock, ids, events and their catalogue, commands, errors, the double-entry
book (ledger), the writer's state, read-model table specs and the registry."""
