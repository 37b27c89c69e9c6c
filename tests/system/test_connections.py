"""Connection limits of a real `sandex serve` on loopback (api_adapter/server/connections.py).

Slow clients held connections for ever (3,000 that never finished their body were held
70 s and more, a file descriptor each); a request line over 64 KB got uvicorn's plain
text. The server here runs with 1 s deadlines and room for a few connections; every
bound a test asserts is generous (a DoS property, not a speed)."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandex.api_adapter.cli.parser import parser
from sandex.api_adapter.cli.serve import serve_settings
from tests.support.server_helpers import Process

MAX_CONNECTIONS = 6
CUT_WITHIN = 6.0  # seconds: the deadlines are 1 s; a connection held longer is a failure


class Server(Process):
    def __init__(self, tmp: Path) -> None:
        flags = ["--header-timeout", "1", "--body-timeout", "1"]
        super().__init__(
            tmp / "c.db", tmp / "server.log", *flags, "--max-connections", str(MAX_CONNECTIONS)
        )

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=CUT_WITHIN)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("connections"))
    yield running
    running.stop()


def _send(conn: socket.socket, data: bytes) -> bool:
    """Send what the server may refuse before reading it all; False once it has closed
    the connection under our feet (its answer is still to be read)."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        conn.sendall(data)
        return True
    return False


def _answer(conn: socket.socket) -> tuple[float, bytes]:
    """Seconds until the server closed the connection, and all it sent before."""
    started = time.monotonic()
    received = b""
    try:
        while chunk := conn.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass  # closed with bytes of ours unread: what it sent before is still here
    except TimeoutError:
        pytest.fail(f"connection still open after {CUT_WITHIN} s; it sent {received[:200]!r}")
    finally:
        conn.close()
    return time.monotonic() - started, received


def _problem(received: bytes, status: int) -> dict[str, Any]:
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").lower().split("\r\n")
    assert lines[0].startswith(f"http/1.1 {status} "), received[:300]
    assert "content-type: application/problem+json" in lines, head
    assert "connection: close" in lines, head
    problem: dict[str, Any] = json.loads(body)
    assert problem["status"] == status and problem["title"] and problem["detail"]
    return problem


def test_a_body_that_never_finishes_is_answered_408_and_the_connection_closed(
    server: Server,
) -> None:
    conn = server.connect()
    conn.sendall(
        b"POST /v2/profiles HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b'Content-Length: 100\r\n\r\n{"nickname": "slo'
    )
    took, received = _answer(conn)
    assert took < CUT_WITHIN
    assert _problem(received, 408)["detail"] == "request body not received within 1 s"


def test_a_head_sent_a_byte_at_a_time_is_cut_at_its_deadline(server: Server) -> None:
    """The deadline is the whole head's, not an idle time: bytes trickling in every
    0.2 s do not keep the request alive."""
    conn = server.connect()
    started = time.monotonic()
    request = b"GET /v2/markets HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    for byte in request:
        if not _send(conn, bytes([byte])) or time.monotonic() - started > CUT_WITHIN:
            break
        time.sleep(0.2)
    _, received = _answer(conn)
    assert time.monotonic() - started < CUT_WITHIN
    assert _problem(received, 408)["detail"] == "request headers not received within 1 s"


def test_a_kept_alive_request_whose_head_stops_is_cut_at_its_deadline(server: Server) -> None:
    """The deadline of a second request on a connection starts at its first byte, though
    the read that brought it did not bring the whole head."""
    conn = server.connect()
    conn.sendall(b"GET /v2/markets HTTP/1.1\r\nHost: x\r\n\r\n")
    first = conn.recv(65536)
    assert first.startswith(b"HTTP/1.1 200 "), first[:200]
    conn.sendall(b"GET /v2/markets HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    took, received = _answer(conn)
    assert took < CUT_WITHIN
    assert _problem(received, 408)["detail"] == "request headers not received within 1 s"


def test_a_connection_that_sends_nothing_is_closed(server: Server) -> None:
    took, received = _answer(server.connect())
    assert took < CUT_WITHIN
    _problem(received, 408)


def test_connections_over_the_limit_are_refused_until_the_slow_ones_are_cut(
    server: Server,
) -> None:
    idle = [server.connect() for _ in range(MAX_CONNECTIONS)]
    time.sleep(0.3)  # the server has taken them all
    for _ in range(5):
        extra = server.connect()
        _send(extra, b"GET /v2/markets HTTP/1.1\r\nHost: x\r\n\r\n")
        took, received = _answer(extra)
        assert took < 1.0  # refused as it opens, not after the idle ones are cut
        problem = _problem(received, 503)
        assert f"at most {MAX_CONNECTIONS}" in problem["detail"]
        assert b"retry-after: 1" in received.lower()
    for conn in idle:
        _problem(_answer(conn)[1], 408)
    assert httpx.get(server.url("/v2/markets"), timeout=5).status_code == 200
    # Logged when the limit is reached and when connections are taken again, not per refusal.
    lines = server.log_path.read_text().splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    limit = [e for e in events if e.get("event", "").startswith("connection")]
    assert [e["event"] for e in limit] == [
        "connection limit reached: refusing connections",
        "connections taken again",
    ]
    assert limit[1]["refused"] == 5


@pytest.mark.parametrize("size", [20_000, 70_000, 1_000_000])
def test_a_query_string_over_the_limit_is_a_414_problem(server: Server, size: int) -> None:
    conn = server.connect()
    _send(conn, b"GET /v2/markets?x=" + b"a" * size + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    problem = _problem(_answer(conn)[1], 414)
    assert problem["detail"] == "request line too long: a URL of at most 16384 bytes"
    assert httpx.get(server.url("/v2/markets?x=" + "a" * 15_000)).status_code == 200


def test_a_head_over_the_limit_is_a_431_problem(server: Server) -> None:
    """A header of 2 MB was read whole."""
    conn = server.connect()
    _send(conn, b"GET /v2/markets HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000)
    _problem(_answer(conn)[1], 431)


def test_a_request_that_is_not_http_is_a_400_problem(server: Server) -> None:
    conn = server.connect()
    conn.sendall(b"NOT HTTP AT ALL\r\n\r\n")
    _problem(_answer(conn)[1], 400)


def test_the_limits_are_settings_with_serve_flags() -> None:
    """The documented bounds (docs/security.md): a slow body held a slot 30 s where the
    documentation said 10 s."""
    defaults = serve_settings(parser().parse_args(["serve"]))
    assert defaults.header_timeout_seconds == 10  # type: ignore[attr-defined]
    assert defaults.body_timeout_seconds == 10  # type: ignore[attr-defined]
    assert defaults.keep_alive_timeout_seconds == 5  # type: ignore[attr-defined]
    assert defaults.max_connections == 1000  # type: ignore[attr-defined]
    assert defaults.max_connections_per_ip == 100  # type: ignore[attr-defined]
    flags = ["--header-timeout", "2.5", "--body-timeout", "7", "--keep-alive-timeout", "3"]
    flags += ["--max-connections", "50", "--max-connections-per-ip", "5"]
    tuned = serve_settings(parser().parse_args(["serve", *flags]))
    assert tuned.header_timeout_seconds == 2.5  # type: ignore[attr-defined]
    assert tuned.body_timeout_seconds == 7  # type: ignore[attr-defined]
    assert tuned.keep_alive_timeout_seconds == 3  # type: ignore[attr-defined]
    assert tuned.max_connections == 50  # type: ignore[attr-defined]
    assert tuned.max_connections_per_ip == 5  # type: ignore[attr-defined]
