"""The console on a real `sandex serve`: on by default on loopback, off elsewhere unless
asked (`--console`, `--no-console`), and its live stream over a real socket."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.support.server_helpers import Server


def _signed_in(server: Server) -> httpx.Client:
    client = httpx.Client(base_url=server.base, timeout=10)
    page = client.get("/console/signin")
    assert page.status_code == 200, page.text
    token = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert token
    form = {"csrf": token.group(1), "client_id": "sandex", "client_secret": "sandex-secret"}
    answer = client.post("/console/signin", data=form)
    assert answer.status_code == 303, answer.text
    return client


def test_loopback_serves_the_console_and_streams_each_commit(
    tmp_path: Path, servers: list[Server]
) -> None:
    server = Server(tmp_path / "sandex.db", "--clock", "manual")
    servers.append(server)
    browser = _signed_in(server)
    headers = server.token()
    with browser.stream("GET", "/console/stream") as stream:
        lines = stream.iter_lines()
        assert next(lines).startswith("retry:")
        assert next(lines) == "event: hello"
        moved = httpx.post(
            f"{server.base}/v2/sandbox/clock", json={"advance_seconds": 1}, headers=headers
        )
        assert moved.status_code == 200, moved.text
        deposit = httpx.post(
            f"{server.base}/v2/sandbox/profiles/default/deposit",
            json={"asset": "USD", "amount": "1"},
            headers=headers,
        )
        assert deposit.status_code == 200, deposit.text
        assert "event: commit" in (line for line in lines if line.startswith("event: commit"))
    browser.close()
    code, out, _ = server.stop()
    assert code == 0 and f"console:     {server.base}/console" in out


def test_no_console_turns_it_off_on_loopback(tmp_path: Path, servers: list[Server]) -> None:
    server = Server(tmp_path / "sandex.db", "--no-console")
    servers.append(server)
    assert httpx.get(f"{server.base}/console/signin").status_code == 404
    code, out, _ = server.stop()
    assert "console:" not in out


@pytest.mark.slow  # two servers started one after the other
def test_another_host_serves_the_console_only_when_asked(
    tmp_path: Path, servers: list[Server]
) -> None:
    env = {"SANDEX_CLIENT_SECRET": "sandex-secret"}
    off = Server(tmp_path / "off.db", "--host", "0.0.0.0", env=env)
    servers.append(off)
    assert httpx.get(f"{off.base}/console/signin").status_code == 404
    off.stop()
    on = Server(tmp_path / "on.db", "--host", "0.0.0.0", "--console", env=env)
    servers.append(on)
    assert httpx.get(f"{on.base}/console/signin").status_code == 200
    on.stop()
