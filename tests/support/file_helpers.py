"""Helpers for tests about files on disk: their modes and their bytes."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def usual_umask() -> Iterator[None]:
    """The usual umask, under which a file made with default permissions is 0644."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def file_mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def database_bytes(db: Path | str) -> bytes:
    """Everything SQLite keeps of a database on disk: the file and its companions."""
    return b"".join(
        Path(f"{db}{suffix}").read_bytes()
        for suffix in ("", "-wal", "-shm", "-journal")
        if Path(f"{db}{suffix}").exists()
    )
