"""Tools over a log: verify, rebuild, time travel, scenario files."""
