"""Scenario tools: the runner, its targets (in-process or a URL) and the session recorder."""
