"""The log as history: its fingerprint, and the database as it was at a past point.

`log_hash` is what "byte-identical" means for a replayed scenario: SHA-256 over every
stored column of every event, in position order, with the credential fields of
`sandex.engine.kernel.credentials.EVENT_FIELDS` masked (a client's salt and secret hash, a webhook's
sealed secret: drawn from the OS, they differ on every run by design). `travel` writes
a new database that holds the log up to a past position (or time) and read models
rebuilt from it: the state as it was then, which `sandex verify` accepts like any other
database.
"""

from __future__ import annotations

import hashlib
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from itertools import takewhile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sandex.engine.kernel.clock import format_time
from sandex.engine.kernel.credentials import EVENT_FIELDS, redact
from sandex.engine.runtime import key_file
from sandex.engine.store import (
    BulkLoad,
    EventStore,
    SqliteEventStore,
    capability,
    locate,
    open_reader,
    private_files,
)

if TYPE_CHECKING:
    from sandex.engine.kernel.registry import Registry
    from sandex.engine.kernel.state import State


def _read_only(path: str | Path) -> EventStore:
    if not locate(path).exists():
        raise FileNotFoundError(f"no database at {path}")
    return open_reader(path)


def log_hash(db_path: str | Path, up_to: int | None = None) -> str:
    """`sha256:<hex>` of the event log as stored, credential fields masked: the whole
    log, or its events up to position `up_to` (a fork's log and its template's agree
    up to the snapshot the fork was made from)."""
    store = _read_only(db_path)
    try:
        return store_log_hash(store, up_to)
    finally:
        store.close()


def store_log_hash(store: EventStore, up_to: int | None = None) -> str:
    """`log_hash` of any store's log."""
    digest = hashlib.sha256()
    rows = store.stored_rows()
    if up_to is not None:
        rows = takewhile(lambda r: r[0] <= up_to, rows)
    for row in rows:
        if row[3] in EVENT_FIELDS:
            data = orjson.dumps(redact(row[3], orjson.loads(row[5]))).decode()
            row = (*row[:5], data, *row[6:])
        digest.update(orjson.dumps(row))
        digest.update(b"\n")
    return "sha256:" + digest.hexdigest()


@dataclass(frozen=True)
class Travelled:
    position: int  # the last event kept
    asked: int  # the position asked for (or the last one at the time asked for)
    occurred_at: str  # the time of the last event kept ("" for an empty log)
    events: int
    base: int = 0  # the position of the state snapshot it started from (0: none)


def cut_position(
    store: EventStore, *, position: int | None = None, until: datetime | None = None
) -> tuple[int, int]:
    """(position to keep up to, position asked for): the cut is moved back to the end of
    the decision it falls in, since a state is consistent only between decisions."""
    last = store.last_position()
    if (position is None) == (until is None):
        raise ValueError("give exactly one of a position and a time")
    if position is not None:
        if position < 0:
            raise ValueError("a position is 0 or more")
        asked = min(position, last)
    else:
        assert until is not None
        asked = store.position_at(format_time(until))
    cut = asked
    following = next(store.read(after=cut, limit=1), None)
    if following is not None and following.position == cut + 1:
        first = following.meta.get("command_position")
        if isinstance(first, int) and first <= cut:
            cut = first - 1
    return cut, asked


def travel(
    source: str | Path,
    out: str | Path,
    *,
    position: int | None = None,
    until: datetime | None = None,
) -> Travelled:
    """Write `out`: the events of `source` up to the cut, its seed, a copy of its key
    file (the same token signing and webhook sealing keys), and read models rebuilt
    from those events.

    The state at the cut is the source's newest state snapshot at or before it (the
    start-up cache of engine/runtime/startup_cache.py, used only when it still matches the
    log) and the events after it, or a replay of the whole prefix when there is none.
    The file is built under another name without a journal (nothing in it is worth
    protecting until it is complete) and renamed into place when done, so `out` either
    does not exist or is a whole database."""
    from sandex.engine.runtime.composition import default_projection, default_registry
    from sandex.engine.runtime.startup_cache import load as load_state

    projection = default_projection()
    tables = projection.tables

    out_path = Path(out)
    if out_path.exists():
        raise FileExistsError(f"{out} exists already; time travel writes a new database")
    if not out_path.parent.is_dir():
        raise FileNotFoundError(f"{out}: no folder {out_path.parent} to write it in")
    reader = _read_only(source)
    try:
        cut, asked = cut_position(reader, position=position, until=until)
        meta = reader.all_meta()
        state, _, base = load_state(reader, upto=cut, registry=default_registry())
    finally:
        reader.close()
    # A signing key an older sandex kept in the database goes to the key file, not along.
    legacy_signing = meta.pop(key_file.LEGACY_SIGNING_META, None)
    partial = out_path.with_name(out_path.name + ".partial")
    for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        leftover.unlink(missing_ok=True)
    store = SqliteEventStore(partial, durability="NORMAL", tables=tables)
    try:
        with store.bulk_loading():
            for key, value in meta.items():
                store.set_meta(key, value)
            # An SQLite source is attached to the new file and copied by SQL; another
            # store's rows come through Python.
            on_server = locate(source).on_server
            if on_server:
                with closing(_read_only(source)) as reader:
                    store.load_events(takewhile(lambda r: r[0] <= cut, reader.stored_rows()))
            else:
                store.copy_log(source, cut)
            rows: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
            for table, row in projection.all_rows(state):
                rows.setdefault(table, ([], []))[0].append(row)
            reached = state.position
            del state
            store.replace_read_models(rows, reached)
            # The append-only read models' rows produced by the events kept: the state
            # does not hold them (engine/domain/feed.py), and rows never change once
            # written, so the source's rows up to the cut are what a rebuild writes.
            if on_server:
                with closing(_read_only(source)) as reader:
                    loaded = capability(reader, BulkLoad)
                    assert loaded is not None  # a server store has it
                    for table, at in projection.append_only.items():
                        columns = list(tables[table]["columns"])
                        store.load_rows(table, loaded.appended_rows(table, columns, at, cut))
            else:
                store.copy_rows(source, projection.append_only, cut)
        events, last = store.log_summary()
    except BaseException:
        store.close()
        partial.unlink(missing_ok=True)
        raise
    store.close()
    _copy_keys(source, out_path, legacy_signing)
    partial.rename(out_path)
    return Travelled(position=cut, asked=asked, occurred_at=last, events=events, base=base)


def _copy_keys(source: str | Path, out: Path, legacy_signing: str | None) -> None:
    """Give `out` the keys of `source`: tokens stay valid and the webhook secrets sealed
    in the copied log still open. A source an older sandex wrote, with no key file, has
    its signing key in its database: `out` gets a key file holding that one."""
    source_keys = key_file.path_for(source)
    out_keys = key_file.path_for(out)
    assert source_keys is not None and out_keys is not None
    if source_keys.exists():
        private_files.copy(source_keys, out_keys)
    else:
        out_keys.unlink(missing_ok=True)  # a stale one, left by a database removed since
        key_file.KeyFile.open(out, legacy_signing=legacy_signing)


def state_at(
    source: str | Path,
    registry: Registry,
    *,
    position: int | None = None,
    until: datetime | None = None,
) -> tuple[State, int]:
    """The state of `source`'s log as it was at a position or a time, cut at a
    decision's end as `travel` cuts it, and that cut: a read-only past state held in
    memory, nothing written (the console's time travel)."""
    from sandex.engine.kernel.state import State
    from sandex.engine.runtime.replay import replay_log

    with closing(_read_only(source)) as store:
        cut, _ = cut_position(store, position=position, until=until)
        if cut == 0:
            return State(), 0
        state, _ = replay_log(store, until=cut, pause_gc=False, registry=registry)
    return state, cut


def past_rows(state: State, registry: Registry, table: str) -> list[dict[str, Any]]:
    """The rows the read model `table` held in a past state (`state_at`): the
    projection's own row builder over every entity of that state, so a past page shows
    exactly what the API's table held then. KeyError for an unknown or append-only table."""
    spec = {t.name: t for t in registry.tables if t.row is not None and t.keys is not None}[table]
    assert spec.row is not None and spec.keys is not None
    rows = (spec.row(state, key) for key in spec.keys(state))
    return [row for row in rows if row is not None]
