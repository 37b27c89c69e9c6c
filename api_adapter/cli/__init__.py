"""The `sandex` command line: one module per verb, `parser` assembles them, `main` runs
one (`python -m sandex.api_adapter.cli` and the `sandex` entry point)."""

from sandex.api_adapter.cli.main import main

__all__ = ["main"]
