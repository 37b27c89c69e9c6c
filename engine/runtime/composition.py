"""The composition root: the one place that builds what an engine runs on (its store,
from a `--db`: an SQLite file or a PostgreSQL URL; its settings, registry and read-model
projection; the seed and ids, execution ids, keys, secrets, clock, market feed and
snapshotter) and hands the parts to an `Engine`, which builds none of them itself. The
domain's registry is reached here, and by the command-line tools' own entry points;
the runtime and the read side are handed one."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any

from sandex.engine.config.settings import Settings
from sandex.engine.domain.registrations import domain_registry
from sandex.engine.kernel.clock import Clock, ManualClock, WallClock
from sandex.engine.kernel.credentials import Secrets
from sandex.engine.kernel.execution_ids import META_KEY as EXECUTION_KEY
from sandex.engine.kernel.execution_ids import database_key
from sandex.engine.kernel.execution_ids import new_key as new_execution_key
from sandex.engine.kernel.ids import KEYED, IdSource
from sandex.engine.kernel.ids import META_KEY as IDS_KEY
from sandex.engine.kernel.logs import get_logger
from sandex.engine.kernel.registry import Registry
from sandex.engine.runtime.key_file import LEGACY_SIGNING_META, KeyFile, KeyFileError
from sandex.engine.runtime.market_feed import MarketFeed
from sandex.engine.runtime.projection import Projection
from sandex.engine.runtime.startup_cache import Snapshotter
from sandex.engine.runtime.writer import Engine, EngineParts
from sandex.engine.store import EventStore, StoreUnavailable, in_memory, open_store, unfinished_copy

log = get_logger("sandex.engine")


def default_registry() -> Registry:
    """The domain's registry (engine/domain/registrations.py), fresh at each call."""
    return domain_registry()


@cache
def default_projection() -> Projection:
    """The domain's read-model tables: what a store opened by a tool, with no engine,
    creates and rebuilds. Row functions are pure, so one projection serves every caller."""
    return Projection(domain_registry().tables)


# The domain's read-model tables as the store creates them (columns and keys).
TABLES: dict[str, dict[str, Any]] = default_projection().tables


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
    registry = default_registry() if registry is None else registry
    projection = Projection(registry.tables)
    store = open_store(
        path,
        durability=settings.durability,
        tables=projection.tables,
        lease=lease,
        lease_seconds=settings.writer_lease_seconds,
    )
    return build_engine(store, settings, clock, registry=registry, projection=projection)


def build_engine(
    store: EventStore,
    settings: Settings | None = None,
    clock: Clock | None = None,
    *,
    registry: Registry | None = None,
    projection: Projection | None = None,
) -> Engine:
    """An engine on `store` (a memory store, in tests), not started. `store` is the
    engine's from now on: closed by `stop`, or here when the engine cannot be built."""
    if isinstance(store, str | os.PathLike):
        raise TypeError(f"build_engine takes a store: open_engine({str(store)!r}) opens one")
    try:
        return Engine(bootstrap(store, settings, clock, registry=registry, projection=projection))
    except BaseException:
        store.close()
        raise


def bootstrap(
    store: EventStore,
    settings: Settings | None = None,
    clock: Clock | None = None,
    *,
    registry: Registry | None = None,
    projection: Projection | None = None,
) -> EngineParts:
    """Everything an engine on `store` needs: a new database is labelled with its seed
    (and whether its ids are keyed) and its execution id key; the key file is opened (made
    on first open). `clock`: the settings' (manual from `clock_start`, or the wall's)
    when None; `registry`: the domain's when None; `projection`: the registry's tables."""
    settings = settings or Settings()
    registry = default_registry() if registry is None else registry
    projection = Projection(registry.tables) if projection is None else projection
    refusal = unfinished_copy(store)
    if refusal is not None:  # served, it would get new keys and half its rows
        raise StoreUnavailable(refusal)
    seed_text = store.get_meta("seed")
    new_database = seed_text is None
    if seed_text is None:
        seed_text = str(settings.seed or 0)
        labels = {"seed": seed_text, "created_with_clock": settings.clock}
        if settings.seed is None:  # no seed asked for: ids nobody else can compute
            labels[IDS_KEY] = KEYED
        labels[EXECUTION_KEY] = new_execution_key(settings.execution_ids, int(seed_text))
        # One commit (one sync), and a database never half-labelled.
        store.set_metas(labels)
    seed = int(seed_text)
    key = store.get_meta(EXECUTION_KEY)
    if key is None:  # a database from before execution ids were permuted
        key = new_execution_key(settings.execution_ids, seed)
        store.set_meta(EXECUTION_KEY, key)
    keys = _open_keys(store, new_database, sync=settings.durability == "FULL")
    if clock is None:
        clock = ManualClock(settings.clock_start) if settings.clock == "manual" else WallClock()
    # State snapshots (engine/runtime/startup_cache.py): none for an in-memory database,
    # which a second connection cannot see.
    snapshot_every = 0 if in_memory(store.path) else settings.snapshot_every_events
    return EngineParts(
        store=store,
        settings=settings,
        registry=registry,
        projection=projection,
        seed=seed,
        execution_ids=database_key(key),
        keys=keys,
        # Secrets come from the OS, never from the seeded ids (engine/kernel/credentials.py).
        secrets=Secrets(keys.current().sealing),
        clock=clock,
        ids=IdSource(seed, _id_key(store, keys)),
        market_feed=MarketFeed(settings, seed),
        snapshotter=Snapshotter(store, registry),
        snapshot_every=snapshot_every,
    )


def _open_keys(store: EventStore, new_database: bool, *, sync: bool) -> KeyFile:
    """The database's key file (engine/runtime/key_file.py), made on first open (`sync`:
    on the disk before the engine runs); a signing key that an older sandex kept in the
    database moves there and is erased."""
    legacy = store.get_meta(LEGACY_SIGNING_META)
    try:
        keys = KeyFile.open(store.path, legacy_signing=legacy, new_database=new_database, sync=sync)
    except (KeyFileError, OSError) as exc:
        raise StoreUnavailable(f"cannot open the key file of {store.path}: {exc}") from exc
    if legacy is not None:
        store.erase_meta(LEGACY_SIGNING_META)
        log.warning("signing key moved out of the database", key_file=str(keys.path))
    return keys


def _id_key(store: EventStore, keys: KeyFile) -> bytes | None:
    """The key file's id key for a database whose ids are keyed; None for one whose ids
    are drawn from its seed (created with a seed set, or before id keys)."""
    if store.get_meta(IDS_KEY) != KEYED:
        return None
    key = keys.current().ids
    if key is None:
        raise StoreUnavailable(
            f"the key file of {store.path} holds no id key, which its database needs"
        )
    return key
