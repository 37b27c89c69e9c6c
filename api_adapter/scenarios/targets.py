"""Where a scenario's requests go: a fresh sandbox in-process (a new database in a
temporary folder, the real ASGI app through an in-memory transport) or a running
sandbox at a URL. The runner (api_adapter/scenarios/runner.py) sees only a `Target`."""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import httpx

from sandex.api_adapter.bootstrap import DEFAULT_SECRET
from sandex.api_adapter.webhook_delivery import Deliverer
from sandex.engine.config.settings import Settings
from sandex.engine.store import private_files

BOOTSTRAP_CLIENT = "sandex"
BOOTSTRAP_SECRET = DEFAULT_SECRET


# How long a stream step waits for the feed's messages before it fails.
STREAM_WAIT_SECONDS = 10.0


class StreamsUnsupported(Exception):
    """The target cannot run a stream step; the message says why."""


class Stream:
    """One open WebSocket feed of an in-process sandbox: what it received since the
    last check, and the code and reason if the server closed it."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.received = 0
        self.messages: list[Any] = []
        self.closed: tuple[int, str] | None = None

    def poll(self) -> None:
        """Take what has arrived, without waiting."""
        if self.closed is not None:
            return

        async def arrived() -> list[Any]:
            queue = self.session._send_rx  # the test session's own stream of the app's sends
            return [queue.receive_nowait() for _ in range(queue.statistics().current_buffer_used)]

        for message in self.session.portal.call(arrived):
            if message["type"] == "websocket.close":
                self.closed = (int(message.get("code", 1000)), str(message.get("reason") or ""))
                return
            text = message.get("text")
            self.messages.append(json.loads(text) if text is not None else message.get("bytes"))
            self.received += 1

    def close(self) -> None:
        """Leave, and return once the app has ended the connection (it unsubscribed)."""
        if self.closed is None:
            self.session.close(1000)
        self.closed = self.closed or (1000, "")
        self.session.__exit__(None, None, None)


class Target:
    """Where requests go: an httpx-compatible client and the bootstrap credentials."""

    client: httpx.Client
    client_id: str = BOOTSTRAP_CLIENT
    client_secret: str = BOOTSTRAP_SECRET

    def close(self) -> None:
        self.client.close()

    def log_hash(self) -> str | None:
        return None

    def open_stream(self, path: str) -> Stream:
        raise StreamsUnsupported("this target cannot open WebSocket streams")

    def settle(self, streams: list[Stream]) -> None:
        """Return once `streams` hold every message the feed has published so far."""
        raise StreamsUnsupported("this target cannot open WebSocket streams")


class _ASGI(httpx.BaseTransport):
    """Requests straight into the ASGI app on an event loop of this thread: no socket,
    no thread hop per request (a test client's portal costs milliseconds a request)."""

    def __init__(self, app: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.app = app
        self.inner = httpx.ASGITransport(app=self._connection, raise_app_exceptions=False)
        self._lost: list[httpx.TransportError] = []

    async def _connection(self, scope: Any, receive: Any, send: Any) -> None:
        """The app, whose transport errors (a wire fault's stand-in for a dropped or reset
        connection, `sandex.api_adapter.wire_faults`) reach the caller as a connection's would;
        any other error of the app is answered 500, as a server does."""
        try:
            await self.app(scope, receive, send)
        except httpx.TransportError as exc:
            self._lost.append(exc)
            raise

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def call() -> httpx.Response:
            forwarded = httpx.Request(
                request.method, request.url, headers=request.headers, content=request.read()
            )
            answer = await self.inner.handle_async_request(forwarded)
            content = await answer.aread()
            if self._lost:
                raise self._lost.pop()
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
        from sandex.api_adapter.bootstrap import fixed
        from sandex.api_adapter.world import World

        self._tmp = tempfile.TemporaryDirectory(prefix="sandex-replay-")
        self.db: str | Path = db if db is not None else Path(self._tmp.name) / "sandex.db"
        self.keep_db = Path(keep_db) if keep_db is not None else None
        self.world = World.open(
            self.db, settings, bootstrap=fixed(self.client_id, self.client_secret), background=False
        ).start()
        self.engine = self.world.engine
        self.app = self.world.app
        self.app.state.webhooks = _NoDelivery(str(self.db))
        self.client = httpx.Client(transport=_ASGI(self.app), base_url="http://sandex")
        self._closed = False
        self._hash: str | None = None

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        from sandex.engine.tools.time_travel import log_hash

        self.client.close()
        self.world.stop()
        self._hash = log_hash(self.db)
        if self.keep_db is not None:
            self.keep_db.parent.mkdir(parents=True, exist_ok=True)
            private_files.copy(self.db, self.keep_db)
            private_files.copy(f"{self.db}.key", f"{self.keep_db}.key")
        self._tmp.cleanup()

    def log_hash(self) -> str | None:
        return self._hash

    def open_stream(self, path: str) -> Stream:
        """Through Starlette's test client: a portal thread runs the connection on its
        own event loop, as a server's would, against this very app."""
        with warnings.catch_warnings():  # its httpx deprecation; the HTTP steps use httpx
            warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
            from starlette.testclient import TestClient

        session = TestClient(self.app).websocket_connect(path)
        session.__enter__()
        return Stream(session)

    def settle(self, streams: list[Stream]) -> None:
        """Deterministic, with no sleep for luck: the feed publishes a group before its
        callers are answered, so once every open stream got its first messages and the
        streams received as many messages as the hub queued to their subscribers,
        nothing published is still on its way (docs/market-data.md)."""
        feed = self.engine.market_feed
        deadline = time.monotonic() + STREAM_WAIT_SECONDS
        while True:
            for stream in streams:
                stream.poll()
            live = [s for s in streams if s.closed is None]
            received = sum(s.received for s in live)
            if feed.subscribers() == len(live) and not feed.waiting() and feed.pushed() == received:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the feed's messages did not all arrive within {STREAM_WAIT_SECONDS:g}s"
                    f" ({received} of {feed.pushed()})"
                )
            time.sleep(0.001)


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

    def open_stream(self, path: str) -> Stream:
        raise StreamsUnsupported(
            "stream steps run in-process only: a served sandbox does not tell a client when"
            " every message published so far has reached it, so an exact expectation of the"
            " messages could not be checked (replay this scenario without --url)"
        )
