"""The kernel: clock, ids, events and their catalogue, commands, errors, the writer's state and the registry."""
