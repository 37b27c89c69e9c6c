"""Every answer of a real `sandex serve` says it is a sandex, and which version: the
`X-Sandex-Version` header (api_adapter/version.py), set once in the server
(`uvicorn_options`), so that answers no app produced (a connection's refusals, a feed's
WebSocket handshake) carry it as the app's do."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from importlib.metadata import version

import httpx
import pytest
from websockets.sync.client import connect

from tests.support.server_helpers import Process

HEADER = "x-sandex-version"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    tmp = tmp_path_factory.mktemp("version")
    running = Process(tmp / "v.db", tmp / "server.log", "--clock", "manual")
    yield running
    running.stop()


def _raw(server: Process, data: bytes) -> bytes:
    """What the server answers `data` on a connection of its own, up to its close."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as conn:
        conn.sendall(data)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    return received


def test_every_kind_of_answer_carries_the_installed_version(server: Process) -> None:
    base, expected = server.base, version("sandex")
    login = {"grant_type": "client_credentials", "client_id": "sandex"}
    token = httpx.post(f"{base}/oauth2/token", data={**login, "client_secret": "sandex-secret"})
    assert token.status_code == 200, token.text
    bearer = {"Authorization": f"Bearer {token.json()['access_token']}"}
    world = httpx.post(f"{base}/v2/sandbox/worlds", json={}, headers=bearer, timeout=30)
    assert world.status_code == 200, world.text
    in_world = f"{base}/w/{world.json()['id']}"
    answers = {
        "token": token,
        "token refused": httpx.post(f"{base}/oauth2/token", data={**login, "client_secret": "x"}),
        "healthz": httpx.get(f"{base}/healthz"),
        "a read": httpx.get(f"{base}/v2/markets"),
        "a world made": world,
        "a read in a world": httpx.get(f"{in_world}/v2/markets"),
        "healthz in a world": httpx.get(f"{in_world}/healthz"),
        "no such path": httpx.get(f"{base}/v2/no-such-thing"),
        "no such world": httpx.get(f"{base}/w/w_nosuchworld/v2/markets"),
        "no token": httpx.get(f"{base}/v2/profiles"),
        # the fast lane's gates refuse it before FastAPI sees it
        "the fast lane": httpx.post(f"{base}/v2/profiles/p/orders", json={}),
        "a problem of the app": httpx.post(f"{base}/v2/sandbox/clock", json={}, headers=bearer),
    }
    assert answers["no such path"].status_code == 404
    assert answers["the fast lane"].status_code == 401
    missing = {
        kind: r.status_code for kind, r in answers.items() if r.headers.get(HEADER) != expected
    }
    assert not missing, f"no {HEADER}: {expected} on {missing}"


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(b"GET /v2/markets?" + b"q" * 70_000 + b" HTTP/1.1\r\n\r\n", id="414"),
        pytest.param(b"NOT HTTP AT ALL\r\n\r\n", id="400"),
    ],
)
def test_a_connection_refused_by_the_server_itself_carries_it(
    server: Process, request_bytes: bytes
) -> None:
    head = _raw(server, request_bytes).partition(b"\r\n\r\n")[0].decode("latin-1").lower()
    assert "application/problem+json" in head, head
    assert f"{HEADER}: {version('sandex')}" in head.split("\r\n"), head


def test_a_feed_handshake_carries_it(server: Process) -> None:
    ws_base = server.base.replace("http://", "ws://")
    with connect(f"{ws_base}/marketdata/BTCUSD", open_timeout=10) as ws:
        assert ws.response is not None
        assert ws.response.headers.get(HEADER) == version("sandex")
