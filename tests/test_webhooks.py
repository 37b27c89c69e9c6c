"""Webhooks: a customer's feed events POSTed to its URL, in order, retried while failing."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from api_adapter.webhooks import Deliverer
from tests.transfer_helpers import problem, withdraw


class Receiver:
    """A local HTTP endpoint that fails its first `failures` requests, or hangs."""

    def __init__(self, failures: int = 0, hang: float = 0.0) -> None:
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
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sandbox(sandbox_factory: Any) -> Any:
    """The receivers here run on this machine: the operator allows 127.0.0.1."""
    return sandbox_factory(webhook_allowed_hosts=["127.0.0.1"])


@pytest.fixture
def receivers() -> Iterator[Any]:
    made: list[Receiver] = []

    def make(**kw: Any) -> Receiver:
        r = Receiver(**kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def _deliverer(sb: Any) -> Deliverer:
    d = Deliverer(str(sb.db), poll_seconds=0.02, backoff_first=0.05, backoff_max=0.2, timeout=2)
    sb.app.state.webhooks = d
    d.start()
    return d


def _wait(condition: Any, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_each_event_is_posted_in_order_and_retried_while_failing(
    sandbox: Any, receivers: Any
) -> None:
    receiver = receivers(failures=3)
    sandbox.deposit("BTC", "5")  # before the registration: not delivered
    r = sandbox.post("/v2/sandbox/webhooks", {"url": receiver.url})
    assert r.status_code == 200, r.text
    secret = r.json()["secret"]
    assert r.json()["url"] == receiver.url
    sandbox.deposit("BTC", "1")
    withdraw(sandbox, amount="0.001")
    sandbox.advance(30)
    events = sandbox.get("/v2/events").json()["events"]
    assert [e["undelivered_webhooks"] for e in events] == [0, 1, 1, 1]
    assert sandbox.get("/v2/sandbox/webhooks").json()["undelivered_webhooks"] == 3

    deliverer = _deliverer(sandbox)
    try:
        _wait(lambda: len(receiver.received) == 3)
        _wait(lambda: sandbox.get("/v2/sandbox/webhooks").json()["undelivered_webhooks"] == 0)
    finally:
        deliverer.stop()
    assert receiver.attempts == 6
    sent = [json.loads(body) for _, body in receiver.received]
    assert sent == [{k: v for k, v in e.items() if k != "undelivered_webhooks"} for e in events[1:]]
    headers, body = receiver.received[0]
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Sandex-Signature"] == f"sha256={expected}"
    assert headers["X-Sandex-Event-Id"] == events[1]["id"]
    assert headers["X-Sandex-Delivery-Attempt"] == "4"
    assert [e["undelivered_webhooks"] for e in sandbox.get("/v2/events").json()["events"]] == [
        0,
        0,
        0,
        0,
    ]


def test_delivery_resumes_after_a_restart_without_skipping(sandbox: Any, receivers: Any) -> None:
    receiver = receivers()
    sandbox.post("/v2/sandbox/webhooks", {"url": receiver.url})
    sandbox.deposit("BTC", "1")
    deliverer = _deliverer(sandbox)
    _wait(lambda: len(receiver.received) == 1)
    deliverer.stop()
    sandbox.deposit("BTC", "2")
    deliverer = _deliverer(sandbox)
    try:
        _wait(lambda: len(receiver.received) == 2)
        time.sleep(0.1)
    finally:
        deliverer.stop()
    amounts = [json.loads(body)["object"]["amount"] for _, body in receiver.received]
    assert amounts == ["1", "2"]


def test_a_hanging_receiver_never_slows_the_writer(sandbox: Any, receivers: Any) -> None:
    receiver = receivers(hang=1.5)
    sandbox.post("/v2/sandbox/webhooks", {"url": receiver.url})
    sandbox.deposit("BTC", "1")
    deliverer = _deliverer(sandbox)
    try:
        _wait(lambda: receiver.attempts >= 1)
        started = time.perf_counter()
        for _ in range(20):
            sandbox.deposit("BTC", "0.1")
        assert time.perf_counter() - started < 1.0
    finally:
        deliverer.stop()


def test_registration_refusals_and_removal(sandbox: Any) -> None:
    assert problem(sandbox.post("/v2/sandbox/webhooks", {"url": "ftp://x"}), 400)["meta"] == {
        "field": "url"
    }
    problem(sandbox.get("/v2/sandbox/webhooks"), 404)
    problem(sandbox.delete("/v2/sandbox/webhooks"), 404)
    assert sandbox.post("/v2/sandbox/webhooks", {"url": "http://127.0.0.1:9/h"}).status_code == 200
    headers, _ = sandbox.tenant()
    problem(sandbox.get("/v2/sandbox/webhooks", headers=headers), 404)
    assert sandbox.delete("/v2/sandbox/webhooks").status_code == 200
    problem(sandbox.get("/v2/sandbox/webhooks"), 404)
    narrow = sandbox.login("sandex", "sandex-secret", scope="funding:read_profile")
    problem(sandbox.post("/v2/sandbox/webhooks", {"url": "http://a.b/"}, headers=narrow), 403)


def test_the_served_app_runs_the_deliverer(sandbox: Any) -> None:
    from fastapi.testclient import TestClient

    with TestClient(sandbox.app):
        assert sandbox.app.state.webhooks._thread is not None
    assert sandbox.app.state.webhooks._thread is None
