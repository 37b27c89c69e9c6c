"""Scenario tools: the runner and the session recorder."""
