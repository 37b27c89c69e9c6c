"""A real `sandex serve` process for tests that need one, and the paths to run it from
(shared by the command line, security, connection, fault and live-database tests)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
SANDEX = [sys.executable, "-m", "sandex.api_adapter.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, db: Path | str, *extra: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [
                *SANDEX,
                "serve",
                "--db",
                str(db),
                "--port",
                str(self.port),
                "--log-format",
                "json",
                *extra,
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            text=True,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"server exited: {self.proc.stderr.read() if self.proc.stderr else ''}"
                )
            try:
                httpx.get(f"{self.base}/v2/sandbox/clock", timeout=0.5)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        raise AssertionError("server did not start")

    def token(self, client_id: str = "sandex", secret: str = "sandex-secret") -> dict[str, str]:
        r = httpx.post(
            f"{self.base}/oauth2/token",
            data={
                "grant_type": "client_credentials",
                "client_id": client_id,
                "client_secret": secret,
            },
        )
        assert r.status_code == 200, r.text
        return {"Authorization": f"Bearer {r.json()['access_token']}"}

    def stop(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=20)
        return self.proc.returncode, out, err


def readme_blocks() -> list[str]:
    """The README's shell blocks that call the API with curl."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.S)
    return [b for b in blocks if "curl" in b]


class Process:
    """`sandex serve` with its log in a file (a pipe nobody reads would fill and block).
    `flags` go to serve after the database, port and log options; `log_level` None logs
    at serve's default level."""

    def __init__(
        self, db: Path | str, log: Path, *flags: str, log_level: str | None = "WARNING"
    ) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        self.log = log.open("ab")
        levels = ["--log-level", log_level] if log_level else []
        self.proc = subprocess.Popen(
            [*SANDEX, "serve", "--db", str(db), "--port", str(self.port), "--no-rate-limits"]
            + ["--log-format", "json", *levels, *flags],
            cwd=ROOT,
            stdout=self.log,
            stderr=self.log,
            env=os.environ.copy(),
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, log.read_text()[-2000:]
            try:
                httpx.get(f"{self.base}/v2/markets", timeout=0.5)
                return
            except httpx.TransportError:
                time.sleep(0.05)
        raise AssertionError("server did not start")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=20)
        self.log.close()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=20)
        self.log.close()
