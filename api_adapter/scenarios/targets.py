"""Where a scenario's requests go: a fresh sandbox in-process (a new database in a
temporary folder, the real ASGI app through an in-memory transport) or a running
sandbox at a URL. The runner (api_adapter/scenarios/runner.py) sees only a `Target`."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import httpx

from api_adapter.webhook_delivery import Deliverer
from engine.config.settings import Settings
from engine.store import private_files

BOOTSTRAP_CLIENT = "sandex"
BOOTSTRAP_SECRET = "sandex-secret"


class Target:
    """Where requests go: an httpx-compatible client and the bootstrap credentials."""

    client: httpx.Client
    client_id: str = BOOTSTRAP_CLIENT
    client_secret: str = BOOTSTRAP_SECRET

    def close(self) -> None:
        self.client.close()

    def log_hash(self) -> str | None:
        return None


class _ASGI(httpx.BaseTransport):
    """Requests straight into the ASGI app on an event loop of this thread: no socket,
    no thread hop per request (a test client's portal costs milliseconds a request)."""

    def __init__(self, app: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.inner = httpx.ASGITransport(app=app, raise_app_exceptions=False)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def call() -> httpx.Response:
            forwarded = httpx.Request(
                request.method, request.url, headers=request.headers, content=request.read()
            )
            answer = await self.inner.handle_async_request(forwarded)
            content = await answer.aread()
            return httpx.Response(answer.status_code, headers=answer.headers, content=content)

        return self.loop.run_until_complete(call())

    def close(self) -> None:
        self.loop.close()


class InProcess(Target):
    """A fresh sandbox: a new database in a temporary folder (or the empty database `db`
    names, e.g. a PostgreSQL one), the real app in-process."""

    def __init__(
        self, settings: Settings, keep_db: str | Path | None = None, db: str | None = None
    ) -> None:
        from api_adapter.app import create_app
        from engine import open_engine
        from engine.kernel.commands import CreateCustomer

        self._tmp = tempfile.TemporaryDirectory(prefix="sandex-replay-")
        self.db: str | Path = db if db is not None else Path(self._tmp.name) / "sandex.db"
        self.keep_db = Path(keep_db) if keep_db is not None else None
        self.engine = open_engine(self.db, settings).start()
        self.engine.execute(
            CreateCustomer(
                client_id=self.client_id, client_secret=self.client_secret, bootstrap=True
            )
        )
        self.app = create_app(self.engine)
        self.app.state.webhooks = _NoDelivery(str(self.db))
        self.client = httpx.Client(transport=_ASGI(self.app), base_url="http://sandex")
        self._closed = False
        self._hash: str | None = None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        from engine.tools.time_travel import log_hash

        self.client.close()
        self.app.state.queries.close()
        self.engine.stop()
        self._hash = log_hash(self.db)
        if self.keep_db is not None:
            self.keep_db.parent.mkdir(parents=True, exist_ok=True)
            private_files.copy(self.db, self.keep_db)
            private_files.copy(f"{self.db}.key", f"{self.keep_db}.key")
        self._tmp.cleanup()

    def log_hash(self) -> str | None:
        return self._hash


class _NoDelivery(Deliverer):
    """A replay records webhook registrations but POSTs nothing: it has no effect
    outside its own sandbox."""

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


class Remote(Target):
    """A running sandbox at `url`; the bootstrap credentials create the actors."""

    def __init__(self, url: str, client_id: str, client_secret: str) -> None:
        self.client = httpx.Client(base_url=url.rstrip("/"), timeout=30)
        self.client_id = client_id
        self.client_secret = client_secret
