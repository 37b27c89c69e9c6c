"""Issue 31's wire faults (`sandex.api_adapter.wire_faults`): what a client gets when a fault
rule drops, resets, empties or truncates an answer.

On the connection: a uvicorn with `sandex serve`'s protocol (tests/support/wire_server.py,
on the event loop `sandex serve` takes and on asyncio's), read with raw sockets so that
exactly what arrives is asserted, directly and through the worlds dispatcher. In
process: the app a `World` builds, through Starlette's TestClient and httpx's
ASGITransport."""

from __future__ import annotations

import asyncio
import errno
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from sandex.api_adapter.bootstrap import fixed
from sandex.api_adapter.wire_faults import KINDS, arm
from sandex.api_adapter.world import World
from tests.conftest import make_settings
from tests.support.server_helpers import ROOT, free_port
from tests.support.wire_server import PAD, WORLD


@dataclass
class WireServer:
    port: int
    log: Path

    def exchange(self, *requests: bytes) -> bytes:
        """Send `requests` at once (pipelined) and read until the server closes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(b"".join(requests))
            got = b""
            while chunk := sock.recv(65536):
                got += chunk
            return got

    def lines(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]


@pytest.fixture(scope="module", params=["auto", "asyncio"])
def wire(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WireServer]:
    """The server, once per event loop (`auto`: uvloop, as `sandex serve`)."""
    log = tmp_path_factory.mktemp("wire") / "server.log"
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.wire_server", str(port), request.param],
            cwd=ROOT,
            stdout=out,
            stderr=out,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the wire server did not start"
                time.sleep(0.05)
        yield WireServer(port, log)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def get(path: str, request_id: str = "", close: bool = False) -> bytes:
    head = [f"GET {path} HTTP/1.1", "Host: sandex"]
    if request_id:
        head.append(f"X-Request-ID: {request_id}")
    if close:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode()


def answers(raw: bytes) -> list[tuple[bytes, dict[bytes, bytes], bytes]]:
    """The answers in `raw`, each (status line, headers, body) by its content-length;
    what follows the last whole head is the last answer's body, short or not."""
    found = []
    while raw:
        head, _, raw = raw.partition(b"\r\n\r\n")
        status, *lines = head.split(b"\r\n")
        headers = dict(line.split(b": ", 1) for line in lines)
        length = int(headers.get(b"content-length", len(raw)))
        found.append((status, headers, raw[:length]))
        raw = raw[length:]
    return found


PREFIXES = ["", f"/w/{WORLD}"]  # the default world's app, and a world's through dispatch


@pytest.mark.parametrize("prefix", PREFIXES)
def test_drop_sends_no_byte_and_serves_no_pipelined_request(wire: WireServer, prefix: str) -> None:
    got = wire.exchange(get(f"{prefix}/wire/drop"), get(f"{prefix}/wire/none"))
    assert got == b""  # an orderly end (FIN), not a reset, and nothing before it


@pytest.mark.parametrize("prefix", PREFIXES)
def test_reset_resets_the_connection_without_an_answer(wire: WireServer, prefix: str) -> None:
    with socket.create_connection(("127.0.0.1", wire.port), timeout=10) as sock:
        sock.sendall(get(f"{prefix}/wire/reset"))
        with pytest.raises(ConnectionResetError) as reset:
            sock.recv(65536)
    assert reset.value.errno == errno.ECONNRESET


@pytest.mark.parametrize("prefix", PREFIXES)
def test_empty_is_a_200_with_no_body_on_a_connection_that_goes_on(
    wire: WireServer, prefix: str
) -> None:
    got = wire.exchange(
        get(f"{prefix}/wire/empty?status=202"),  # the app's 202 is a 200 on the wire
        get(f"{prefix}/wire/none"),
        get(f"{prefix}/wire/none", close=True),
    )
    (status, headers, body), *after = answers(got)
    assert status == b"HTTP/1.1 200 OK"
    assert headers[b"content-length"] == b"0"
    assert b"transfer-encoding" not in headers
    assert body == b""
    assert [(s, json.loads(b)["kind"]) for s, _, b in after] == [(b"HTTP/1.1 200 OK", "none")] * 2


@pytest.mark.parametrize("prefix", PREFIXES)
def test_truncate_announces_the_whole_body_sends_half_then_closes(
    wire: WireServer, prefix: str
) -> None:
    got = wire.exchange(get(f"{prefix}/wire/truncate"), get(f"{prefix}/wire/none"))
    [(status, headers, body)] = answers(got)  # the pipelined request is not served
    announced = int(headers[b"content-length"])
    assert status == b"HTTP/1.1 200 OK"
    assert announced > PAD
    assert len(body) == announced // 2
    assert (
        json.dumps({"kind": "truncate", "pad": "x" * PAD}, separators=(",", ":")).encode()[
            : len(body)
        ]
        == body
    )


def test_a_100_continue_before_the_spoiled_answer_is_sent_as_it_is(wire: WireServer) -> None:
    head = b"POST /wire/truncate HTTP/1.1\r\nHost: sandex\r\nContent-Length: 5\r\n"
    with socket.create_connection(("127.0.0.1", wire.port), timeout=10) as sock:
        sock.sendall(head + b"Expect: 100-continue\r\n\r\n")
        interim = b""
        while not interim.endswith(b"\r\n\r\n"):
            interim += sock.recv(1)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"hello")
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    [(status, headers, body)] = answers(got)
    assert status == b"HTTP/1.1 200 OK"
    assert len(body) == int(headers[b"content-length"]) // 2


def test_truncate_cuts_a_streamed_answer_in_its_first_chunk(wire: WireServer) -> None:
    got = wire.exchange(get("/wire/truncate?stream=1"))
    head, _, rest = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"transfer-encoding: chunked" in head
    size, _, chunk = rest.partition(b"\r\n")
    assert 0 < len(chunk) < int(size, 16)  # cut within its first chunk, then the end
    assert not rest.endswith(b"0\r\n\r\n")


@pytest.mark.parametrize(
    ("kind", "error"),
    [("drop", httpx.RemoteProtocolError), ("reset", httpx.ReadError)]
    + [("truncate", httpx.RemoteProtocolError)],
)
def test_an_http_client_sees_a_transport_error(
    wire: WireServer, kind: str, error: type[Exception]
) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{wire.port}") as client:
        with pytest.raises(error):
            client.get(f"/wire/{kind}")
        assert client.get("/wire/none").json()["kind"] == "none"  # on a new connection
        answer = client.get("/wire/empty")
        assert (answer.status_code, answer.content) == (200, b"")


def test_each_spoiled_request_is_logged_with_its_request_id(wire: WireServer) -> None:
    for kind in KINDS:
        try:
            wire.exchange(get(f"/wire/{kind}", request_id=f"wire-{kind}", close=True))
        except ConnectionResetError:
            assert kind == "reset"
    lines = wire.lines()
    for kind in KINDS:
        mine = [line for line in lines if line.get("request_id") == f"wire-{kind}"]
        assert [line["event"] for line in mine] == ["wire fault armed", "request"], mine
        assert (mine[0]["kind"], mine[0]["on"]) == (kind, "connection")
        assert (mine[1]["path"], mine[1]["status"]) == (f"/wire/{kind}", 200)


# -- in process ---------------------------------------------------------------------


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """A started world whose app has a test-only route that arms a wire fault."""
    made = World.open(
        tmp_path / "wire.db",
        make_settings(),
        bootstrap=fixed("sandex", "sandex-secret"),
        background=False,
    ).start()

    async def wired(kind: str, request: Request) -> dict[str, str]:
        if kind in KINDS:
            arm(request.scope, kind)
        return {"pad": "x" * PAD}  # the same body whatever the kind

    made.app.add_api_route("/test/wire/{kind}", wired, include_in_schema=False)
    try:
        yield made
    finally:
        made.stop()


def test_in_process_drop_and_reset_raise_what_a_connection_would(world: World) -> None:
    client = TestClient(world.app)
    with pytest.raises(httpx.RemoteProtocolError):
        client.get("/test/wire/drop")
    with pytest.raises(httpx.ReadError):
        client.get("/test/wire/reset")
    assert client.get("/v2/sandbox/clock").status_code == 200

    async def through_asgi_transport() -> None:
        transport = httpx.ASGITransport(app=world.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://sandex") as http:
            with pytest.raises(httpx.RemoteProtocolError):
                await http.get("/test/wire/drop")

    asyncio.run(through_asgi_transport())


def test_in_process_empty_and_truncate_change_the_body(world: World) -> None:
    client = TestClient(world.app)
    whole = len(client.get("/test/wire/none").content)
    empty = client.get("/test/wire/empty")
    assert (empty.status_code, empty.headers["content-length"], empty.content) == (200, "0", b"")
    cut = client.get("/test/wire/truncate")
    assert (cut.status_code, cut.headers["content-length"]) == (200, str(whole))
    assert len(cut.content) == whole // 2


def test_a_kind_outside_the_list_is_refused() -> None:
    with pytest.raises(ValueError, match="one of drop, reset, empty, truncate"):
        arm({"type": "http"}, "slow")
