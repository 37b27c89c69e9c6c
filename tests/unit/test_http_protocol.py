"""The HTTP protocol of `sandex serve` (api_adapter/server/connections.py) on a transport
that records what it is given: an answer leaves in one write, a streamed one chunk by
chunk, and nothing written is lost at a close."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from sandex.api_adapter.server.connections import uvicorn_options
from sandex.engine.config.settings import Settings

REQUEST = b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n"


class Recorder(asyncio.Transport):
    """A transport that keeps each write apart."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:  # type: ignore[override]
        assert not self.closed, "written after the close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5000), "sockname": ("127.0.0.1", 80)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _connect(app: Any) -> tuple[Any, Recorder]:
    options = uvicorn_options(Settings())
    config = Config(app, http=options["http"], lifespan="off", log_config=None)
    config.load()
    protocol = options["http"](
        config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop()
    )
    transport = Recorder()
    protocol.connection_made(transport)
    return protocol, transport


async def _turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def _answer(scope: Any, receive: Any, send: Any) -> None:
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


def test_an_answer_leaves_in_one_write_head_and_body_together() -> None:
    async def run() -> list[bytes]:
        protocol, transport = _connect(_answer)
        protocol.data_received(REQUEST + REQUEST)  # two pipelined: one write each
        await _turns()
        protocol.connection_lost(None)
        return transport.writes

    writes = asyncio.run(run())
    assert len(writes) == 2
    for write in writes:
        assert write.startswith(b"HTTP/1.1 200 OK\r\n") and write.endswith(b"\r\n\r\nok")


def test_a_streamed_answer_leaves_chunk_by_chunk_not_at_its_end() -> None:
    async def run() -> tuple[list[bytes], list[bytes]]:
        more = asyncio.Event()

        async def stream(scope: Any, receive: Any, send: Any) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"first", "more_body": True})
            await more.wait()
            await send({"type": "http.response.body", "body": b"last"})

        protocol, transport = _connect(stream)
        protocol.data_received(REQUEST)
        await _turns()
        before = list(transport.writes)  # the app still waits to send the rest
        more.set()
        await _turns()
        protocol.connection_lost(None)
        return before, transport.writes

    before, after = asyncio.run(run())
    assert b"".join(before).endswith(b"5\r\nfirst\r\n")
    assert b"".join(after).endswith(b"4\r\nlast\r\n0\r\n\r\n")


def test_what_is_written_before_a_close_is_sent_before_it() -> None:
    async def run() -> Recorder:
        protocol, transport = _connect(_answer)
        protocol.data_received(b"GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        await _turns()
        return transport

    transport = asyncio.run(run())
    assert transport.closed
    assert len(transport.writes) == 1 and transport.writes[0].endswith(b"ok")


def test_a_large_answer_is_not_held() -> None:
    """Past 64 KiB a write goes to the transport at once: its back-pressure still holds
    back a sender."""

    async def run() -> list[bytes]:
        big = b"x" * 100_000

        async def large(scope: Any, receive: Any, send: Any) -> None:
            headers = [(b"content-length", b"%d" % (2 * len(big)))]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": big, "more_body": True})
            seen.append(len(transport.writes))
            await send({"type": "http.response.body", "body": big})

        seen: list[int] = []
        protocol, transport = _connect(large)
        protocol.data_received(REQUEST)
        await _turns()
        protocol.connection_lost(None)
        assert seen == [1]  # head and first chunk out before the app went on
        return transport.writes

    writes = asyncio.run(run())
    assert len(writes) == 2 and writes[1] == b"x" * 100_000


def test_a_whole_head_over_the_limit_is_refused_before_it_is_parsed() -> None:
    """A 100 KB head that arrived in one read was parsed and served, though
    `max_header_bytes` is 64 KiB: its size was counted only after parsing."""

    async def run() -> tuple[Recorder, list[Any]]:
        called: list[Any] = []

        async def app(scope: Any, receive: Any, send: Any) -> None:
            called.append(scope)
            await _answer(scope, receive, send)

        protocol, transport = _connect(app)
        big = b"GET /x HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n"
        protocol.data_received(big)
        await _turns()
        protocol.connection_lost(None)
        return transport, called

    transport, called = asyncio.run(run())
    assert not called and transport.closed
    assert len(transport.writes) == 1
    assert transport.writes[0].startswith(b"HTTP/1.1 431 ")
    assert transport.writes[0].endswith(b'"detail":"request head too large: at most 65536 bytes"}')


def test_a_head_under_the_limit_with_its_body_in_the_same_read_is_served() -> None:
    """Only the head is measured, up to its blank line: the body that follows in the same
    read does not count towards `max_header_bytes`."""

    async def run() -> list[bytes]:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            while (await receive()).get("more_body"):
                pass
            await _answer(scope, receive, send)

        protocol, transport = _connect(app)
        body = b"b" * 60_000
        head = b"POST /x HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 60_000
        protocol.data_received(head + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        await _turns()
        protocol.connection_lost(None)
        return transport.writes

    writes = asyncio.run(run())
    assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 200 ")


UPGRADE = (
    b"GET /feed HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
)


class Switching(Recorder):
    """A Recorder whose protocol an upgrade replaces, as asyncio's transports do."""

    protocol: Any = None

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol

    def get_protocol(self) -> Any:
        return self.protocol


def _upgraded(app: Any, **settings: Any) -> tuple[Any, Switching, Any]:
    """The HTTP protocol, its transport, and the counts of its server after an upgrade
    request (the WebSocket protocol is then `transport.protocol`)."""
    options = uvicorn_options(Settings(**settings))
    config = Config(app, http=options["http"], ws=options["ws"], lifespan="off", log_config=None)
    config.load()
    state = ServerState()
    protocol = options["http"](
        config=config, server_state=state, app_state={}, _loop=asyncio.get_running_loop()
    )
    transport = Switching()
    transport.protocol = protocol
    protocol.connection_made(transport)
    return protocol, transport, options["http"].held


async def _accepts(scope: Any, receive: Any, send: Any) -> None:
    await receive()
    await send({"type": "websocket.accept"})
    while (await receive())["type"] != "websocket.disconnect":
        pass


async def _never_accepts(scope: Any, receive: Any, send: Any) -> None:
    await asyncio.Event().wait()


def _close_of(frame: bytes) -> tuple[int, bytes]:
    assert frame[0] == 0x88, frame  # an unmasked close frame, as a server sends it
    return int.from_bytes(frame[2:4], "big"), frame[4 : 2 + frame[1]]


def test_a_feed_connection_that_sends_a_message_is_closed_1008_and_released() -> None:
    """The feeds read nothing: a data frame closes the connection before it is parsed (a
    flood of them was parsed and queued on the event loop), and the address's count goes
    with the connection."""

    async def run() -> tuple[Switching, Any, dict[str, int]]:
        protocol, transport, held = _upgraded(_accepts)
        protocol.data_received(UPGRADE + b"\r\n")
        await _turns()
        assert transport.writes[-1].startswith(b"HTTP/1.1 101 ")
        assert dict(held.per_ip) == {"127.0.0.1": 1}
        transport.protocol.data_received(b"\x81\x81\x00\x00\x00\x00x" * 1000)
        await _turns()
        transport.protocol.connection_lost(None)
        await _turns()
        return transport, transport.protocol, dict(held.per_ip)

    transport, ws, per_ip = asyncio.run(run())
    assert transport.closed and per_ip == {}
    assert _close_of(transport.writes[-1]) == (1008, b"the feed reads no messages")
    assert ws.queue.empty() or ws.queue.get_nowait()["type"] == "websocket.disconnect"


def test_a_feed_connection_that_floods_control_frames_is_closed_1008() -> None:
    async def run() -> Switching:
        protocol, transport, _ = _upgraded(_accepts)
        protocol.data_received(UPGRADE + b"\r\n")
        await _turns()
        ping = b"\x89\x80\x00\x00\x00\x00"  # a masked ping, no payload
        transport.protocol.data_received(ping * 10)
        await _turns()
        assert not transport.closed  # a few pings are answered
        transport.protocol.data_received(ping * 30)
        await _turns()
        transport.protocol.connection_lost(None)
        return transport

    transport = asyncio.run(run())
    assert transport.closed
    assert _close_of(transport.writes[-1]) == (1008, b"more than 32 control frames in 20 s")


def test_a_handshake_the_websocket_parser_rejects_is_answered_431() -> None:
    """uvicorn sent nothing for it and held the connection for ever."""

    async def run() -> tuple[Switching, dict[str, int]]:
        protocol, transport, held = _upgraded(_accepts)
        protocol.data_received(UPGRADE + b"X-Big: " + b"a" * 9000 + b"\r\n\r\n")
        await _turns()
        transport.protocol.connection_lost(None)
        return transport, dict(held.per_ip)

    transport, per_ip = asyncio.run(run())
    assert transport.closed and per_ip == {}
    assert transport.writes[-1].startswith(b"HTTP/1.1 431 ")
    assert b'"detail":"a header line too long: at most 8192 bytes"' in transport.writes[-1]


def test_an_upgrade_keeps_the_head_deadline_until_the_handshake_completes() -> None:
    """The head's deadline was disarmed at the upgrade: a handshake never completed held
    its connection for ever."""

    async def run() -> Switching:
        protocol, transport, _ = _upgraded(_never_accepts, header_timeout_seconds=0.05)
        protocol.data_received(UPGRADE + b"\r\n")
        for _ in range(100):
            if transport.closed:
                break
            await asyncio.sleep(0.01)
        transport.protocol.connection_lost(None)
        return transport

    transport = asyncio.run(run())
    assert transport.closed
    assert transport.writes[-1].startswith(b"HTTP/1.1 408 ")
    assert b"WebSocket handshake not completed within 0.05 s" in transport.writes[-1]
