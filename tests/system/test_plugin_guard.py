"""The pytest plugin's guard rails around a URL it is given (sandex.testing._guard): a
URL outside loopback refused before any connection unless allowed, and a URL that is not
a sandex, or an older one, stopping the session in one line."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from sandex.testing._guard import OLDEST_SUPPORTED, is_loopback, older, version_key

pytest_plugins = ["pytester"]

# see tests/system/test_plugin.py: httpx's transport imported before pytester's first test
httpx.Client().close()

# A conftest of the example suite's that records every connection its process attempts
# (one JSON line each, in $SANDEX_CONNECTS) and refuses those outside loopback, so that
# an attempt is seen and nothing leaves the machine.
RECORD_CONNECTS = """
import json, os, socket

_connect = socket.socket.connect

def connect(self, address):
    with open(os.environ["SANDEX_CONNECTS"], "a") as f:
        f.write(json.dumps(list(address)[:2]) + "\\n")
    if not str(address[0]).startswith(("127.", "::1")):
        raise ConnectionRefusedError("refused by the test's conftest")
    return _connect(self, address)

socket.socket.connect = connect
"""

# The example suites run without the dev environment's heavy plugins (hypothesis,
# schemathesis, anyio): the plugin is what these tests are about.
ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:schemathesis")
ARGS += ("-p", "no:anyio")

EXAMPLE = "def test_world(sandex_world):\n    sandex_world.clock.advance(seconds=1)\n"


@pytest.fixture
def connects(pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "connects.jsonl"
    path.touch()
    monkeypatch.setenv("SANDEX_CONNECTS", str(path))
    monkeypatch.delenv("SANDEX_URL", raising=False)
    pytester.makeconftest(RECORD_CONNECTS)
    pytester.makepyfile(EXAMPLE)
    return path


def attempted(path: Path) -> list[list[object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def one_error_line(result: pytest.RunResult) -> str:
    """The run stopped as a usage error, in one line and with no traceback."""
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.errlines + result.outlines if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    return lines[0]


@pytest.mark.parametrize(
    "how", ["flag", "env", "ini"], ids=["--sandex-url", "SANDEX_URL", "ini sandex_url"]
)
def test_a_url_outside_loopback_is_refused_before_any_connection(
    pytester: pytest.Pytester, connects: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    url = "http://192.0.2.1:1"
    args = list(ARGS)
    if how == "flag":
        args.append(f"--sandex-url={url}")
    elif how == "env":
        monkeypatch.setenv("SANDEX_URL", url)
    else:
        pytester.makeini(f"[pytest]\nsandex_url = {url}\n")
    result = pytester.runpytest_subprocess(*args)
    line = one_error_line(result)
    assert "refusing --sandex-url http://192.0.2.1:1: not a loopback address" in line
    assert "--sandex-allow-remote" in line
    assert attempted(connects) == []


@pytest.mark.parametrize("how", ["flag", "ini"])
def test_allow_remote_lets_the_plugin_try_a_remote_url(
    pytester: pytest.Pytester, connects: Path, how: str
) -> None:
    """With the flag (or its ini line) the URL is tried; here nothing answers, and that
    too is said in one line."""
    args = [*ARGS, "--sandex-url=http://192.0.2.1:1"]
    if how == "flag":
        args.append("--sandex-allow-remote")
    else:
        pytester.makeini("[pytest]\nsandex_allow_remote = true\n")
    result = pytester.runpytest_subprocess(*args)
    line = one_error_line(result)
    assert "sandex: no answer from http://192.0.2.1:1/healthz" in line
    assert ["192.0.2.1", 1] in attempted(connects)


class Other(BaseHTTPRequestHandler):
    """Some program on loopback: `version` is the X-Sandex-Version it answers, if any."""

    version: str | None = None

    def do_GET(self) -> None:
        self.send_response(200)
        if self.version is not None:
            self.send_header("X-Sandex-Version", self.version)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def other() -> Iterator[tuple[ThreadingHTTPServer, type[Other]]]:
    handler = type("Handler", (Other,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, handler
    server.shutdown()
    server.server_close()


def test_a_url_that_is_not_a_sandex_stops_the_session_in_one_line(
    pytester: pytest.Pytester, connects: Path, other: tuple[ThreadingHTTPServer, type[Other]]
) -> None:
    """`localhost`, resolving to loopback only, is let through to the check."""
    url = f"http://localhost:{other[0].server_address[1]}"
    result = pytester.runpytest_subprocess(*ARGS, f"--sandex-url={url}/v2")
    line = one_error_line(result)
    assert f"sandex: {url} is not a sandex" in line and "X-Sandex-Version" in line


def test_a_sandex_older_than_supported_stops_the_session_in_one_line(
    pytester: pytest.Pytester, connects: Path, other: tuple[ThreadingHTTPServer, type[Other]]
) -> None:
    other[1].version = "0.0.9"
    url = f"http://127.0.0.1:{other[0].server_address[1]}"
    result = pytester.runpytest_subprocess(*ARGS, f"--sandex-url={url}")
    line = one_error_line(result)
    assert f"sandex: {url} is sandex 0.0.9, older than this plugin supports" in line
    assert f"({OLDEST_SUPPORTED} or later)" in line


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8000", True),
        ("http://127.3.4.5", True),
        ("http://[::1]:8000/v2", True),
        ("http://[::ffff:127.0.0.1]:80", True),
        ("http://localhost:8000", True),
        ("http://192.0.2.1:1", False),
        ("https://api.sandbox.paxos.com/v2", False),
        ("http://localhost.example.com", False),
        ("http://0.0.0.0:8000", False),
        ("http://[::]:8000", False),
    ],
)
def test_loopback_is_an_address_of_127_8_or_1_or_localhost(url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback


@pytest.mark.parametrize(
    ("version", "than", "is_older"),
    [
        ("0.0.9", "0.1.0", True),
        ("0.9", "0.10", True),  # numbers, not text
        ("0.10.0", "0.9.0", False),
        ("1.0", "1.0.0", False),
        ("1.0rc1", "1.0", True),
        ("1.0.dev3", "1.0", True),
        ("1.0.post1", "1.0", False),
        ("0.1.0+local", "0.1.0", False),
        ("unknown (not installed)", "0.1.0", False),  # a source tree's: not older
    ],
)
def test_versions_compare_by_number(version: str, than: str, is_older: bool) -> None:
    assert older(version, than) is is_older
    assert version_key(than) is not None
