"""Writer and standby `sandex serve` processes on one PostgreSQL database, and a load
that goes where a load balancer would send it (to whichever answers 2xx), recording
every write it was answered 2xx for: the failover tests and `bench/bench_failover.py`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.server_helpers import ROOT, SANDEX, free_port


class Node:
    """`sandex serve` on `db`, its output in `log`; up once `/healthz` answers at all
    (a standby answers 503)."""

    def __init__(self, db: str, log: Path, lease_seconds: float = 5.0) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            [*SANDEX, "serve", "--db", db, "--port", str(self.port), "--no-rate-limits"]
            + ["--lease-seconds", str(lease_seconds), "--log-format", "json"]
            + ["--log-level", "WARNING"],
            cwd=ROOT,
            stdout=self.log,
            stderr=self.log,
            env=os.environ.copy(),
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.output()
            if self.role() is not None:
                return
            time.sleep(0.05)
        raise AssertionError(f"server did not start: {self.output()}")

    def role(self) -> str | None:
        """`writer`, `standby`, or None when nothing answers."""
        try:
            r = httpx.get(f"{self.base}/healthz", timeout=2)
        except httpx.TransportError:
            return None
        body = r.json()
        return str(body.get("role") or body.get("meta", {}).get("role"))

    def wait_role(self, role: str, seconds: float = 20) -> float:
        """Seconds until /healthz names `role`."""
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            if self.role() == role:
                return time.monotonic() - start
            assert self.proc.poll() is None, self.output()
            time.sleep(0.02)
        raise AssertionError(f"{self.base} is not {role} after {seconds} s: {self.output()}")

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text()[-3000:]

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def end(self) -> int | None:
        """Stop it if it still runs (SIGCONT first: a stopped process ignores SIGINT)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def token(base: str) -> dict[str, str]:
    r = httpx.post(
        f"{base}/oauth2/token",
        data={
            "grant_type": "client_credentials",
            "client_id": "sandex",
            "client_secret": "sandex-secret",
        },
        timeout=5,
    )
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


@dataclass
class Load:
    """`threads` clients depositing to the first of `bases` that answers 2xx (a load
    balancer's choice), until `finish`; `acknowledged`: (monotonic time, base, transfer
    id) of every 2xx answer."""

    bases: list[str]
    threads: int = 4
    acknowledged: list[tuple[float, str, str]] = field(default_factory=list)
    failures: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _workers: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Load:
        for _ in range(self.threads):
            worker = threading.Thread(target=self._run, daemon=True)
            worker.start()
            self._workers.append(worker)
        return self

    def finish(self) -> None:
        self.stop.set()
        for worker in self._workers:
            worker.join(timeout=30)

    def first_after(self, moment: float, base: str) -> float | None:
        """Seconds from `moment` to the first 2xx that `base` answered after it."""
        with self._lock:
            times = [t for t, b, _ in self.acknowledged if b == base and t > moment]
        return min(times) - moment if times else None

    def _run(self) -> None:
        headers: dict[str, dict[str, str]] = {}
        with httpx.Client(timeout=5) as client:
            while not self.stop.is_set():
                if not self._deposit(client, headers):
                    with self._lock:
                        self.failures += 1
                    time.sleep(0.01)

    def _deposit(self, client: httpx.Client, headers: dict[str, dict[str, str]]) -> bool:
        for base in self.bases:
            try:
                if base not in headers:
                    headers[base] = token(base)
                r = client.post(
                    f"{base}/v2/sandbox/profiles/default/deposit",
                    json={"asset": "USD", "amount": "1"},
                    headers=headers[base],
                )
            except (httpx.TransportError, AssertionError):
                headers.pop(base, None)
                continue
            if r.status_code == 401:
                headers.pop(base, None)
            if 200 <= r.status_code < 300:
                stamp = time.monotonic()
                with self._lock:
                    self.acknowledged.append((stamp, base, str(r.json()["activity_id"])))
                return True
        return False


def logged_text(db: str) -> str:
    """Every event's data at `db`, as one text to search."""
    return "\n".join(json.dumps(e.data) for e in events_of(db))


def verify(db: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SANDEX, "verify", "--db", db], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def events_of(db: str) -> list[Any]:
    from sandex.engine.store import open_reader

    reader = open_reader(db)
    try:
        return list(reader.read())
    finally:
        reader.close()
