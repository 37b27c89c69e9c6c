"""The composition root: the one place that builds a store from a `--db` (an SQLite
file, or a PostgreSQL URL) and hands it to an `Engine`, which never builds a store
itself (tests hand it a memory store)."""

from __future__ import annotations

from pathlib import Path

from engine.config.settings import Settings
from engine.kernel.clock import Clock
from engine.kernel.registry import Registry
from engine.read.readmodels import TABLES
from engine.runtime.writer import Engine
from engine.store import open_store


def open_engine(
    path: str | Path,
    settings: Settings | None = None,
    clock: Clock | None = None,
    *,
    lease: bool = True,
    registry: Registry | None = None,
) -> Engine:
    """An engine on the database at `path` (a file or a `postgresql://` URL; made if
    new), not started.

    `lease=False` is for a brief writer beside a running one (`sandex clients revoke`):
    it takes no writer lease (engine/store/lease.py), and the two meet only in SQLite's
    write lock, each reloading what the other wrote before it decides. `registry`: the
    deciders, appliers and timers (the domain's when None)."""
    settings = settings or Settings()
    store = open_store(
        path,
        durability=settings.durability,
        tables=TABLES,
        lease=lease,
        lease_seconds=settings.writer_lease_seconds,
    )
    try:
        return Engine(store, settings, clock, registry=registry)
    except BaseException:
        store.close()
        raise
