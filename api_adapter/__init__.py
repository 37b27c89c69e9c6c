"""sandex HTTP adapter: FastAPI app, OAuth2, problem+json, and the `sandex` command line."""

from api_adapter.app import create_app

__all__ = ["create_app"]
