"""`sandex verify` and `sandex rebuild`: the log is checked, replayed and compared.

Verify names the first broken invariant: a copy that never finished, a gap in the log,
a posting that does not balance or drives a profile account negative, an asset whose
postings do not sum to zero, a read-model table that differs from a rebuild, or a key
file that is missing, unreadable or not the one that sealed the log's webhook secrets
(without it the database's tokens and webhook secrets are lost)."""

from __future__ import annotations

from typing import Any

from sandex.engine.domain.webhook_registrations import TABLE as WEBHOOKS
from sandex.engine.kernel.credentials import SealError, unseal
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.invariants import check_state
from sandex.engine.kernel.ledger import LedgerViolation
from sandex.engine.kernel.progress import Progress, reporting
from sandex.engine.kernel.registry import Registry
from sandex.engine.kernel.state import State
from sandex.engine.runtime.composition import default_registry
from sandex.engine.runtime.key_file import LEGACY_SIGNING_META, KeyFile, KeyFileError, path_for
from sandex.engine.runtime.projection import Projection
from sandex.engine.runtime.replay import rebuild_read_models, replay
from sandex.engine.store import EventStore, NoSuchTable, open_reader, open_store, unfinished_copy

__all__ = ["key_file_problems", "rebuild", "store_problems", "verify"]


def _rows_by_table(state: State, projection: Projection) -> dict[str, set[tuple[Any, ...]]]:
    tables = projection.tables
    expected: dict[str, set[tuple[Any, ...]]] = {name: set() for name in tables}
    for table, row in projection.all_rows(state):
        columns = list(tables[table]["columns"])
        expected[table].add(tuple(row.get(c) for c in columns))
    return expected


def _checked_events(store: EventStore, problems: list[str], registry: Registry) -> Any:
    """Yield the log while checking that positions and stream versions have no gaps; an
    event of a type no applier knows is reported and not yielded."""
    expected_position = 1
    versions: dict[str, int] = {}
    for event in store.read():
        if event.position != expected_position:
            problems.append(
                f"log gap: expected position {expected_position}, found {event.position}"
            )
        if event.version != versions.get(event.stream, 0) + 1:
            problems.append(
                f"stream {event.stream}: version {event.version} out of order at position {event.position}"
            )
        versions[event.stream] = event.version
        expected_position = event.position + 1
        if event.type not in registry.appliers:  # reported; nothing can apply it
            problems.append(f"unknown event type {event.type} at position {event.position}")
            continue
        yield event


def verify(
    db_path: str, progress: Progress | None = None, registry: Registry | None = None
) -> list[str]:
    """Every broken invariant found, first one first; empty when the database is sound.

    Read-only, and in one read transaction: the log and the read models come from one
    snapshot of the database (WAL), so a verify beside a running writer compares the
    read models with exactly the log they were written from. `progress(position, last)`
    is told how far the replay of the log has got (engine/kernel/progress.py). `registry`:
    the appliers (the domain's when None)."""
    registry = default_registry() if registry is None else registry
    store = open_reader(db_path)
    try:
        with store.consistent():  # the snapshot starts at the first read, the log's
            return store_problems(store, progress, registry) + key_file_problems(db_path, store)
    finally:
        store.close()


def key_file_problems(db_path: str, store: EventStore) -> list[str]:
    """What is wrong with the key file of the database at `db_path` (`store`, read):
    missing or unreadable while the log holds events (the database's tokens and sealed
    webhook secrets open with it alone), or not the file that sealed the webhooks'
    secrets. A database from before key files keeps its signing key in the database
    until its first open, and has none yet."""
    path = path_for(db_path)
    if path is None or store.last_position() == 0:
        return []
    if not path.exists():
        if store.get_meta(LEGACY_SIGNING_META) is not None:
            return []
        return [
            f"key file {path} is missing: the database's tokens and webhook secrets open"
            " only with the file its writer made (restore it beside the database)"
        ]
    try:
        sealing = KeyFile.existing(db_path).current().sealing
    except KeyFileError as exc:
        return [str(exc)]
    try:
        webhooks = list(store.read_model_rows(WEBHOOKS.name, ["id", "secret"]))
    except NoSuchTable:  # a database older than the table: verify names it already
        return []
    for webhook_id, secret in webhooks:
        try:
            unseal(sealing, str(secret), str(webhook_id))
        except SealError:
            return [
                f"key file {path} does not open webhook {webhook_id}'s secret: it is not the"
                " file of this database's writer"
            ]
    return []


def store_problems(
    store: EventStore, progress: Progress | None = None, registry: Registry | None = None
) -> list[str]:
    """`verify` of any store, read as it is now."""
    registry = default_registry() if registry is None else registry
    projection = Projection(registry.tables)
    refusal = unfinished_copy(store)
    problems: list[str] = [] if refusal is None else [refusal]
    last: list[Event] = []

    def tracking(events: Any) -> Any:
        for e in events:
            last[:] = [e]
            yield e

    state = State()
    state.appended = []
    try:
        total = store.last_position() if progress is not None else 0
        events = reporting(_checked_events(store, problems, registry), progress, total)
        replay(tracking(events), state, registry=registry)
    except LedgerViolation as exc:
        at = last[0].position if last else 0
        return [*problems, f"ledger invariant broken at position {at}: {exc}"]
    if problems:
        return problems
    problems.extend(check_state(state, registry.checks))
    if store.checkpoint() != state.position:
        problems.append(
            f"read-model checkpoint {store.checkpoint()} differs from the log's last position {state.position}"
        )
    expected = _rows_by_table(state, projection)
    for table, rows in expected.items():
        columns = list(projection.tables[table]["columns"])
        try:
            actual = set(store.read_model_rows(table, columns))
        except NoSuchTable as exc:  # a database older than the table
            problems.append(f"read model {table} cannot be read: {exc}")
            continue
        if actual != rows:
            missing = len(rows - actual)
            extra = len(actual - rows)
            problems.append(
                f"read model {table} differs from a rebuild: {missing} rows missing or changed, {extra} rows extra"
            )
    return problems


def rebuild(
    db_path: str, progress: Progress | None = None, registry: Registry | None = None
) -> int:
    """Drop the read models and write them again from the log; answer the position reached.
    Under the writer lease: `LeaseHeld` while a writer runs on the database.
    `progress(position, last)` is told how far the replay has got."""
    registry = default_registry() if registry is None else registry
    projection = Projection(registry.tables)
    store = open_store(db_path, tables=projection.tables, lease=True)
    try:
        return rebuild_read_models(
            store, progress, registry=registry, projection=projection
        ).position
    finally:
        store.close()
