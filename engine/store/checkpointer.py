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
after a quiet spell is still copied at once. A pass that finds the log unchanged also
closes its connection (its page cache, schema and statements: memory each idle world
would hold for nothing), and the passes after it need none (a `stat` of the log file)
until a nudge or a changed log file says it was written.

A checkpoint that fails (a full disk, a read-only file) is retried at twice the last
wait, up to `max_interval`, on a fresh connection, and logged once when the failures
start and once when they stop: a fault that lasts does not fill the log with a line
every pass, and the writer's backstop still copies meanwhile.

Every started `Checkpointer` of the process is passed by one thread (`_Checkpoints`),
each database when its own wait is over: a server's loaded worlds cost that one thread
between them rather than a thread each, and it ends with the last of them. While
several databases are busy at once (worlds driven together), each busy one waits its
`interval` times their number (`_Checkpoints.busy_wait`, up to `max_interval`): they
share the process's one writer's pace, so each log grows that much slower, and a pass
still finds about as many pages as one busy database's would. At the `interval` each,
the passes (each a wake-up, a copy and its syncs) multiplied with the busy databases
while the writes they copy did not.
"""

from __future__ import annotations

import heapq
import itertools
import os
import sqlite3
import threading
import time

from sandex.engine.kernel.logs import get_logger

log = get_logger("sandex.store")


def _connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path, check_same_thread=False, isolation_level=None)


def log_file_stamp(path: str) -> tuple[int, int, int] | None:
    """The write-ahead log file's (inode, size, modification time): a commit changes it,
    so whoever last read the database can tell it unchanged without a connection."""
    try:
        found = os.stat(f"{path}-wal")
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns


class Checkpointer:
    """One database's background checkpoints: its connection and its waits. Its passes
    run in the process's one checkpoint thread from `start` to `stop`."""

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
        self._started = False
        self._conn: sqlite3.Connection | None = None
        self._wait = interval
        self._failing = False
        self._last: tuple[int, ...] | None = None  # the last pass's (busy, log, checkpointed)
        # waiting longer than `interval`: the next COMMIT should `nudge` it
        self.idle = False
        # closed while idle: the log file as it was then, and whether a COMMIT
        # nudged since (either says the next pass must open a connection and copy)
        self._closed_at: tuple[int, int, int] | None = None
        self._nudged = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            _Checkpoints.join(self)

    def stop(self) -> None:
        """No pass from now on (one under way has ended); the connection is closed."""
        if self._started:
            self._started = False
            _Checkpoints.leave(self)
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @property
    def connected(self) -> bool:
        """Whether it holds a connection (not while the database stays idle)."""
        return self._conn is not None

    def nudge(self) -> None:
        """The log was written: pass now rather than at the end of a long idle wait."""
        self._nudged = True
        if self._started:
            _Checkpoints.nudge(self)

    def pass_once(self) -> float:
        """One checkpoint; answers how long to wait before the next."""
        if self._still_idle():
            self._wait = min(self._wait * 2, self.idle_interval)
            return self._wait
        try:
            if self._conn is None:
                self._conn = _connect(self.path)
            found = tuple(self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())
        except sqlite3.DatabaseError as exc:  # the writer's backstop still runs
            if not self._failing:
                log.warning("background checkpoint failed; backing off", error=str(exc))
                self._failing = True
            self._wait = min(self._wait * 2, self.max_interval)
            # The fault may have left the connection unable to write even once it
            # clears (a file that was read-only when it was opened): start afresh.
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._last = None
            return self._wait
        if self._failing:
            log.info("background checkpoints resumed")
            self._failing = False
        idle = found == self._last
        self._wait = min(self._wait * 2, self.idle_interval) if idle else self.interval
        self.idle = self._wait > self.interval
        self._last = found
        if idle:
            self._close_while_idle()
        return self._wait

    def _still_idle(self) -> bool:
        """Closed while idle, and neither nudged nor its log file changed since."""
        if self._conn is not None or self._closed_at is None:
            return False
        if not self._nudged and log_file_stamp(self.path) == self._closed_at:
            return True
        self._closed_at = None
        return False

    def _close_while_idle(self) -> None:
        assert self._conn is not None
        self._nudged = False
        self._closed_at = log_file_stamp(self.path)
        self._conn.close()
        self._conn = None


class _Checkpoints:
    """The process's one checkpoint thread: it passes each started `Checkpointer` when
    that one's wait is over (a heap of due times), and ends with the last of them."""

    _cond = threading.Condition()
    _due: dict[Checkpointer, float] = {}  # each member's next pass (monotonic)
    _heap: list[tuple[float, int, Checkpointer]] = []  # (due, order, member); stale kept
    _order = itertools.count()
    _passing: Checkpointer | None = None
    _thread: threading.Thread | None = None
    # the members whose last pass found the log written (at their busy `interval`)
    _busy: set[Checkpointer] = set()

    @classmethod
    def join(cls, member: Checkpointer) -> None:
        with cls._cond:
            cls._schedule(member, time.monotonic() + member.interval)
            if cls._thread is None:
                cls._thread = threading.Thread(
                    target=cls._run, name="sandex-checkpoint", daemon=True
                )
                cls._thread.start()

    @classmethod
    def leave(cls, member: Checkpointer) -> None:
        ending = None
        with cls._cond:
            cls._due.pop(member, None)
            cls._busy.discard(member)
            cls._cond.notify_all()
            thread = cls._thread
            if thread is threading.current_thread():
                return
            while cls._passing is member:
                cls._cond.wait()
            # The last member gone, the thread ends: wait for it, leaving none behind
            # (unless another member joined meanwhile, which it then serves).
            while thread is not None and cls._thread is thread and not cls._due:
                cls._cond.wait()
            if thread is not None and cls._thread is not thread:
                ending = thread
        if ending is not None:
            ending.join()

    @classmethod
    def nudge(cls, member: Checkpointer) -> None:
        with cls._cond:
            if member in cls._due:
                cls._schedule(member, time.monotonic())
                cls._cond.notify_all()

    @classmethod
    def busy_wait(cls, member: Checkpointer, wait: float) -> float:
        """The wait before `member`'s next pass, its last pass having answered `wait`:
        a busy member's (`wait` at its `interval`) times the members busy now, up to
        its `max_interval`; any other's as it is. Called with `_cond` held."""
        busy = cls._busy
        if wait > member.interval:
            busy.discard(member)
            return wait
        busy.add(member)
        return min(wait * len(busy), max(wait, member.max_interval))

    @classmethod
    def _schedule(cls, member: Checkpointer, due: float) -> None:
        cls._due[member] = due
        heapq.heappush(cls._heap, (due, next(cls._order), member))

    @classmethod
    def _run(cls) -> None:
        while True:
            with cls._cond:
                while True:
                    if not cls._due:
                        cls._heap.clear()
                        cls._thread = None
                        cls._cond.notify_all()
                        return
                    due, _, member = cls._heap[0]
                    if cls._due.get(member) != due:
                        heapq.heappop(cls._heap)  # stale: nudged, rescheduled or gone
                        continue
                    wait = due - time.monotonic()
                    if wait <= 0:
                        heapq.heappop(cls._heap)
                        break
                    cls._cond.wait(wait)
                cls._passing = member
                nudged_before = cls._due.get(member)
            try:
                wait = member.pass_once()
            except Exception as exc:  # noqa: BLE001 - the other databases still pass
                log.warning("background checkpoint pass failed", error=repr(exc))
                wait = member.max_interval
            with cls._cond:
                cls._passing = None
                now_due = cls._due.get(member)
                if now_due is not None:
                    # nudged during the pass: at once, else after its wait
                    nudged = now_due != nudged_before
                    wait = cls.busy_wait(member, wait)
                    cls._schedule(member, now_due if nudged else time.monotonic() + wait)
                cls._cond.notify_all()
