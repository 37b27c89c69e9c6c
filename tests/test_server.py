"""The served protocol: each response's head and body leave in one write, and the
answers are the ones uvicorn's own protocol gives."""

from __future__ import annotations

import socket
import threading
import time
from types import SimpleNamespace
from typing import Any

import uvicorn

from api_adapter.server import OneWriteProtocol, _OneWrite


class _Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def test_head_waits_for_the_body_and_leaves_with_it() -> None:
    transport, cycle = _Transport(), SimpleNamespace(response_started=False)
    one = _OneWrite(transport, cycle)  # type: ignore[arg-type]
    one.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # before the response: passes through
    cycle.response_started = True
    one.write(b"HEAD\r\n\r\n")
    assert transport.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    one.write(b"body")
    one.write(b"more")
    assert transport.writes[1:] == [b"HEAD\r\n\r\nbody", b"more"]
    assert not one.is_closing()


def test_a_held_head_is_written_before_close() -> None:
    transport, cycle = _Transport(), SimpleNamespace(response_started=True)
    one = _OneWrite(transport, cycle)  # type: ignore[arg-type]
    one.write(b"HEAD\r\n\r\n")
    one.close()
    assert transport.writes == [b"HEAD\r\n\r\n"] and transport.closed


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    body = b'{"ok":true}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _exchange(port: int, raw: bytes, until: bytes, times: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(raw)
        got = b""
        while got.count(until) < times:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def test_served_answers_keep_their_shape_in_one_write() -> None:
    writes: list[bytes] = []
    config = uvicorn.Config(_app, port=0, http=OneWriteProtocol, log_config=None, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        real_write = _OneWrite.write

        def spy(self: _OneWrite, data: bytes) -> None:
            writes.append(data)
            real_write(self, data)

        _OneWrite.write = spy  # type: ignore[method-assign]
        try:
            two = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"
            answer = _exchange(port, two, b'{"ok":true}', 2)
        finally:
            _OneWrite.write = real_write  # type: ignore[method-assign]
        head = _exchange(port, b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", b"\r\n\r\n", 1)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 2
    assert answer.endswith(b'\r\n\r\n{"ok":true}')
    assert answer.count(b'{"ok":true}') == 2
    assert len(writes) == 4  # head, then body, for each keep-alive request
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length: 11" in head
