"""The `sandex` command line."""

from api_adapter.cli.commands import main

__all__ = ["main"]
