"""Webhooks: a customer's feed events POSTed to its URL, in order, retried while failing;
what a receiver answers cannot hold the deliverer or fill its memory, and what the
customer and the log are told gives away neither connection details nor credentials."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from sandex.api_adapter.webhook_delivery import NOT_DELIVERED, RESPONSE_CAP
from tests.support.transfer_helpers import problem, withdraw
from tests.support.webhook_receivers import (
    LOCAL,
    RawReceiver,
    hold,
    opened,
    read_request,
    start_deliverer,
    wait,
)

# The receivers here run on this machine: the operator allows 127.0.0.1 (for `sandbox`
# and `http_sandbox` alike).
pytestmark = pytest.mark.sandex(settings={"webhook_allowed_hosts": LOCAL})


@pytest.fixture
def raw_receivers() -> Iterator[Any]:
    with opened() as make:
        yield lambda answer: make(RawReceiver, answer)


def _undelivered(sandbox: Any) -> int:
    return int(sandbox.get("/v2/sandbox/webhooks").json()["undelivered_webhooks"])


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

    deliverer = start_deliverer(sandbox)
    try:
        wait(lambda: len(receiver.received) == 3)
        wait(lambda: sandbox.get("/v2/sandbox/webhooks").json()["undelivered_webhooks"] == 0)
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
    deliverer = start_deliverer(sandbox)
    # until the deliverer recorded the answer: an event in flight at a stop is sent again
    wait(lambda: _undelivered(sandbox) == 0)
    deliverer.stop()
    sandbox.deposit("BTC", "2")
    deliverer = start_deliverer(sandbox)
    try:
        wait(lambda: len(receiver.received) == 2)
        time.sleep(0.1)
    finally:
        deliverer.stop()
    amounts = [json.loads(body)["object"]["amount"] for _, body in receiver.received]
    assert amounts == ["1", "2"], amounts


def _delivery_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "sandex-webhooks" and t.is_alive()}


def test_the_deliverers_of_a_process_share_one_thread_and_each_delivers(
    sandbox_factory: Any, receivers: Any
) -> None:
    """A server's loaded worlds each have a deliverer: one thread runs them all, and one
    stopped leaves the others delivering; the last one stopped ends the thread."""
    others = _delivery_threads()
    boxes = [sandbox_factory(f"d{n}.db", webhook_allowed_hosts=LOCAL) for n in range(3)]
    hooks = [receivers() for _ in boxes]
    for box, receiver in zip(boxes, hooks, strict=True):
        assert box.post("/v2/sandbox/webhooks", {"url": receiver.url}).status_code == 200
        box.deposit("BTC", "1")
    deliverers = [start_deliverer(box) for box in boxes]
    try:
        assert len(_delivery_threads() - others) <= 1 and len(_delivery_threads()) == 1
        wait(lambda: all(len(receiver.received) == 1 for receiver in hooks))
        deliverers.pop(0).stop()
        boxes[1].deposit("BTC", "2")
        wait(lambda: len(hooks[1].received) == 2)
    finally:
        for deliverer in deliverers:
            deliverer.stop()
    assert not _delivery_threads() - others
    assert len(hooks[0].received) == 1


def test_a_hanging_receiver_never_slows_the_writer(sandbox: Any, receivers: Any) -> None:
    receiver = receivers(hang=1.5)
    sandbox.post("/v2/sandbox/webhooks", {"url": receiver.url})
    sandbox.deposit("BTC", "1")
    deliverer = start_deliverer(sandbox)
    try:
        wait(lambda: receiver.attempts >= 1)
        started = time.perf_counter()
        for _ in range(20):
            sandbox.deposit("BTC", "0.1")
        assert time.perf_counter() - started < 1.0
    finally:
        deliverer.stop()


def test_registration_refusals_and_removal(http_sandbox: Any) -> None:
    assert problem(http_sandbox.post("/v2/sandbox/webhooks", {"url": "ftp://x"}), 400)["meta"] == {
        "field": "url"
    }
    problem(http_sandbox.get("/v2/sandbox/webhooks"), 404)
    problem(http_sandbox.delete("/v2/sandbox/webhooks"), 404)
    assert (
        http_sandbox.post("/v2/sandbox/webhooks", {"url": "http://127.0.0.1:9/h"}).status_code
        == 200
    )
    headers, _ = http_sandbox.tenant()
    problem(http_sandbox.get("/v2/sandbox/webhooks", headers=headers), 404)
    assert http_sandbox.delete("/v2/sandbox/webhooks").status_code == 200
    problem(http_sandbox.get("/v2/sandbox/webhooks"), 404)
    narrow = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="funding:read_profile"
    )
    problem(http_sandbox.post("/v2/sandbox/webhooks", {"url": "http://a.b/"}, headers=narrow), 403)


def test_the_served_app_runs_the_deliverer(sandbox: Any) -> None:
    """A served world delivers: an app served on its own runs its deliverer for its
    lifespan; a server's other world, served mounted (no lifespan), from the load its
    server makes to the unload."""
    from fastapi.testclient import TestClient

    if sandbox.server is None:
        with TestClient(sandbox.app):
            assert sandbox.app.state.webhooks._thread is not None
        assert sandbox.app.state.webhooks._thread is None
        return
    manager = sandbox.server.app.state.worlds
    assert manager.unload(sandbox.world_id)  # the sandbox's load, its deliverer stopped
    served = manager.enter(sandbox.world_id)
    manager.leave(sandbox.world_id, served)
    assert served.app.state.webhooks._thread is not None
    assert manager.unload(sandbox.world_id)
    assert served.app.state.webhooks._thread is None


# -- what a receiver answers -------------------------------------------------------------

_HUGE = 1 << 30  # what the receiver announces
_SENT_AT_MOST = 128 << 20  # what it sends before it waits (bounds the memory of a bug)


class _Counting(httpx.AsyncBaseTransport):
    """The real network, counting the response bytes the deliverer took from it."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.taken = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        counter = self

        class Counted(httpx.AsyncByteStream):
            async def __aiter__(self) -> Any:
                async for chunk in response.stream:  # type: ignore[union-attr]
                    counter.taken += len(chunk)
                    yield chunk

            async def aclose(self) -> None:
                await response.aclose()

        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=Counted(),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_a_huge_answer_is_read_no_further_than_the_cap(sandbox: Any, raw_receivers: Any) -> None:
    def answer(sock: socket.socket, receiver: RawReceiver) -> None:
        read_request(sock)
        receiver.send(sock, f"HTTP/1.1 200 OK\r\nContent-Length: {_HUGE}\r\n\r\n".encode())
        chunk = b"x" * 65536
        while receiver.sent < _SENT_AT_MOST:
            receiver.send(sock, chunk)
        hold(sock)

    receiver = raw_receivers(answer)
    sandbox.post("/v2/sandbox/webhooks", {"url": receiver.url})
    sandbox.deposit("BTC", "1")
    counting = _Counting()
    d = start_deliverer(sandbox, transport=counting)
    try:
        wait(lambda: _undelivered(sandbox) == 0)
        wait(lambda: receiver.closed_by_peer)
    finally:
        d.stop()
    # The deliverer took the cap and at most one more network read (64 KiB), and hung
    # up: what the receiver got out were socket buffers, not a gigabyte in memory.
    assert RESPONSE_CAP <= counting.taken <= RESPONSE_CAP + 65536
    assert receiver.sent < 64 << 20
    assert receiver.connections == 1


def test_an_endless_slow_answer_does_not_hold_the_deliverer(
    sandbox: Any, raw_receivers: Any
) -> None:
    def answer(sock: socket.socket, receiver: RawReceiver) -> None:
        read_request(sock)
        receiver.send(sock, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        while True:  # a byte every 50 ms, forever: no read ever times out
            receiver.send(sock, b"1\r\nx\r\n")
            time.sleep(0.05)

    receiver = raw_receivers(answer)
    sandbox.post("/v2/sandbox/webhooks", {"url": receiver.url})
    sandbox.deposit("BTC", "1")
    sandbox.deposit("BTC", "2")
    d = start_deliverer(sandbox)
    try:
        # 2xx was answered: both events count as delivered, each after a short read
        wait(lambda: _undelivered(sandbox) == 0)
        wait(lambda: receiver.closed_by_peer)
    finally:
        d.stop()
    assert receiver.connections == 2


def test_dribbled_headers_end_at_the_attempts_deadline(sandbox: Any, raw_receivers: Any) -> None:
    def answer(sock: socket.socket, receiver: RawReceiver) -> None:
        read_request(sock)
        receiver.send(sock, b"HTTP/1.1 200 OK\r\n")
        while True:  # headers that never end, each byte well within the read timeout
            receiver.send(sock, b"X: y\r\n")
            time.sleep(0.05)

    receiver = raw_receivers(answer)
    sandbox.post("/v2/sandbox/webhooks", {"url": receiver.url})
    sandbox.deposit("BTC", "1")
    d = start_deliverer(sandbox, attempt_seconds=0.5)
    try:
        wait(lambda: sandbox.get("/v2/sandbox/webhooks").json()["failed_attempts"] >= 2)
    finally:
        d.stop()
    view = sandbox.get("/v2/sandbox/webhooks").json()
    assert view["last_error"] == NOT_DELIVERED
    assert view["undelivered_webhooks"] == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _last_error(sandbox: Any, url: str, **kw: Any) -> str:
    assert sandbox.post("/v2/sandbox/webhooks", {"url": url}).status_code == 200
    sandbox.deposit("BTC", "1")
    d = start_deliverer(sandbox, **kw)
    try:
        wait(lambda: sandbox.get("/v2/sandbox/webhooks").json()["failed_attempts"] >= 1)
    finally:
        d.stop()
    return str(sandbox.get("/v2/sandbox/webhooks").json()["last_error"])


def test_last_error_tells_an_open_port_from_a_closed_one_no_better(
    sandbox_factory: Any, raw_receivers: Any, receivers: Any
) -> None:
    def banner(sock: socket.socket, receiver: RawReceiver) -> None:
        receiver.send(sock, b"SSH-2.0-OpenSSH_9.6\r\n")

    def silent(sock: socket.socket, receiver: RawReceiver) -> None:
        hold(sock)

    closed = f"http://127.0.0.1:{_free_port()}/hook"
    errors = [
        _last_error(sandbox_factory(f"{i}.db", webhook_allowed_hosts=LOCAL), url, **kw)
        for i, (url, kw) in enumerate(
            [
                (closed, {}),
                (raw_receivers(banner).url, {}),
                (raw_receivers(silent).url, {"attempt_seconds": 0.3}),
            ]
        )
    ]
    assert errors == [NOT_DELIVERED] * 3
    refusing = receivers(failures=100)
    answered = _last_error(sandbox_factory("http.db", webhook_allowed_hosts=LOCAL), refusing.url)
    assert answered == "failed: HTTP 503"


def test_url_credentials_reach_the_receiver_but_no_log_or_answer(
    sandbox: Any, receivers: Any
) -> None:
    receiver = receivers(failures=2)
    url = f"http://hook-user:pa55-w0rd@127.0.0.1:{receiver.port}/hook?token=t0k3n"
    shown = f"http://***@127.0.0.1:{receiver.port}/hook?token=t0k3n"
    with capture_logs() as logs:
        registered = sandbox.post("/v2/sandbox/webhooks", {"url": url})
        assert registered.json()["url"] == shown
        assert sandbox.get("/v2/sandbox/webhooks").json()["url"] == shown
        sandbox.deposit("BTC", "1")
        d = start_deliverer(sandbox)
        try:
            wait(lambda: len(receiver.received) == 1)
        finally:
            d.stop()
        removed = sandbox.delete("/v2/sandbox/webhooks")
        assert removed.json()["url"] == shown
    failures = [e for e in logs if e["event"] == "webhook delivery failed"]
    assert len(failures) == 2
    assert failures[0]["destination"] == f"http://***@127.0.0.1:{receiver.port}/hook?***"
    assert failures[0]["error"] == "failed: HTTP 503"
    text = repr(logs)
    assert "pa55-w0rd" not in text and "hook-user" not in text and "t0k3n" not in text
    headers, _ = receiver.received[0]
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"hook-user:pa55-w0rd").decode()


def test_a_deliverer_loads_the_ca_store_for_its_first_registration_only(
    sandbox: Any, receivers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server runs a deliverer per world and most worlds register no webhook: a CA
    store each would be most of an idle world's memory."""
    made: list[object] = []
    real = httpx.create_ssl_context

    def counted(*args: Any, **kwargs: Any) -> Any:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(httpx, "create_ssl_context", counted)
    deliverer = start_deliverer(sandbox)
    try:
        sandbox.deposit("BTC", "1")
        assert made == []  # started, polling, nothing registered
        for _ in range(2):
            receiver = receivers()
            r = sandbox.post("/v2/sandbox/webhooks", {"url": receiver.url})
            assert r.status_code == 200, r.text
            sandbox.deposit("BTC", "1")
            wait(lambda receiver=receiver: len(receiver.received) >= 1)
    finally:
        deliverer.stop()
    assert len(made) == 1  # one for the deliverer, shared by its registrations


def test_with_nothing_registered_the_deliverer_polls_less_and_less_and_a_registration_wakes_it(
    sandbox: Any, receivers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of a server's worlds runs a deliverer, most with nothing registered: those
    read their registrations less and less often (doubling up to `idle_poll_seconds`),
    and a registration through the app is read at once all the same."""
    waits: list[float] = []
    real = asyncio.wait_for
    mine: list[Any] = []

    async def recorded(awaitable: Any, timeout: float) -> Any:
        # the delivery thread is the process's, shared by every deliverer in it (a
        # plugin server's worlds too, in sandex's own suite): count this test's only
        caller = sys._getframe(1).f_locals.get("self")
        if threading.current_thread().name != "sandex-webhooks" or caller not in mine:
            return await real(awaitable, timeout)
        waits.append(timeout)
        # an idle wait that never ends by itself: only a nudge (or the stop) ends it
        return await real(awaitable, 60 if timeout > 0.3 else timeout)

    from sandex.api_adapter.webhook_delivery import Deliverer

    start = Deliverer.start

    def started(self: Deliverer) -> Any:
        mine.append(self)
        return start(self)

    monkeypatch.setattr(Deliverer, "start", started)
    monkeypatch.setattr(asyncio, "wait_for", recorded)
    deliverer = start_deliverer(sandbox)
    try:
        wait(lambda: len(waits) >= 4)
        assert waits[:4] == [0.04, 0.08, 0.16, 0.32]  # from poll_seconds 0.02, doubling
        receiver = receivers()
        r = sandbox.post("/v2/sandbox/webhooks", {"url": receiver.url})
        assert r.status_code == 200, r.text
        wait(lambda: 0.02 in waits[4:])  # woken, it found the registration: polls again
        sandbox.deposit("BTC", "1")
        wait(lambda: len(receiver.received) == 1)
    finally:
        deliverer.stop()
