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
- a connection beyond `max_connections` is answered 503 as it opens, and closed, and
  one beyond `max_connections_per_ip` from one client address 429: one address that
  reopened each connection dropped held every slot;
- a request line over `max_url_bytes` is refused 414 as it arrives, a head over
  `max_header_bytes` 431 (measured before each read is parsed: a whole head over the
  limit that came in one read was served);
- a WebSocket upgrade (the market data feeds) keeps its head's deadline until the app
  accepts it, a handshake the WebSocket parser rejects is answered, and a feed connection
  that sends a data frame is closed unparsed (`LimitedWebSocketProtocol`).

Each refusal is a problem document (application/problem+json) sent on the connection,
which is then closed; a request the app is still reading sees a disconnect.

A fault rule may spoil an answer on the wire (`sandex.api_adapter.wire_faults`): each request's
scope carries the `sandex.wire` extension, and an armed request's cycle writes through
`_Spoiled`, which drops, resets, empties or cuts its answer.

Two costs of uvicorn's per request are cut, neither seen by a client: an answer's head
and body, which uvicorn writes to the socket apart, leave in one write (one system call
and one segment instead of two: the largest single cost of a small answer on the event
loop); and a deadline is armed only when a head or body is still incomplete at the end
of a read, not armed and cancelled within the read that brought the whole request.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson
from uvicorn.protocols.http.httptools_impl import (
    STATUS_LINE,
    HttpToolsProtocol,
    RequestResponseCycle,
)
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import HeaderLineTooLong, RequestLineTooLong, TooManyHeaders
from websockets.http11 import MAX_LINE_LENGTH, MAX_NUM_HEADERS

from sandex.api_adapter.problem_types import problem_body
from sandex.api_adapter.version import VERSION_HEADER, installed_version
from sandex.api_adapter.wire_faults import EXTENSION, SILENT, short_length
from sandex.engine.config.settings import Settings
from sandex.engine.kernel.logs import get_logger

log = get_logger("sandex.http")

WS_MAX_MESSAGE_BYTES = 4096


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_timeout: float
    body_timeout: float
    max_connections: int
    max_connections_per_ip: int
    max_url_bytes: int
    max_header_bytes: int

    @classmethod
    def of(cls, settings: Settings) -> ConnectionLimits:
        return cls(
            header_timeout=settings.header_timeout_seconds,
            body_timeout=settings.body_timeout_seconds,
            max_connections=settings.max_connections,
            max_connections_per_ip=settings.max_connections_per_ip,
            max_url_bytes=settings.max_url_bytes,
            max_header_bytes=settings.max_header_bytes,
        )


@dataclass(slots=True)
class _Held:
    """A server's connections as its protocols count them (event loop only).

    `refused`: connections refused since `max_connections` was reached; `per_ip`: the
    connections each client address holds (HTTP and WebSocket alike); `refused_by`: the
    refusals of each address at its cap. Refusals are logged once when a limit is reached
    and once when a connection is taken again, not once each (a flood of them)."""

    refused: int = 0
    per_ip: Counter[str] = field(default_factory=Counter)
    refused_by: Counter[str] = field(default_factory=Counter)

    def release(self, address: str) -> None:
        """One connection of `address` ended."""
        self.per_ip[address] -= 1
        if self.per_ip[address] <= 0:
            del self.per_ip[address]
        refused = self.refused_by.pop(address, 0)
        if refused:
            log.warning("address below its connection limit", client=address, refused=refused)


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The keyword arguments of `uvicorn.run` that set the limits of `settings`."""
    attributes = {"limits": ConnectionLimits.of(settings), "held": _Held()}
    protocol = type("SandexHttpProtocol", (LimitedHttpProtocol,), attributes)
    feeds = type("SandexWebSocketProtocol", (LimitedWebSocketProtocol,), attributes)
    return {
        "http": protocol,
        "ws": feeds,
        "timeout_keep_alive": settings.keep_alive_timeout_seconds,
        # The peer's address is the client's (api_adapter/rate_limits.py keys its budgets
        # on it): uvicorn's default took X-Forwarded-For from any loopback peer, so a
        # client on the same host could spend a new budget per request.
        "proxy_headers": False,
        # The market data feeds read nothing from a client (LimitedWebSocketProtocol closes
        # a connection at its first message): a backstop on what a frame may hold.
        "ws_max_size": WS_MAX_MESSAGE_BYTES,
        # Set here, in the server, not in the app: uvicorn writes its default headers on
        # every answer of every world and of the fast lane, and `_problem_answer` on the
        # connection's own refusals (limits, deadlines, bad handshakes), which no app sees.
        "headers": [(VERSION_HEADER, installed_version())],
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


class _Spoiled:
    """The transport of a request whose answer a wire fault spoils (`wire_faults.arm`).

    `RequestResponseCycle.send` writes an answer's head in one write, then its body; the
    cycle is not kept alive after a closing kind, so it closes this transport at the end
    of the answer and serves no pipelined request after it. `drop` writes nothing and
    closes (FIN); `reset` writes nothing and aborts with SO_LINGER 0 (RST); `empty` writes
    a 200 head with `content-length: 0` and no body; `truncate` a 200 head announcing the
    whole length and half the body (a streamed answer, chunked, is cut in its first
    chunk), then closes. The cycle counts the app's body as usual: the app, the request
    log and uvicorn see an answer sent whole."""

    __slots__ = ("kind", "out", "cycle", "head", "left")

    def __init__(self, kind: str, out: _Coalescing, cycle: RequestResponseCycle) -> None:
        self.kind = kind
        self.out = out
        self.cycle = cycle
        self.head = True
        self.left: int | None = 0  # body bytes still to pass on; None: half the first write

    def write(self, data: bytes) -> None:
        if not self.cycle.response_started:
            self.out.write(data)  # a `100 Continue` before the answer (the app's receive)
            return
        if self.kind in SILENT:
            return
        if self.head:
            self.head = False
            self.out.write(self._head(data))
            return
        if self.left is None:
            self.left = len(data) // 2
        if self.left:
            part = data[: self.left]
            self.left -= len(part)
            self.out.write(part)

    def _head(self, data: bytes) -> bytes:
        """The head uvicorn wrote (status line, lower-case header lines, blank line) with
        a 200 status line and the content-length the kind announces."""
        _, *lines = data[:-4].split(b"\r\n")
        length = 0
        if self.kind == "truncate":
            if self.cycle.chunked_encoding:
                self.left = None
                return STATUS_LINE[200] + data[data.index(b"\r\n") + 2 :]
            length, self.left = short_length(self.cycle.expected_content_length)
        kept = [line + b"\r\n" for line in lines if not line.startswith(_LENGTHS)]
        return b"".join([STATUS_LINE[200], *kept, b"content-length: %d\r\n\r\n" % length])

    def close(self) -> None:
        if self.kind == "reset":
            sock = self.out.transport.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.out.transport.abort()
        else:
            self.out.close()

    def is_closing(self) -> bool:
        return self.out.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.out, name)


_LENGTHS = (b"content-length:", b"transfer-encoding:")


class _Wire:
    """One request's `sandex.wire` extension (`wire_faults.arm` calls it). It holds the
    request's cycle weakly, as the cycle's scope holds it."""

    __slots__ = ("cycle", "out")

    def __init__(self, cycle: weakref.ref[RequestResponseCycle], out: _Coalescing) -> None:
        self.cycle = cycle
        self.out = out

    def __call__(self, kind: str) -> None:
        cycle = self.cycle()
        if cycle is None or cycle.response_started:
            raise RuntimeError("a wire fault is armed before the answer starts")
        if kind != "empty":
            cycle.keep_alive = False  # the cycle closes the connection after the answer
        cycle.transport = _Spoiled(kind, self.out, cycle)  # type: ignore[assignment]


class _TooLong(Exception):
    """Raised in a parser callback to stop parsing a request refused for its size."""


def _problem_answer(status: int, detail: str, default_headers: list[tuple[bytes, bytes]]) -> bytes:
    """A whole HTTP answer: the problem document of a refusal, with `connection: close`."""
    body = orjson.dumps(problem_body(status, detail))
    head = [STATUS_LINE[status]]
    for name, value in default_headers:
        head += [name, b": ", value, b"\r\n"]
    head += [
        b"content-type: application/problem+json\r\n",
        b"content-length: %d\r\n" % len(body),
        b"connection: close\r\n",
        b"retry-after: 1\r\n" if status in (429, 503) else b"",
        b"\r\n",
    ]
    return b"".join(head) + body


def _head_end(tail: bytes, data: bytes) -> int:
    """How many bytes of `data` belong to a head whose last bytes so far were `tail`: up to
    its blank line (CRLF or bare LF), or all of it when the head goes on."""
    window = tail + data
    ends = [i + n for i, n in ((window.find(b"\r\n\r\n"), 4), (window.find(b"\n\n"), 2)) if i >= 0]
    return len(data) if not ends else max(0, min(ends) - len(tail))


class LimitedHttpProtocol(HttpToolsProtocol):
    """A subclass per server sets `limits` and `held` (see `uvicorn_options`)."""

    limits: ClassVar[ConnectionLimits]
    held: ClassVar[_Held]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._in_head = True
        self._head_bytes = 0
        self._head_tail = b""
        self._refusal: tuple[int, str] | None = None
        self._in_body = False
        self._out: _Coalescing | None = None
        self._address: str | None = None  # counted in `held.per_ip` while this holds it

    # -- the connection ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._out = _Coalescing(transport, self.loop)
        held = self.held
        most = self.limits.max_connections
        if len(self.connections) > most:
            if not held.refused:
                log.warning("connection limit reached: refusing connections", limit=most)
            held.refused += 1
            self._refuse(503, f"too many connections: at most {most} are held; retry shortly")
            return
        address = self.client[0] if self.client else ""
        per_ip = self.limits.max_connections_per_ip
        if held.per_ip[address] >= per_ip:
            if not held.refused_by[address]:
                log.warning("address at its connection limit", client=address, limit=per_ip)
            held.refused_by[address] += 1
            self._refuse(429, f"too many connections: at most {per_ip} per address are held")
            return
        if held.refused:
            log.warning("connections taken again", refused=held.refused)
            held.refused = 0
        held.per_ip[address] += 1
        self._address = address
        self._arm(self.limits.header_timeout, "headers")

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._release()
        super().connection_lost(exc)

    def _release(self) -> None:
        if self._address is not None:
            self.held.release(self._address)
            self._address = None

    def data_received(self, data: bytes) -> None:
        # A head is measured before it is parsed: one read may bring a whole head larger
        # than the limit, which the parser would otherwise take.
        if not self._in_body:
            so_far = self._head_bytes if self._in_head else 0
            tail = self._head_tail if self._in_head else b""
            most = self.limits.max_header_bytes
            if so_far + _head_end(tail, data) > most:
                # The parser sees the head up to the limit only, so that a URL too long
                # is still a 414.
                super().data_received(data[: max(0, most - so_far)])
                if not self.transport.is_closing():
                    self._refuse(431, f"request head too large: at most {most} bytes")
                return
        super().data_received(data)
        if self.transport.is_closing() or self._address is None:
            return  # refused, or upgraded: the connection is the WebSocket protocol's
        # Counted after parsing: when the head ends within this read, the rest is body.
        if self._in_head:
            self._head_bytes += len(data)
            self._head_tail = (self._head_tail + data)[-3:]
        # A part still incomplete after the read that began it gets its deadline now.
        if self._deadline is None:
            if self._in_head:
                self._arm(self.limits.header_timeout, "headers")
            elif self._in_body:
                self._arm(self.limits.body_timeout, "body")

    def handle_websocket_upgrade(self) -> None:
        """uvicorn's upgrade, with the head's deadline and the address's count handed to the
        WebSocket protocol, which holds them until its handshake completes."""
        left = self.limits.header_timeout
        if self._deadline is not None:
            left = max(0.0, self._deadline.when() - self.loop.time())
        self._disarm()
        self._in_head = self._in_body = False
        self.connections.discard(self)
        address, self._address = self._address, None
        head = [self.scope["method"].encode(), b" ", self.url, b" HTTP/1.1\r\n"]
        for name, value in self.scope["headers"]:
            head += [name, b": ", value, b"\r\n"]
        head.append(b"\r\n")
        protocol = self.ws_protocol_class(  # type: ignore[call-arg, misc]
            config=self.config, server_state=self.server_state, app_state=self.app_state
        )
        assert isinstance(protocol, LimitedWebSocketProtocol)
        protocol.connection_made(self.transport)
        protocol.hold(address, left)
        protocol.data_received(b"".join(head))
        self.transport.set_protocol(protocol)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request the parser refused: a problem, not plain text."""
        status, detail = self._refusal or (400, "the request is not valid HTTP/1.1")
        self._refuse(status, detail)

    # -- parser callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0
        self._head_tail = b""

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.limits.max_url_bytes:
            most = self.limits.max_url_bytes
            self._refusal = (414, f"request line too long: a URL of at most {most} bytes")
            raise _TooLong

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self.parser.should_upgrade() and self._should_upgrade():
            # A WebSocket handshake: its deadline runs on until the handshake completes.
            super().on_headers_complete()
            return
        self._in_body = True
        self._disarm()
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and self._out is not None:
            cycle.transport = self._out  # type: ignore[assignment]
            wire = _Wire(weakref.ref(cycle), self._out)
            self.scope["extensions"] = {EXTENSION: wire}  # type: ignore[dict-item]

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
            self.transport.write(_problem_answer(status, detail, self.server_state.default_headers))
        self.transport.close()
        if status not in (429, 503):  # refusals at a connection limit are logged by count
            client = self.client[0] if self.client else None
            log.info("request refused", status=status, detail=detail, client=client)


# Control frames (ping, pong, close) a feed connection may send per window of this many
# seconds: a client answers the server's pings and may send its own, a few a minute.
_CONTROL_FRAMES = 32
_CONTROL_WINDOW = 20.0
_CONTROL = frozenset({0x8, 0x9, 0xA})  # close, ping, pong


class LimitedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's WebSocket protocol for the feeds, which read nothing from a client.

    Until its handshake completes (the app accepts or refuses) it holds the deadline of
    the head that asked for it, and a handshake its parser rejects (a line over 8 KB,
    more than 128 headers) is answered with a problem and closed: uvicorn sent nothing and
    held the connection for ever. After it, a client's data frame closes the connection
    (1008) before it is parsed, as do control frames beyond _CONTROL_FRAMES a window:
    each inbound frame was parsed and queued on the event loop, so a flood of them
    stalled every other request. A subclass per server sets `limits` and `held`."""

    limits: ClassVar[ConnectionLimits]
    held: ClassVar[_Held]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._address: str | None = None
        self._partial = b""  # the start of a frame header that a read cut
        self._skip = 0  # bytes of the current frame still to come
        self._window_start = 0.0
        self._control = 0

    def hold(self, address: str | None, seconds: float) -> None:
        """Take over the upgraded connection's count and the rest of its head deadline."""
        self._address = address
        self._deadline = self.loop.call_later(seconds, self._late)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._address is not None:
            self.held.release(self._address)
            self._address = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.handshake_initiated:
            refused = self._screen(data)
            if refused:
                self._drop(refused)
                return
        super().data_received(data)
        if not self.handshake_initiated and self.conn.handshake_exc is not None:
            self._refuse_handshake(self.conn.handshake_exc)

    async def send(self, message: Any) -> None:
        await super().send(message)
        if self.handshake_complete:
            self._disarm()

    # -- the handshake ------------------------------------------------------------------

    def _refuse_handshake(self, exc: Exception) -> None:
        if isinstance(exc, RequestLineTooLong):
            status, detail = 414, f"request line too long: at most {MAX_LINE_LENGTH} bytes"
        elif isinstance(exc, HeaderLineTooLong):
            status, detail = 431, f"a header line too long: at most {MAX_LINE_LENGTH} bytes"
        elif isinstance(exc, TooManyHeaders):
            status, detail = 431, f"too many headers: at most {MAX_NUM_HEADERS}"
        else:
            status, detail = 400, "not a valid WebSocket handshake"
        self._answer(status, detail)

    def _late(self) -> None:
        self._deadline = None
        if not self.handshake_complete and not self.transport.is_closing():
            seconds = self.limits.header_timeout
            self._answer(408, f"WebSocket handshake not completed within {seconds:g} s")

    def _answer(self, status: int, detail: str) -> None:
        """Answer the handshake with a problem and close."""
        self._disarm()
        # The app's next send is a ClientDisconnected, which uvicorn ends it with quietly.
        self.handshake_complete = self.close_sent = self.disconnected = True
        self.transport.write(_problem_answer(status, detail, self.default_headers))
        self.transport.close()
        client = self.client[0] if self.client else None
        log.info("request refused", status=status, detail=detail, client=client)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    # -- frames from the client -------------------------------------------------------

    def _screen(self, data: bytes) -> str | None:
        """Walk the frame headers in `data` without parsing the frames: why the connection
        is to close, or None while the client sends only a few control frames."""
        view = self._partial + data if self._partial else data
        self._partial = b""
        at, end = 0, len(view)
        while at < end:
            if self._skip:
                step = min(self._skip, end - at)
                self._skip -= step
                at += step
                continue
            if end - at < 2:
                self._partial = bytes(view[at:])
                return None
            opcode, size = view[at] & 0x0F, view[at + 1] & 0x7F
            if opcode not in _CONTROL:
                return "the feed reads no messages"
            masked = 4 if view[at + 1] & 0x80 else 0
            if size > 125:  # a control frame's payload is at most 125 bytes (RFC 6455)
                return "a control frame too long"
            now = self.loop.time()
            if now - self._window_start > _CONTROL_WINDOW:
                self._window_start, self._control = now, 0
            self._control += 1
            if self._control > _CONTROL_FRAMES:
                return f"more than {_CONTROL_FRAMES} control frames in {_CONTROL_WINDOW:g} s"
            self._skip = masked + size
            at += 2
        return None

    def _drop(self, reason: str) -> None:
        """Close with 1008 (policy violation), unparsed input and all."""
        if self.transport.is_closing():
            return
        if self.handshake_complete and not self.close_sent:
            self.conn.fail(1008, reason)
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.queue.put_nowait({"type": "websocket.disconnect", "code": 1008, "reason": reason})
        self.close_sent = self.disconnected = True
        self.transport.close()
        client = self.client[0] if self.client else None
        log.info("market data client dropped", reason=reason, client=client)
