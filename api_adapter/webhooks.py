"""Webhook delivery: each customer's feed events POSTed to its URL, in order, at least once.

The deliverer runs in its own thread with its own event loop and its own database
connections; it reads the committed `event_feed` and `webhooks` tables and never submits
a command, so the writer never waits for a receiver. Per customer, one event is in
flight at a time: the next is sent only once the previous was answered 2xx, and a
failure is retried with exponential backoff (0.5 s, 1 s, 2 s ... at most 60 s) for as
long as it fails. Progress (the last delivered `seq`) is kept in the
`webhook_deliveries` table, outside the log: a restart resumes where delivery stopped,
and may send the event that was in flight again (at least once, never skipped).

Each POST carries the event as its JSON body and these headers: `X-Sandex-Event-Id`,
`X-Sandex-Event-Type`, `X-Sandex-Delivery-Attempt` and `X-Sandex-Signature:
sha256=<hex HMAC-SHA256 of the body with the webhook's secret>`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx
import structlog

from engine.feed import DELIVERIES

log = structlog.get_logger("sandex.webhooks")

_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {DELIVERIES} (customer_id TEXT PRIMARY KEY, webhook_id TEXT,"
    " delivered_seq INTEGER, attempts INTEGER, last_error TEXT, updated_at REAL)"
)


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
        self._progress: dict[str, _Progress] = {}
        self._dirty: set[str] = set()
        self._ready = threading.Event()

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
        self.write = sqlite3.connect(self.db_path, isolation_level=None)
        self.write.execute("PRAGMA busy_timeout=5000")
        self.write.execute(_SCHEMA)
        for customer_id, webhook_id, seq, attempts, error in self.write.execute(
            f"SELECT customer_id, webhook_id, delivered_seq, attempts, last_error FROM {DELIVERIES}"
        ):
            self._progress[customer_id] = _Progress(webhook_id, seq, attempts, error)
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
                self.write.close()

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
            self._dirty.add(customer_id)
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
                    self._dirty.add(customer_id)
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
                self._dirty.add(customer_id)

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
        rows = [
            (c, p.webhook_id, p.delivered_seq, p.attempts, p.last_error, time.time())
            for c in self._dirty
            if (p := self._progress.get(c)) is not None
        ]
        self._dirty.clear()
        try:
            self.write.executemany(
                f"INSERT OR REPLACE INTO {DELIVERIES} (customer_id, webhook_id, delivered_seq,"
                " attempts, last_error, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
        except sqlite3.Error as exc:  # kept in memory; written at the next flush
            log.warning("webhook progress not saved", error=str(exc))
            self._dirty.update(r[0] for r in rows)


def status(conn: sqlite3.Connection, customer_id: str) -> dict[str, Any] | None:
    """A customer's registration with its delivery backlog, for `GET /v2/sandbox/webhooks`."""
    row = conn.execute(
        "SELECT id, url, since, created_at FROM webhooks WHERE customer_id = ?", (customer_id,)
    ).fetchone()
    if row is None:
        return None
    webhook_id, url, since, created_at = row
    delivered, attempts, error = since, 0, None
    if conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (DELIVERIES,)
    ).fetchone():
        progress = conn.execute(
            f"SELECT delivered_seq, attempts, last_error FROM {DELIVERIES}"
            " WHERE customer_id = ? AND webhook_id = ?",
            (customer_id, webhook_id),
        ).fetchone()
        if progress is not None:
            delivered, attempts, error = max(progress[0], since), progress[1], progress[2]
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
