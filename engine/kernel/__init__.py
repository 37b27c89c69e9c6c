"""The kernel: clock, ids, events, commands, errors, the writer's state and the registry."""
