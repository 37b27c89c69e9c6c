"""`sandex copy`: a whole database moved to another store (SQLite to PostgreSQL, or
back), verified, with the same log hash.

What moves: the meta values (the seed, the execution id key), the log as stored (every
column byte for byte, so the log hash cannot change), every read-model row and the
checkpoint, all read in one snapshot of the source; and the key file, so tokens and
the webhook secrets sealed in the log still open. What does not: the state snapshots
(a cache; the first start-up on the copy replays the log and takes them again). The
target must hold no event, and is written under its writer lease.

A copy is visible only when whole. Its first write marks the target unfinished
(`UNFINISHED_COPY`, with the metas), and the mark goes only after the log, the read
models and the key file are all written: a copy into PostgreSQL stopped at any point
between (killed, the server gone) leaves a database that `sandex serve` refuses with
one line and `sandex verify` fails; drop it and copy again. A copy into an SQLite file
is made under another name (`.partial`) and renamed into place when whole, its
companions removed. The copy is then verified (`store_problems` and
`key_file_problems`, as `sandex verify`) and its log hash compared with the source's;
a mismatch is an error."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from sandex.engine.runtime import key_file
from sandex.engine.runtime.composition import TABLES
from sandex.engine.store import (
    UNFINISHED_COPY,
    BulkLoad,
    capability,
    display,
    holds_events,
    locate,
    open_reader,
    open_store,
    private_files,
)
from sandex.engine.store.lease import lock_path
from sandex.engine.tools.time_travel import store_log_hash
from sandex.engine.tools.verify import key_file_problems, store_problems

__all__ = ["CopyError", "Copied", "copy", "display"]


class CopyError(Exception):
    """The copy cannot be made, or is not the source's."""


@dataclass(frozen=True)
class Copied:
    events: int
    log_hash: str


def copy(source: str | Path, target: str | Path) -> Copied:
    """Copy the database at `source` into the new (or empty) database `target`."""
    if not locate(source).exists():
        raise CopyError(f"no database at {source}")
    if holds_events(target):
        raise CopyError(f"{display(target)} holds events already; copy writes a new database")
    final = target
    if not locate(target).on_server:  # built aside, renamed when whole
        final_path = Path(target)
        if not final_path.parent.is_dir():
            raise CopyError(f"{target}: no folder {final_path.parent} to write it in")
        target = final_path.with_name(final_path.name + ".partial")
        _remove_aside(target)
    with closing(open_reader(source)) as reader:
        keyless = key_file_problems(str(source), reader)
        if keyless:  # the copy could not be whole
            raise CopyError(f"the source {display(source)} cannot be copied: {keyless[0]}")
        with closing(open_store(target, tables=TABLES, lease=True)) as store:
            loading = capability(store, BulkLoad)
            if loading is None:
                raise CopyError(f"{display(target)} cannot be loaded from another database")
            with reader.consistent():
                store.set_metas({**reader.all_meta(), UNFINISHED_COPY: display(source)})
                loading.load_events(reader.stored_rows())
                for table, spec in TABLES.items():
                    loading.load_rows(table, reader.read_model_rows(table, list(spec["columns"])))
                loading.set_checkpoint(reader.checkpoint())
                events = reader.last_position()
                expected = store_log_hash(reader)
            _copy_keys(source, final)
            store.erase_meta(UNFINISHED_COPY)  # whole: the copy may be served
    if final is not target:
        wal = Path(f"{target}-wal")  # emptied by the last write's checkpoint (erase_meta)
        if wal.exists() and wal.stat().st_size > 0:
            raise CopyError(f"{target}: its write-ahead log was not copied into it; copy again")
        Path(target).rename(final)
        _remove_aside(Path(target))
    with closing(open_reader(final)) as copied, copied.consistent():
        problems = store_problems(copied) + key_file_problems(str(final), copied)
        got = store_log_hash(copied)
    if problems:
        raise CopyError(f"the copy at {display(final)} fails verify: {problems[0]}")
    if got != expected:
        raise CopyError(f"the copy's log hash {got} differs from the source's {expected}")
    return Copied(events=events, log_hash=got)


def _remove_aside(partial: Path) -> None:
    """The SQLite file a copy builds aside, and what SQLite and the writer lease keep
    beside it: a copy stopped before its rename leaves them; one renamed leaves the
    companions and the lock file, which name no database any more."""
    for suffix in ("", *private_files.COMPANIONS):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    Path(lock_path(str(partial))).unlink(missing_ok=True)


def _copy_keys(source: str | Path, target: str | Path) -> None:
    """The target gets the source's key file (the same signing and sealing keys)."""
    source_keys = key_file.path_for(source)
    target_keys = key_file.path_for(target)
    if source_keys is not None and target_keys is not None and source_keys.exists():
        # durable before the mark goes: a copy served must find its keys after a crash
        private_files.write(target_keys, source_keys.read_bytes(), sync=True)
