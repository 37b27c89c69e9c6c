"""Wire faults: a request's answer spoiled on the connection (issue 31's HTTP faults
`drop`, `reset`, `empty` and `truncate`), for a client's retry and reconciliation code.

A fault rule that fires one of them calls `arm(scope, kind)` and then answers as usual:
the app, the request log and whatever counts answers see an ordinary answer; only the
bytes the client gets change.

- Under `sandex serve` the connection does it: `LimitedHttpProtocol` puts a callable in
  each request's scope (`scope["extensions"]["sandex.wire"]`, kept by a world's
  dispatcher, which copies the scope) and `arm` calls it.
- In process (Starlette's TestClient, `httpx.ASGITransport`, or another ASGI server)
  there is no connection to spoil: `arm` keeps the kind in `scope["state"]`, and
  `WireFaults`, outermost in every app `create_app` makes, changes the answer there
  (see its docstring).
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

import httpx
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sandex.engine.kernel.logs import get_logger

log = get_logger("sandex.http")

KINDS = ("drop", "reset", "empty", "truncate")

# The ASGI extension a server that can spoil a connection puts in each request's scope,
# and the key of the request's state that holds an armed kind where none did.
EXTENSION = "sandex.wire"
STATE_KEY = "sandex.wire"

# The kinds after which the connection ends, and the kinds that answer no byte.
CLOSING = frozenset({"drop", "reset", "truncate"})
SILENT = frozenset({"drop", "reset"})


def arm(scope: MutableMapping[str, Any], kind: str) -> None:
    """Spoil the answer to the request of `scope` on the wire as `kind` says; call it
    before the answer starts."""
    if kind not in KINDS:
        raise ValueError(f"wire fault kind {kind!r} is not one of {', '.join(KINDS)}")
    wire: Callable[[str], None] | None = scope.get("extensions", {}).get(EXTENSION)
    log.info("wire fault armed", kind=kind, on="connection" if wire else "in process")
    if wire is not None:
        wire(kind)
    else:
        scope.setdefault("state", {})[STATE_KEY] = kind


def short_length(length: int) -> tuple[int, int]:
    """A truncated answer's announced content-length and the bytes of it sent: half the
    body, so at least one byte short (an empty body is announced as one byte)."""
    announced = max(length, 1)
    return announced, announced // 2


class WireFaults:
    """The in-process stand-in for the connection (pure ASGI, outside Starlette's error
    middleware, so an exception it raises reaches the client's transport):

    - `drop` and `reset`: nothing of the answer is passed on; once the app has answered,
      `httpx.RemoteProtocolError` (drop) or `httpx.ReadError` (reset) is raised, which
      httpx's in-process transports raise to their caller as a real connection's would.
      (A client that turns an app's exception into a 500, `TestClient(...,
      raise_server_exceptions=False)` or `ASGITransport(raise_app_exceptions=False)`,
      gets an empty 500 instead.)
    - `empty`: a 200 with `content-length: 0` and no body.
    - `truncate`: a 200 announcing the whole length (see `short_length`) with half the
      body; there is no connection to close, so the client sees a short body.

    A request whose scope holds the server's extension passes through untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or EXTENSION in scope.get("extensions", ()):
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        kind: str | None = None
        start: Message | None = None
        body: list[bytes] = []

        async def spoiling(message: Message) -> None:
            nonlocal kind, start
            if message["type"] == "http.response.start":
                kind = state.get(STATE_KEY)
                if kind is None:
                    await send(message)
                else:
                    start = message
                return
            if kind is None or message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            assert start is not None
            if kind in SILENT:
                return
            whole = b"".join(body)
            headers = [
                (name, value)
                for name, value in start.get("headers", ())
                if name.lower() not in (b"content-length", b"transfer-encoding")
            ]
            if kind == "empty":
                sent, length = b"", 0
            else:
                length, cut = short_length(len(whole))
                sent = whole[:cut]
            headers.append((b"content-length", b"%d" % length))
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": sent})

        await self.app(scope, receive, spoiling)
        if kind == "drop":
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
        if kind == "reset":
            raise httpx.ReadError("[Errno 104] Connection reset by peer")
