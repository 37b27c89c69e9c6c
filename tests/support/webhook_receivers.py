"""Local webhook receivers for the tests: a well-behaved HTTP one and raw TCP ones that
misbehave (huge or endless answers, dribbled headers, a port that does not speak HTTP).
They listen on 127.0.0.1, which a sandbox reaches only when its operator allows it."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sandex.api_adapter.webhook_delivery import Deliverer

LOCAL = ["127.0.0.1"]


class Receiver:
    """A local HTTP endpoint that fails its first `failures` requests, or hangs, or
    answers `status` with `headers`."""

    def __init__(
        self,
        failures: int = 0,
        hang: float = 0.0,
        status: int = 204,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.failures = failures
        self.hang = hang
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.attempts = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.attempts += 1
                if receiver.hang:
                    time.sleep(receiver.hang)
                if receiver.failures > 0:
                    receiver.failures -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                receiver.received.append((dict(self.headers), body))
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class RawReceiver:
    """A TCP endpoint whose `answer(sock, receiver)` writes whatever it likes; it counts
    the bytes it managed to send and notes when the deliverer closed the connection."""

    def __init__(self, answer: Callable[[socket.socket, RawReceiver], None]) -> None:
        self.connections = 0
        self.sent = 0
        self.closed_by_peer = False
        receiver = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                receiver.connections += 1
                try:
                    answer(self.request, receiver)
                except OSError:  # BrokenPipe, ConnectionReset: the deliverer hung up
                    receiver.closed_by_peer = True

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def send(self, sock: socket.socket, data: bytes) -> None:
        sock.sendall(data)
        self.sent += len(data)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def opened() -> Iterator[Callable[..., Any]]:
    """`make(kind, ...)` opens a receiver of `kind`, closed when the block ends."""
    made: list[Receiver | RawReceiver] = []

    def make(kind: Any, *args: Any, **kw: Any) -> Any:
        r = kind(*args, **kw)
        made.append(r)
        return r

    try:
        yield make
    finally:
        for r in made:
            r.close()


def read_request(sock: socket.socket) -> None:
    """Read one request's head and its Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return
        body += chunk


def hold(sock: socket.socket, seconds: float = 30.0) -> None:
    """Keep the connection open until the peer closes it (or `seconds` pass)."""
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        pass


def start_deliverer(sb: Any, **kw: Any) -> Deliverer:
    """A fast-polling deliverer for `sb`, allowed what its engine's settings allow."""
    options: dict[str, Any] = {
        "poll_seconds": 0.02,
        "backoff_first": 0.05,
        "backoff_max": 0.2,
        "timeout": 2,
        "allowed_hosts": sb.engine.settings.webhook_allowed_hosts,
        "engine": sb.engine,  # asked about webhook fault rules
    }
    options.update(kw)
    d = Deliverer(str(sb.db), **options)
    sb.app.state.webhooks = d
    d.start()
    return d


def wait(condition: Callable[[], object], seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
