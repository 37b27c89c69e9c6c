"""Copying the write-ahead log into the database, off the writer's path.

In WAL mode every commit appends pages to the log, and a checkpoint copies them into
the database file and syncs it. Left to SQLite, the checkpoint runs inside the COMMIT
that crosses `wal_autocheckpoint` pages: every caller of that group commit, and every
request queued behind it, waits for it (about 30 ms at 4,000 pages, measured as the
whole p99 of HTTP order creation: 24 ms with it, 5.5 ms without). Here a thread with
its own connection checkpoints every `interval` seconds instead; with nothing to copy a
pass costs microseconds. A PASSIVE checkpoint takes no lock a writer needs,
and the copy and the sync run without the GIL, so they overlap the writer's work.

The writer keeps its own automatic checkpoint as a backstop, at a higher mark: under
steady load a commit lands during almost every background pass, so the log is never
wholly copied at a moment when the next write could start it over; the writer's own
checkpoint, which nothing can overtake, lets it start over, and finds little left to
copy.

A pass that finds the log as the last one left it (nothing written since) waits twice
as long before the next, up to `idle_interval`, and the first pass that finds more goes
back to `interval`; while it waits longer than `interval`, the store's next COMMIT
`nudge`s it to pass at once. An idle database, such as each of a server's many idle
worlds, so costs a wake-up every few seconds instead of fifty a second, and a write
after a quiet spell is still copied at once.

A checkpoint that fails (a full disk, a read-only file) is retried at twice the last
wait, up to `max_interval`, on a fresh connection, and logged once when the failures
start and once when they stop: a fault that lasts does not fill the log with a line
every pass, and the writer's backstop still copies meanwhile.
"""

from __future__ import annotations

import sqlite3
import threading

from engine.kernel.logs import get_logger

log = get_logger("sandex.store")


def _connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path, check_same_thread=False, isolation_level=None)


class Checkpointer:
    def __init__(
        self,
        path: str,
        interval: float = 0.02,
        max_interval: float = 5.0,
        idle_interval: float = 5.0,
    ) -> None:
        self.path = path
        self.interval = interval
        self.max_interval = max_interval
        self.idle_interval = idle_interval
        self._bell = threading.Event()  # rung by `stop`, and by `nudge`
        self._stopping = False
        self._thread: threading.Thread | None = None
        # waiting longer than `interval`: the next COMMIT should `nudge` it
        self.idle = False

    def start(self) -> None:
        if self._thread is None:
            self._stopping = False
            self._bell.clear()
            self._thread = threading.Thread(target=self._run, name="sandex-checkpoint", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._stopping = True
            self._bell.set()
            self._thread.join()
            self._thread = None

    def nudge(self) -> None:
        """The log was written: pass now rather than at the end of a long idle wait."""
        self._bell.set()

    def _rest(self, wait: float) -> bool:
        """Wait `wait` seconds, or until nudged or stopped; True when stopping."""
        self._bell.wait(wait)
        self._bell.clear()
        return self._stopping

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        wait = self.interval
        failing = False
        last: tuple[int, ...] | None = None  # the last pass's (busy, log, checkpointed)
        try:
            while not self._rest(wait):
                try:
                    if conn is None:
                        conn = _connect(self.path)
                    found = tuple(conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())
                except sqlite3.DatabaseError as exc:  # the writer's backstop still runs
                    if not failing:
                        log.warning("background checkpoint failed; backing off", error=str(exc))
                        failing = True
                    wait = min(wait * 2, self.max_interval)
                    # The fault may have left the connection unable to write even once it
                    # clears (a file that was read-only when it was opened): start afresh.
                    if conn is not None:
                        conn.close()
                        conn = None
                    last = None
                    continue
                if failing:
                    log.info("background checkpoints resumed")
                    failing = False
                idle = found == last
                wait = min(wait * 2, self.idle_interval) if idle else self.interval
                self.idle = wait > self.interval
                last = found
        finally:
            if conn is not None:
                conn.close()
