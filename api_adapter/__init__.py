"""sandex HTTP adapter: FastAPI app, OAuth2, problem+json, and the `sandex` command line.

`create_app` is exported lazily (PEP 562): every `sandex` command imports this package,
and only `serve` (and a replay in-process) needs FastAPI and the whole app."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sandex.api_adapter.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from sandex.api_adapter.app import create_app

        return create_app
    raise AttributeError(f"module 'api_adapter' has no attribute {name!r}")
