"""Webhook delivery: each customer's feed events POSTed to its URL, in order, at least once.

Every started deliverer of the process runs as a task of one event loop in one thread
(`_Loop`), so a server's many loaded worlds cost one thread between them; each has its
own database connection; it reads the committed `event_feed` and `webhooks` tables
through the read side (engine/read/webhook_status.py) and submits no command but the
question of a fault rule (below), never waiting for a receiver in the writer. Per
customer, one event is in flight at a time: the next is sent
only once the previous was answered 2xx, and a failure is retried with exponential
backoff (0.5 s, 1 s, 2 s ... at most 60 s) for as long as it fails. Progress (the last
delivered `seq` per customer) is kept outside the log, in a small JSON file beside the
database (`<db>.webhooks.json`, replaced atomically): a restart resumes where delivery
stopped and may send the event that was in flight again (at least once, never skipped).
Not in the database itself: a commit by any other connection makes the writer reload its
state from the log.

Each POST carries the event as its JSON body and these headers: `X-Sandex-Event-Id`,
`X-Sandex-Event-Type`, `X-Sandex-Delivery-Attempt` and `X-Sandex-Signature:
sha256=<hex HMAC-SHA256 of the body with the webhook's secret>`.

A receiver is someone else's server, perhaps hostile, and the URL a tenant's choice:
- Destinations (engine/config/destinations.py): the deliverer resolves the name itself, keeps
  only the addresses the policy allows and connects to one of those by address, with
  the name in the Host header and in TLS's SNI and certificate check; so a DNS answer
  that changes between the check and the connection (rebinding) cannot redirect it. No
  proxy from the environment (it would connect to the name, unchecked) and no redirect
  is followed (a receiver answers 2xx; a 3xx is a failure).
- Resources: connect, write, read and pool timeouts, a deadline for a whole attempt,
  at most `RESPONSE_CAP` bytes of a response body read (the status alone decides), one
  HTTP client per registration so that no receiver can take connections from another.
- What the customer sees (`last_error`) is only `failed: HTTP <status>` or `failed: not
  delivered`: how a connection failed would tell an open port from a closed one. The
  operator's log says why, with the URL's credentials and query string redacted.

Fault rules (sandex.engine.domain.webhook_faults): while the customer holds an armed one, the
deliverer asks the writer before each attempt (`DecideWebhookDelivery`), which records
the rule that fires; the deliverer only carries the answer out. `fail` records the
attempt failed with the rule's status without calling the receiver; `delay_seconds`
waits until the engine's clock reaches the recorded time; `duplicate` sends the event a
second time; `out_of_order` holds the event until the next one is sent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import hashlib
import hmac
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import asdict, dataclass, field
from ipaddress import ip_address
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import orjson

from sandex.api_adapter.writer_bridge import submit
from sandex.engine.config.destinations import Destinations
from sandex.engine.domain.webhook_faults import DecideWebhookDelivery
from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.commands import Actor
from sandex.engine.kernel.credentials import SealError, redact_url, unseal
from sandex.engine.kernel.logs import get_logger
from sandex.engine.read import webhook_status
from sandex.engine.read.connections import ReadConnections
from sandex.engine.runtime.key_file import KeyFile, KeyFileError
from sandex.engine.store import local_base, private_files

if TYPE_CHECKING:
    from sandex.engine.runtime.writer import Engine

log = get_logger("sandex.webhooks")

# The most of a response body read: enough to keep a connection that answered briefly,
# never a receiver's whole (perhaps endless) answer. One network read may hold 64 KiB.
RESPONSE_CAP = 4096
# How long the body of an answered request is read, at most, before the connection is
# dropped: the status decided already.
_DRAIN_SECONDS = 1.0
# With nothing registered, the deliverer reads the registrations only when the database
# changed (or it is nudged), and at least this often whatever its stamp says.
_RECHECK_SECONDS = 30.0
NOT_DELIVERED = "failed: not delivered"
# The delivery progress file's name after its database's (what a world's deletion removes).
PROGRESS_SUFFIX = ".webhooks.json"
# How many of a customer's last attempts its webhook status shows.
HISTORY = 20
# The client id on the deliverer's questions to the writer (it has no client of its own).
DELIVERER_CLIENT = "sandex-webhooks"

Resolver = Callable[[str, int], Awaitable[list[str]]]


class _Refused(Exception):
    """No address of the destination may be reached under the destination policy."""


async def _resolve(host: str, port: int) -> list[str]:
    """The addresses of `host`, in the resolver's order of preference."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True, slots=True)
class _Target:
    """Where one customer's events go, and how far they went."""

    customer_id: str
    webhook_id: str
    url: str
    key: bytes
    progress: _Progress


@dataclass
class _Progress:
    webhook_id: str
    delivered_seq: int
    attempts: int = 0
    last_error: str | None = None
    # the last attempts, oldest first: {event_id, attempt, outcome[, fault_rule_id]}
    history: list[dict[str, Any]] = field(default_factory=list)

    def record(self, event_id: str, attempt: int, outcome: str, rule_id: str | None) -> None:
        entry: dict[str, Any] = {"event_id": event_id, "attempt": attempt, "outcome": outcome}
        if rule_id is not None:
            entry["fault_rule_id"] = rule_id
        self.history = [*self.history[-(HISTORY - 1) :], entry]


class Deliverer:
    def __init__(
        self,
        db_path: str,
        *,
        poll_seconds: float = 0.1,
        idle_poll_seconds: float = 1.0,
        backoff_first: float = 0.5,
        backoff_max: float = 60.0,
        timeout: float = 5.0,
        attempt_seconds: float = 15.0,
        allowed_hosts: Iterable[str] = (),
        resolve: Resolver = _resolve,
        transport: httpx.AsyncBaseTransport | None = None,
        engine: Engine | None = None,
    ) -> None:
        """`timeout` bounds each connect, write, read and wait for a pooled connection;
        `attempt_seconds` a whole attempt. `allowed_hosts`: the operator's exceptions to
        the destination policy. `resolve` and `transport` replace the system resolver and
        the network (tests). With nothing registered, the registrations are read every
        `poll_seconds` at first, then less and less often, down to every
        `idle_poll_seconds`, so that a server's many worlds without a webhook each cost
        little; a registration through the app calls `nudge` to be read at once.
        `engine`: the writer asked about fault rules, and whose clock a delayed delivery
        waits on; without it no rule applies."""
        self.db_path = db_path
        self.poll = poll_seconds
        self.idle_poll = max(idle_poll_seconds, poll_seconds)
        self.backoff_first = backoff_first
        self.backoff_max = backoff_max
        self.timeout = timeout
        self.attempt_seconds = attempt_seconds
        self.destinations = Destinations(allowed_hosts)
        self._resolve = resolve
        self._transport = transport
        self._engine = engine
        self._thread: threading.Thread | None = None  # the process's delivery thread, once started
        self._running: concurrent.futures.Future[None] | None = None  # its `_main`
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._bell: asyncio.Event | None = None  # rung by `nudge` and `stop`
        self.progress_path = Path(f"{local_base(db_path)}{PROGRESS_SUFFIX}")
        self._keys: KeyFile | None = None  # opened at the first delivery
        self._progress: dict[str, _Progress] = self._load_progress()
        self._dirty = False
        self._ready = threading.Event()
        # One TLS context (CA certificates: certifi's, or SSL_CERT_FILE/SSL_CERT_DIR) for all
        # the clients, rather than a copy of the CA store each; made for the first
        # registration, so a sandbox with none (most of a server's worlds) holds no CA store.
        self._tls: ssl.SSLContext | None = None

    def _load_progress(self) -> dict[str, _Progress]:
        try:
            raw = orjson.loads(self.progress_path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        return {customer: _Progress(**p) for customer, p in raw.items()}

    def delivered_through(self, customer_id: str, webhook_id: str, since: int) -> int:
        """The seq up to which a registration's events are delivered."""
        p = self._progress.get(customer_id)
        if p is None or p.webhook_id != webhook_id:
            return since
        return max(since, p.delivered_seq)

    def failures(self, customer_id: str) -> tuple[int, str | None]:
        p = self._progress.get(customer_id)
        return (p.attempts, p.last_error) if p is not None else (0, None)

    def history(self, customer_id: str) -> list[dict[str, Any]]:
        """The customer's last attempts, oldest first."""
        p = self._progress.get(customer_id)
        return list(p.history) if p is not None else []

    # -- lifecycle --

    def start(self) -> None:
        if self._thread is None:
            self._ready.clear()
            self._thread, self._running = _Loop.join(self._main())
            self._running.add_done_callback(_ended)
            self._ready.wait(5)

    def stop(self) -> None:
        if self._thread is None:
            return
        loop, stopping, bell = self._loop, self._stopping, self._bell
        if loop is not None and stopping is not None and bell is not None:
            with contextlib.suppress(RuntimeError):  # the loop has ended already
                loop.call_soon_threadsafe(stopping.set)
                loop.call_soon_threadsafe(bell.set)
        if self._running is not None:
            with contextlib.suppress(Exception):  # `_ended` logged how it failed
                self._running.result(10)
        _Loop.leave()
        self._thread = None

    def nudge(self) -> None:
        """A webhook was registered: read the registrations now, not at the next poll."""
        loop, bell = self._loop, self._bell
        if loop is not None and bell is not None:
            with contextlib.suppress(RuntimeError):  # the loop has ended already
                loop.call_soon_threadsafe(bell.set)

    # -- the loop --

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._bell = bell = asyncio.Event()
        wait = self.poll
        self._reads = ReadConnections(self.db_path)  # this thread's, for every worker
        self._ready.set()
        workers: dict[str, tuple[str, asyncio.Task[None]]] = {}
        # While nothing is registered: the database's stamp when that was read, and when
        # the registrations must be read whatever the stamp says.
        seen: object | None = None
        recheck = 0.0
        try:
            while not self._stopping.is_set():
                rung = bell.is_set()
                bell.clear()  # a nudge from now on is heard by the wait below
                stamp = self._reads.log_stamp()
                now = self._loop.time()
                if not rung and seen is not None and stamp == seen and now < recheck:
                    registered = {}  # nothing committed since none was registered
                else:
                    registered = webhook_status.deliveries(self._reads)
                    seen, recheck = None, now + _RECHECK_SECONDS
                    if not registered and stamp is not None:
                        # An idle world's deliverer holds no connection between its looks.
                        seen = stamp
                        self._reads.close_own()
                for customer_id, (webhook_id, task) in list(workers.items()):
                    row = registered.get(customer_id)
                    if row is None or row[1] != webhook_id or task.done():
                        task.cancel()
                        del workers[customer_id]
                for customer_id, row in registered.items():
                    if customer_id not in workers:
                        task = asyncio.create_task(self._worker(*row))
                        workers[customer_id] = (row[1], task)
                self._flush()
                wait = self.poll if registered else min(wait * 2, self.idle_poll)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(bell.wait(), wait)
        finally:
            for _, task in workers.values():
                task.cancel()
            await asyncio.gather(*(t for _, t in workers.values()), return_exceptions=True)
            self._flush()
            self._reads.close()

    async def _worker(self, *row: Any) -> None:
        """One registration's delivery, with an HTTP client of its own: its pooled
        connections serve only this destination (a TLS connection opened for one host
        never carries another's events) and a slow receiver holds only its own."""
        if self._tls is None:
            self._tls = httpx.create_ssl_context()
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout),
            follow_redirects=False,
            trust_env=False,
            verify=self._tls,
            transport=self._transport,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )
        async with client:
            await self._deliver(client, *row)

    async def _deliver(
        self,
        client: httpx.AsyncClient,
        customer_id: str,
        webhook_id: str,
        url: str,
        secret: str,
        since: int,
    ) -> None:
        progress = self._progress.get(customer_id)
        if progress is None or progress.webhook_id != webhook_id:
            progress = _Progress(webhook_id, since)
            self._progress[customer_id] = progress
            self._dirty = True
        try:
            key = self._secret(webhook_id, secret).encode()
        except SealError:
            # the key file was replaced since the registration: nothing can be signed
            log.error("webhook secret cannot be opened; register the webhook again")
            progress.last_error = "the webhook secret is lost; register the webhook again"
            self._dirty = True
            await asyncio.Future()  # until the registration changes or delivery stops
        target = _Target(customer_id, webhook_id, url, key, progress)
        while True:
            rows = webhook_status.pending(self._reads, customer_id, progress.delivered_seq)
            if not rows:
                await asyncio.sleep(self.poll)
                continue
            for row in rows:
                fault = await self._decide(target, row, 1)
                if fault is not None and "out_of_order" in fault["action"]:
                    # held until the next event is sent: then both count as delivered
                    later = await self._next_after(customer_id, row[0])
                    await self._delivery(
                        client, target, later, await self._decide(target, later, 1, True)
                    )
                    await self._delivery(client, target, row, None)
                    progress.delivered_seq = later[0]
                    self._dirty = True
                    break
                await self._delivery(client, target, row, fault)
                progress.delivered_seq = row[0]
                self._dirty = True

    async def _delivery(
        self,
        client: httpx.AsyncClient,
        target: _Target,
        row: tuple[int, str, str, str],
        fault: dict[str, Any] | None,
    ) -> None:
        """One event delivered, as the rule that fired for its first attempt says."""
        if fault is not None and "delay_seconds" in fault["action"] and self._engine is not None:
            release = parse_time(fault["release_at"])
            while self._engine.clock.now() < release:
                await asyncio.sleep(self.poll)
        await self._attempts(client, target, row, fault)
        if fault is not None and "duplicate" in fault["action"]:
            await self._attempts(client, target, row, None)

    async def _attempts(
        self,
        client: httpx.AsyncClient,
        target: _Target,
        row: tuple[int, str, str, str],
        fault: dict[str, Any] | None,
    ) -> None:
        """POST one event until the receiver takes it, retrying with backoff; `fault` is
        the first attempt's rule, and each later attempt asks for its own."""
        _, event_id, kind, body = row
        progress = target.progress
        payload = body.encode()
        signature = hmac.new(target.key, payload, hashlib.sha256).hexdigest()
        attempt = 0
        while True:
            attempt += 1
            if attempt > 1:
                fault = await self._decide(target, row, attempt)
            failing = fault["action"].get("fail") if fault is not None else None
            if failing is not None:
                # the rule's status, recorded as the receiver's would be; it sees nothing
                status = failing["status"]
                outcome: tuple[str, str] | None = (f"failed: HTTP {status}", "fault rule")
            else:
                outcome = await self._post(
                    client,
                    target.url,
                    payload,
                    {
                        "Content-Type": "application/json",
                        "X-Sandex-Event-Id": event_id,
                        "X-Sandex-Event-Type": kind,
                        "X-Sandex-Delivery-Attempt": str(attempt),
                        "X-Sandex-Signature": f"sha256={signature}",
                    },
                )
            rule_id = fault["rule_id"] if failing is not None and fault is not None else None
            progress.record(
                event_id, attempt, "delivered" if outcome is None else outcome[0], rule_id
            )
            self._dirty = True
            if outcome is None:
                progress.attempts, progress.last_error = 0, None
                return
            error, reason = outcome
            progress.attempts, progress.last_error = attempt, error
            delay = min(self.backoff_max, self.backoff_first * 2 ** (attempt - 1))
            log.info(
                "webhook delivery failed",
                customer_id=target.customer_id,
                webhook_id=target.webhook_id,
                destination=redact_url(target.url, query=False),
                event_id=event_id,
                error=error,
                reason=reason,
                retry_in=delay,
            )
            await asyncio.sleep(delay)

    async def _decide(
        self,
        target: _Target,
        row: tuple[int, str, str, str],
        attempt: int,
        after_held: bool = False,
    ) -> dict[str, Any] | None:
        """The fault rule the writer fires for this attempt, or None. Asked only while the
        customer holds an armed rule, so a sandbox without any writes nothing."""
        engine = self._engine
        if engine is None or not webhook_status.faults_armed(self._reads, target.customer_id):
            return None
        command = DecideWebhookDelivery(
            actor=Actor(target.customer_id, DELIVERER_CLIENT),
            webhook_id=target.webhook_id,
            event_id=row[1],
            event_type=row[2],
            attempt=attempt,
            after_held=after_held,
        )
        try:
            fired: dict[str, Any] | None = await submit(engine, command)
        except Exception as exc:  # a stopped or failing writer: deliver as if none fired
            log.warning("webhook fault not decided", error=type(exc).__name__)
            return None
        return fired

    async def _next_after(self, customer_id: str, seq: int) -> tuple[int, str, str, str]:
        """The customer's first event after `seq`, once there is one."""
        while True:
            rows = webhook_status.pending(self._reads, customer_id, seq)
            if rows:
                return rows[0]  # type: ignore[no-any-return]
            await asyncio.sleep(self.poll)

    def _secret(self, webhook_id: str, stored: str) -> str:
        """The secret to sign with: the table holds it sealed (engine/kernel/credentials.py)."""
        if self._keys is None:
            try:
                self._keys = KeyFile.existing(self.db_path)
            except KeyFileError as exc:
                raise SealError(str(exc)) from exc
        return unseal(self._keys.current().sealing, stored, webhook_id)

    async def _post(
        self, client: httpx.AsyncClient, url: str, payload: bytes, headers: dict[str, str]
    ) -> tuple[str, str] | None:
        """None when the receiver took the event (2xx), else what the customer is told
        (the status, or only that it was not delivered) and why, for the operator."""
        try:
            async with asyncio.timeout(self.attempt_seconds):
                status = await self._send(client, url, payload, headers)
        except _Refused as exc:
            return NOT_DELIVERED, str(exc)
        except TimeoutError:
            return NOT_DELIVERED, "no answer within the attempt's deadline"
        except Exception as exc:  # whatever went wrong, this attempt failed; retry later
            return NOT_DELIVERED, type(exc).__name__
        if 200 <= status < 300:
            return None
        return f"failed: HTTP {status}", f"HTTP {status}"

    async def _send(
        self, client: httpx.AsyncClient, url: str, payload: bytes, headers: dict[str, str]
    ) -> int:
        """POST to an allowed address of the URL's host; the answer's status."""
        target = httpx.URL(url)
        if target.scheme not in ("http", "https"):
            raise _Refused(f"scheme {target.scheme!r} refused")
        host = target.host
        addresses = await self._addresses(host, target.port or _PORTS[target.scheme])
        # The name travels in the Host header and in TLS (SNI, certificate check); the
        # connection goes to the address that passed the check.
        headers = {**headers, "Host": target.netloc.decode("ascii")}
        extensions = {} if _is_address(host) else {"sni_hostname": host}
        failure: Exception = _Refused(f"{host}: no address")
        for address in addresses:
            try:
                async with client.stream(
                    "POST",
                    target.copy_with(host=address),
                    content=payload,
                    headers=headers,
                    extensions=extensions,
                ) as response:
                    await _drain(response)
                    return response.status_code
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                failure = exc  # the next address may answer (localhost: ::1, 127.0.0.1)
        raise failure

    async def _addresses(self, host: str, port: int) -> list[str]:
        """The addresses of `host` that the destination policy lets a webhook reach."""
        resolved = await self._resolve(host, port)
        if self.destinations.allows_name(host):
            return resolved
        allowed = [a for a in resolved if self.destinations.allows_address(ip_address(a))]
        if not allowed:
            raise _Refused(f"destination refused: {host} is {', '.join(resolved) or 'unknown'}")
        return allowed

    def _flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        data = {c: asdict(p) for c, p in list(self._progress.items())}
        try:
            private_files.write(self.progress_path, orjson.dumps(data))
        except OSError as exc:  # kept in memory; written at the next flush
            log.warning("webhook progress not saved", error=str(exc))
            self._dirty = True


class _Loop:
    """The process's one delivery thread: an event loop that runs every started
    deliverer's `_main` as a task, started with the first and ended with the last."""

    _lock = threading.Lock()
    _members = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None

    @classmethod
    def join(
        cls, main: Coroutine[Any, Any, None]
    ) -> tuple[threading.Thread, concurrent.futures.Future[None]]:
        """Run `main` on the loop: (the loop's thread, its future)."""
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                started = threading.Event()
                thread = threading.Thread(
                    target=cls._run, args=(loop, started), name="sandex-webhooks", daemon=True
                )
                thread.start()
                started.wait()
                cls._loop, cls._thread = loop, thread
            cls._members += 1
            assert cls._thread is not None
            return cls._thread, asyncio.run_coroutine_threadsafe(main, cls._loop)

    @classmethod
    def leave(cls) -> None:
        """One deliverer has ended; the last one ends the loop and its thread."""
        with cls._lock:
            cls._members -= 1
            if cls._members or cls._loop is None:
                return
            loop, thread = cls._loop, cls._thread
            cls._loop = cls._thread = None
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None and thread is not threading.current_thread():
                thread.join(10)

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())  # the resolver's
            loop.close()


def _ended(running: concurrent.futures.Future[None]) -> None:
    """A deliverer's loop that ended by a failure, not by `stop`: said in the log."""
    if not running.cancelled() and running.exception() is not None:
        log.error("webhook delivery stopped by an error", error=repr(running.exception()))


_PORTS = {"http": 80, "https": 443}


def _is_address(host: str) -> bool:
    try:
        ip_address(host)
    except ValueError:
        return False
    return True


async def _drain(response: httpx.Response) -> None:
    """Read at most `RESPONSE_CAP` bytes of the body, for at most `_DRAIN_SECONDS`: a
    brief answer leaves the connection reusable, a huge or endless one is dropped. Raw
    bytes, so a compressed body is never inflated."""
    if response.is_stream_consumed:  # a transport that read it already
        return
    read = 0
    with contextlib.suppress(httpx.HTTPError, TimeoutError):
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for chunk in response.aiter_raw():
                read += len(chunk)
                if read >= RESPONSE_CAP:
                    return


def delivered_through(app: Any, customer_id: str) -> int | None:
    """With a webhook registered, the seq up to which its events were delivered."""
    registered = webhook_status.registration(app.state.queries, customer_id)
    if registered is None:
        return None
    return int(app.state.webhooks.delivered_through(customer_id, registered.id, registered.since))


def status(app: Any, customer_id: str) -> dict[str, Any] | None:
    """A customer's registration with its delivery backlog, for `GET /v2/sandbox/webhooks`."""
    reads = app.state.queries
    registered = webhook_status.registration(reads, customer_id)
    if registered is None:
        return None
    webhook_id, url, since, created_at = registered
    deliverer: Deliverer = app.state.webhooks
    delivered = deliverer.delivered_through(customer_id, webhook_id, since)
    attempts, error = deliverer.failures(customer_id)
    backlog = webhook_status.backlog(reads, customer_id, delivered)
    view: dict[str, Any] = {
        "id": webhook_id,
        "url": redact_url(url),
        "created_at": created_at,
        "undelivered_webhooks": backlog,
        "failed_attempts": attempts,
    }
    if error:
        view["last_error"] = error
    view["recent_attempts"] = deliverer.history(customer_id)
    return view
