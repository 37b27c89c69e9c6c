"""The installed package's version, and the header every answer of a sandex carries it in
(`uvicorn_options` gives it to the server): a client, a CI step or a test plugin tells a
sandex, and which one, from any answer it gets, even a refused connection's."""

from __future__ import annotations

from functools import cache

VERSION_HEADER = "X-Sandex-Version"


@cache
def installed_version() -> str:
    """The version of the installed `sandex` distribution (its metadata, not a constant)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sandex")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"
