"""The command line for CI and shell steps: `sandex wait` (a sandex answering, none
within the timeout, a URL that is not a sandex), `sandex openapi`, and docs/ci.md's
script run as written against a small example suite."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.support.server_helpers import ROOT, SANDEX, Process, free_port

CI_DOC = ROOT / "docs" / "ci.md"
# The example suite the documented script runs: a test of a user's that talks to sandex.
EXAMPLE_SUITE = """
import os

import httpx


def test_the_sandex_of_the_job_answers():
    base = os.environ["SANDEX_URL"]
    login = {"grant_type": "client_credentials", "client_id": os.environ["SANDEX_CLIENT_ID"],
             "client_secret": os.environ["SANDEX_CLIENT_SECRET"]}
    r = httpx.post(f"{base}/oauth2/token", data=login)
    assert r.status_code == 200, r.text
    assert httpx.get(f"{base}/v2/markets").status_code == 200
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    tmp = tmp_path_factory.mktemp("ci")
    running = Process(tmp / "ci.db", tmp / "server.log", "--clock", "manual")
    yield running
    running.stop()


def _sandex(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SANDEX, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_wait_exits_0_once_a_sandex_answers(server: Process) -> None:
    for url in (server.base, f"{server.base}/v2/"):
        done = _sandex("wait", "--url", url, "--timeout", "10")
        assert done.returncode == 0, done.stderr
        assert f"{server.base}/healthz" in done.stdout


def test_wait_gives_up_at_its_timeout_in_one_line() -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    done = _sandex("wait", "--url", nobody, "--timeout", "0.5")
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "within 0.5 s" in lines[0] and "refused" in lines[0], lines


def test_wait_says_at_once_that_another_program_is_not_a_sandex() -> None:
    class Other(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Other)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{other.server_address[1]}"
        done = _sandex("wait", "--url", url, "--timeout", "30", timeout=20)
    finally:
        other.shutdown()
        other.server_close()
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "not a sandex" in lines[0] and "X-Sandex-Version" in lines[0]


def test_openapi_prints_the_document_the_server_serves(server: Process, tmp_path: Path) -> None:
    done = _sandex("openapi")
    assert done.returncode == 0, done.stderr
    served = httpx.get(f"{server.base}/openapi.json")
    assert served.status_code == 200
    assert json.loads(done.stdout) == served.json()
    out = tmp_path / "openapi.json"
    assert _sandex("openapi", "--out", str(out)).returncode == 0
    assert json.loads(out.read_text()) == served.json()


def _ci_script() -> str:
    blocks = re.findall(r"```sh\n(.*?)```", CI_DOC.read_text(), flags=re.S)
    assert len(blocks) == 1, "docs/ci.md holds one shell block: the job's script"
    return blocks[0]


@pytest.mark.parametrize(
    ("verdict", "status"),
    [("passing", 0), pytest.param("failing", 1, marks=pytest.mark.slow)],
)
def test_the_documented_ci_script_runs_a_suite_and_stops_the_server(
    tmp_path: Path, verdict: str, status: int
) -> None:
    """The script of docs/ci.md, as written, with the job's environment: serve, wait,
    the suite; its status is the suite's, and the server is gone after it either way."""
    suite = tmp_path / "tests"
    suite.mkdir()
    body = EXAMPLE_SUITE if verdict == "passing" else EXAMPLE_SUITE + "    assert False\n"
    (suite / "test_example.py").write_text(body)
    script = tmp_path / "sandex-suite.sh"
    script.write_text(_ci_script())
    port = free_port()
    bin_dir = str(Path(sys.executable).parent)  # where `sandex` and this python are
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "SANDEX_PORT": str(port),
        "SANDEX_CLIENT_ID": "ci",
        "SANDEX_CLIENT_SECRET": "ci-secret-for-the-test",
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == status, done.stdout + done.stderr
    assert ("1 passed" if status == 0 else "1 failed") in done.stdout, done.stdout
    assert "answering at" in done.stdout
    with pytest.raises(httpx.ConnectError):  # stopped: nothing listens on its port
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
