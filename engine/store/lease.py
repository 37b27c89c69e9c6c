"""The writer lease: while a sandex writer runs on a database, no other writer and no
tool that rewrites the read models may.

SQLite's own locks last one transaction; the question here is whether a writer *runs*.
A second writer decides on a state that lacks the first one's events (their positions
collide), and `sandex rebuild` replays the log once and then replaces every read-model
row: rows a running writer committed in between were lost, though acknowledged.

The lease is an exclusive advisory lock (`flock`) on `<db>.lock`, a file of its own
beside the database (mode 0600, left in place: removing it would let two processes lock
two different files). The kernel drops the lock when its holder closes it or dies,
however it dies, so a crash never leaves a stale lease. The file holds the holder's pid,
for the refusal's message only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

from sandex.engine.store.port import StoreUnavailable


class LeaseHeld(StoreUnavailable):
    """Another writer holds the database's lease."""


class Fenced(StoreUnavailable):
    """This writer lost the database's lease (another writer took over): it must never
    commit again."""


def lock_path(db_path: str) -> str:
    return f"{db_path}.lock"


def _leased(db_path: str) -> bool:
    """A plain file has a lease; an in-memory database (or a URI) has no second writer
    that could find its lock file."""
    return bool(db_path) and not db_path.startswith((":memory:", "file:"))


class WriterLease:
    """Held from `take` until `release` (or the process's end)."""

    def __init__(self, fd: int, path: str) -> None:
        self._fd: int | None = fd
        self.path = path

    @classmethod
    def take(cls, db_path: str) -> WriterLease | None:
        """The lease of `db_path`, or `LeaseHeld` at once if another writer has it."""
        if not _leased(db_path):
            return None
        path = lock_path(db_path)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot open database {db_path}: unable to open its lock file {path}:"
                f" {exc.strerror}"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            by = f" (pid {holder})" if holder else ""
            raise LeaseHeld(
                f"database {db_path} is in use by another sandex writer{by}; stop it first"
            ) from None
        except OSError as exc:
            os.close(fd)
            raise StoreUnavailable(f"cannot lock {path}: {exc.strerror}") from exc
        with contextlib.suppress(OSError):  # a file made by another user keeps its mode
            os.fchmod(fd, 0o600)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(fd, path)

    def release(self) -> None:
        """Closing the file drops the lock; the file stays for the next holder."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        # An engine dropped without `stop` (a failed start-up) must not keep the database
        # from every later writer of this process.
        self.release()


def _holder(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
