"""Webhook delivery: each customer's feed events POSTed to its URL, in order, at least once.

The deliverer runs in its own thread with its own event loop and its own database
connections; it reads the committed `event_feed` and `webhooks` tables and never submits
a command, so the writer never waits for a receiver. Per customer, one event is in
flight at a time: the next is sent only once the previous was answered 2xx, and a
failure is retried with exponential backoff (0.5 s, 1 s, 2 s ... at most 60 s) for as
long as it fails. Progress (the last delivered `seq` per customer) is kept outside the
log, in a small JSON file beside the database (`<db>.webhooks.json`, replaced
atomically): a restart resumes where delivery stopped and may send the event that was
in flight again (at least once, never skipped). Not in the database itself: a commit
by any other connection makes the writer reload its state from the log.

Each POST carries the event as its JSON body and these headers: `X-Sandex-Event-Id`,
`X-Sandex-Event-Type`, `X-Sandex-Delivery-Attempt` and `X-Sandex-Signature:
sha256=<hex HMAC-SHA256 of the body with the webhook's secret>`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import os
import sqlite3
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import structlog

log = structlog.get_logger("sandex.webhooks")


@dataclass
class _Progress:
    webhook_id: str
    delivered_seq: int
    attempts: int = 0
    last_error: str | None = None


class Deliverer:
    def __init__(
        self,
        db_path: str,
        *,
        poll_seconds: float = 0.1,
        backoff_first: float = 0.5,
        backoff_max: float = 60.0,
        timeout: float = 5.0,
    ) -> None:
        self.db_path = db_path
        self.poll = poll_seconds
        self.backoff_first = backoff_first
        self.backoff_max = backoff_max
        self.timeout = timeout
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self.progress_path = Path(f"{db_path}.webhooks.json")
        self._progress: dict[str, _Progress] = self._load_progress()
        self._dirty = False
        self._ready = threading.Event()

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

    # -- lifecycle --

    def start(self) -> None:
        if self._thread is None:
            self._ready.clear()
            self._thread = threading.Thread(target=self._run, name="sandex-webhooks", daemon=True)
            self._thread.start()
            self._ready.wait(5)

    def stop(self) -> None:
        if self._thread is None:
            return
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop has ended already
                loop.call_soon_threadsafe(stopping.set)
        self._thread.join(10)
        self._thread = None

    def _run(self) -> None:
        asyncio.run(self._main())

    # -- the loop --

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self.read = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True)
        self.read.execute("PRAGMA busy_timeout=5000")
        self._ready.set()
        workers: dict[str, tuple[str, asyncio.Task[None]]] = {}
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            try:
                while not self._stopping.is_set():
                    registered = {
                        row[0]: row
                        for row in self.read.execute(
                            "SELECT customer_id, id, url, secret, since FROM webhooks"
                        )
                    }
                    for customer_id, (webhook_id, task) in list(workers.items()):
                        row = registered.get(customer_id)
                        if row is None or row[1] != webhook_id or task.done():
                            task.cancel()
                            del workers[customer_id]
                    for customer_id, row in registered.items():
                        if customer_id not in workers:
                            task = asyncio.create_task(self._deliver(client, *row))
                            workers[customer_id] = (row[1], task)
                    self._flush()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stopping.wait(), self.poll)
            finally:
                for _, task in workers.values():
                    task.cancel()
                await asyncio.gather(*(t for _, t in workers.values()), return_exceptions=True)
                self._flush()
                self.read.close()

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
        key = secret.encode()
        while True:
            rows = self.read.execute(
                "SELECT seq, id, type, body FROM event_feed WHERE customer_id = ? AND seq > ?"
                " ORDER BY seq LIMIT 100",
                (customer_id, progress.delivered_seq),
            ).fetchall()
            if not rows:
                await asyncio.sleep(self.poll)
                continue
            for seq, event_id, kind, body in rows:
                payload = body.encode()
                signature = hmac.new(key, payload, hashlib.sha256).hexdigest()
                attempt = 0
                while True:
                    attempt += 1
                    error = await self._post(
                        client,
                        url,
                        payload,
                        {
                            "Content-Type": "application/json",
                            "X-Sandex-Event-Id": event_id,
                            "X-Sandex-Event-Type": kind,
                            "X-Sandex-Delivery-Attempt": str(attempt),
                            "X-Sandex-Signature": f"sha256={signature}",
                        },
                    )
                    if error is None:
                        break
                    progress.attempts, progress.last_error = attempt, error
                    self._dirty = True
                    delay = min(self.backoff_max, self.backoff_first * 2 ** (attempt - 1))
                    log.info(
                        "webhook delivery failed",
                        url=url,
                        event_id=event_id,
                        error=error,
                        retry_in=delay,
                    )
                    await asyncio.sleep(delay)
                progress.delivered_seq, progress.attempts, progress.last_error = seq, 0, None
                self._dirty = True

    async def _post(
        self, client: httpx.AsyncClient, url: str, payload: bytes, headers: dict[str, str]
    ) -> str | None:
        """None when the receiver took the event (2xx), else why not."""
        try:
            r = await client.post(url, content=payload, headers=headers)
        except httpx.HTTPError as exc:
            return f"{type(exc).__name__}: {exc}"[:200]
        if 200 <= r.status_code < 300:
            return None
        return f"HTTP {r.status_code}"

    def _flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        data = {c: asdict(p) for c, p in list(self._progress.items())}
        tmp = self.progress_path.with_name(self.progress_path.name + ".tmp")
        try:
            tmp.write_bytes(orjson.dumps(data))
            os.replace(tmp, self.progress_path)
        except OSError as exc:  # kept in memory; written at the next flush
            log.warning("webhook progress not saved", error=str(exc))
            self._dirty = True


def delivered_through(app: Any, customer_id: str) -> int | None:
    """With a webhook registered, the seq up to which its events were delivered."""
    row = app.state.queries.conn.execute(
        "SELECT id, since FROM webhooks WHERE customer_id = ?", (customer_id,)
    ).fetchone()
    if row is None:
        return None
    return int(app.state.webhooks.delivered_through(customer_id, row[0], row[1]))


def status(app: Any, customer_id: str) -> dict[str, Any] | None:
    """A customer's registration with its delivery backlog, for `GET /v2/sandbox/webhooks`."""
    conn = app.state.queries.conn
    row = conn.execute(
        "SELECT id, url, since, created_at FROM webhooks WHERE customer_id = ?", (customer_id,)
    ).fetchone()
    if row is None:
        return None
    webhook_id, url, since, created_at = row
    deliverer: Deliverer = app.state.webhooks
    delivered = deliverer.delivered_through(customer_id, webhook_id, since)
    attempts, error = deliverer.failures(customer_id)
    backlog = conn.execute(
        "SELECT count(*) FROM event_feed WHERE customer_id = ? AND seq > ?",
        (customer_id, delivered),
    ).fetchone()[0]
    view: dict[str, Any] = {
        "id": webhook_id,
        "url": url,
        "created_at": created_at,
        "undelivered_webhooks": backlog,
        "failed_attempts": attempts,
    }
    if error:
        view["last_error"] = error
    return view
