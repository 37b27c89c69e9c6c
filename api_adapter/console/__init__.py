"""The console (docs/console.md): a world's pages for a person in a browser, at
`/console` of each world, served in front of the world's app so that its own page
loads are neither API requests in the request log nor subject to the API's gates."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

PATH = "/console"


class ConsoleFront:
    """Sends `/console...` to the console of the world whose FastAPI app is `api` (made
    at its first page), when the world serves one (`api.state.console`), and every
    other request to `inner`, the app's own stack."""

    def __init__(self, inner: ASGIApp, api: Any) -> None:
        self.inner = inner
        self.api = api
        self._console: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (
            scope["type"] == "http"
            and (path == PATH or path.startswith(PATH + "/"))
            and getattr(self.api.state, "console", False)
        ):
            if self._console is None:
                from sandex.api_adapter.console.pages import console_app

                self._console = console_app(self.api)
            await self._console(scope, receive, send)
            return
        await self.inner(scope, receive, send)
