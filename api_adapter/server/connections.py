"""Connection limits of `sandex serve`: uvicorn's httptools protocol with deadlines, a
connection cap and size limits on a request's head.

uvicorn bounds none of them. A client that opened connections and sent nothing, or a
byte now and then, held a file descriptor each for as long as it liked (3,000 such
connections were held 70 s and more); a header of 2 MB was read whole; a request line
over 64 KB met httptools' own limit as a plain-text 400. Here:

- a request's head (request line and headers) must arrive within `header_timeout`
  of the connection's opening, or of the request's first byte on a kept-alive
  connection, and its body within `body_timeout` of the end of its head: a total, not
  an idle time, so a byte now and then does not keep a request alive. A deadline does
  not run out while the server itself is not reading (a pipelined request waits its
  turn, a body waits for the app to read it); the time between requests is uvicorn's
  keep-alive timeout;
- a connection beyond `max_connections` is answered 503 as it opens, and closed;
- a request line over `max_url_bytes` is refused 414 as it arrives, a head over
  `max_header_bytes` 431 (checked after each read, so within one read of the limit).

Each refusal is a problem document (application/problem+json) sent on the connection,
which is then closed; a request the app is still reading sees a disconnect.

Two costs of uvicorn's per request are cut, neither seen by a client: an answer's head
and body, which uvicorn writes to the socket apart, leave in one write (one system call
and one segment instead of two: the largest single cost of a small answer on the event
loop); and a deadline is armed only when a head or body is still incomplete at the end
of a read, not armed and cancelled within the read that brought the whole request.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson
import structlog
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from api_adapter.problem_types import title_for
from engine.config.settings import Settings

log = structlog.get_logger("sandex.http")

WS_MAX_MESSAGE_BYTES = 4096


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_timeout: float
    body_timeout: float
    max_connections: int
    max_url_bytes: int
    max_header_bytes: int

    @classmethod
    def of(cls, settings: Settings) -> ConnectionLimits:
        return cls(
            header_timeout=settings.header_timeout_seconds,
            body_timeout=settings.body_timeout_seconds,
            max_connections=settings.max_connections,
            max_url_bytes=settings.max_url_bytes,
            max_header_bytes=settings.max_header_bytes,
        )


@dataclass(slots=True)
class _AtLimit:
    """Connections refused since the limit was reached: logged once when it is reached
    and once when a connection is taken again, not once per refusal (a flood of them)."""

    refused: int = 0


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The keyword arguments of `uvicorn.run` that set the limits of `settings`."""
    attributes = {"limits": ConnectionLimits.of(settings), "at_limit": _AtLimit()}
    protocol = type("SandexHttpProtocol", (LimitedHttpProtocol,), attributes)
    return {
        "http": protocol,
        "timeout_keep_alive": settings.keep_alive_timeout_seconds,
        # The peer's address is the client's (api_adapter/rate_limits.py keys its budgets
        # on it): uvicorn's default took X-Forwarded-For from any loopback peer, so a
        # client on the same host could spend a new budget per request.
        "proxy_headers": False,
        # The market data feeds read nothing from a client: a message of more than this
        # closes its connection rather than being buffered (uvicorn's default: 16 MiB).
        "ws_max_size": WS_MAX_MESSAGE_BYTES,
    }


# Bytes held at most before they go out: past this a write is the transport's at once, so
# that its back-pressure (uvicorn's pause of a sender) works as without the holding.
_HOLD_AT_MOST = 64 * 1024


class _Coalescing:
    """The transport as a connection's request cycles see it: what they write within one
    turn of the loop leaves in one write, at the end of the answer (the protocol's
    `on_response_complete`), at a close, or at the next turn of the loop at the latest
    (a streamed answer's chunks are not held longer), or at once past _HOLD_AT_MOST."""

    __slots__ = ("transport", "loop", "held", "size")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self.loop = loop
        self.held: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> None:
        if not self.held:
            self.loop.call_soon(self.flush)
        self.held.append(data)
        self.size += len(data)
        if self.size > _HOLD_AT_MOST:
            self.flush()

    def flush(self) -> None:
        held = self.held
        if held:
            self.held = []
            self.size = 0
            if not self.transport.is_closing():
                self.transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class _TooLong(Exception):
    """Raised in a parser callback to stop parsing a request refused for its size."""


class LimitedHttpProtocol(HttpToolsProtocol):
    """A subclass per server sets `limits` (see `uvicorn_options`)."""

    limits: ClassVar[ConnectionLimits]
    at_limit: ClassVar[_AtLimit]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._in_head = True
        self._head_bytes = 0
        self._refusal: tuple[int, str] | None = None
        self._in_body = False
        self._out: _Coalescing | None = None

    # -- the connection ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._out = _Coalescing(transport, self.loop)
        most = self.limits.max_connections
        if len(self.connections) > most:
            if not self.at_limit.refused:
                log.warning("connection limit reached: refusing connections", limit=most)
            self.at_limit.refused += 1
            self._refuse(503, f"too many connections: at most {most} are held; retry shortly")
            return
        if self.at_limit.refused:
            log.warning("connections taken again", refused=self.at_limit.refused)
            self.at_limit.refused = 0
        self._arm(self.limits.header_timeout, "headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.is_closing():
            return
        # Counted after parsing: when the head ends within this read, the rest is body.
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                most = self.limits.max_header_bytes
                self._refuse(431, f"request head too large: at most {most} bytes")
                return
        # A part still incomplete after the read that began it gets its deadline now.
        if self._deadline is None:
            if self._in_head:
                self._arm(self.limits.header_timeout, "headers")
            elif self._in_body:
                self._arm(self.limits.body_timeout, "body")

    def handle_websocket_upgrade(self) -> None:
        self._disarm()  # the connection is the WebSocket protocol's from here on
        self._in_head = self._in_body = False
        super().handle_websocket_upgrade()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request the parser refused: a problem, not plain text."""
        status, detail = self._refusal or (400, "the request is not valid HTTP/1.1")
        self._refuse(status, detail)

    # -- parser callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.limits.max_url_bytes:
            most = self.limits.max_url_bytes
            self._refusal = (414, f"request line too long: a URL of at most {most} bytes")
            raise _TooLong

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._in_body = True
        self._disarm()
        super().on_headers_complete()
        if self.cycle is not None and self._out is not None:
            self.cycle.transport = self._out  # type: ignore[assignment]

    def on_message_complete(self) -> None:
        self._in_body = False
        self._disarm()
        super().on_message_complete()

    def on_response_complete(self) -> None:
        if self._out is not None:
            self._out.flush()
        super().on_response_complete()

    # -- deadlines and refusals -------------------------------------------------------

    def _arm(self, seconds: float, part: str) -> None:
        self._deadline = self.loop.call_later(seconds, self._late, seconds, part)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _late(self, seconds: float, part: str) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.flow.read_paused:  # the server is not reading: not the client's delay
            self._arm(seconds, part)
            return
        self._refuse(408, f"request {part} not received within {seconds:g} s")

    def _refuse(self, status: int, detail: str) -> None:
        """Answer `status` with a problem (unless a response is under way) and close."""
        self._disarm()
        if self._out is not None:
            self._out.flush()  # what an answer under way wrote goes out before the close
        cycle = self.cycle
        started = False
        if cycle is not None and not cycle.response_complete:
            started = cycle.response_started
            cycle.disconnected = True  # the app's receive() answers http.disconnect
            cycle.message_event.set()
        if not started:
            body = orjson.dumps(
                {
                    "type": "about:blank",
                    "title": title_for(status),
                    "status": status,
                    "detail": detail,
                }
            )
            head = [STATUS_LINE[status]]
            for name, value in self.server_state.default_headers:
                head += [name, b": ", value, b"\r\n"]
            head += [
                b"content-type: application/problem+json\r\n",
                b"content-length: %d\r\n" % len(body),
                b"connection: close\r\n",
                b"retry-after: 1\r\n" if status == 503 else b"",
                b"\r\n",
            ]
            self.transport.write(b"".join(head) + body)
        self.transport.close()
        if status != 503:  # refusals at the connection limit are logged by their count
            client = self.client[0] if self.client else None
            log.info("request refused", status=status, detail=detail, client=client)
