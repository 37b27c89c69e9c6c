"""State snapshots for start-up (engine/runtime/startup_cache.py): a snapshot and the tail of
the log give exactly the state a full replay gives, and an engine started from one
behaves exactly as one started from the whole log."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from sandex.engine import open_engine
from sandex.engine.domain.registrations import REGISTRATIONS
from sandex.engine.domain.transfers.transfer_records import SETTLED
from sandex.engine.kernel.commands import Command
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.registry import Registration, build_registry
from sandex.engine.kernel.state import Ctx, State
from sandex.engine.runtime import startup_cache
from sandex.engine.runtime.composition import default_registry
from sandex.engine.runtime.replay import replay
from sandex.engine.store import open_reader, open_store
from sandex.engine.tools.time_travel import log_hash
from sandex.engine.tools.verify import verify
from tests.conftest import Sandbox, make_settings
from tests.support.database import copy_database, execute, query
from tests.support.state_helpers import assert_same, busy, more
from tests.support.transfer_helpers import withdraw

REGISTRY = default_registry()


def _events(db: Path | str) -> list[Any]:
    store = open_reader(db)
    try:
        return list(store.read(with_meta=False))
    finally:
        store.close()


def test_a_snapshot_at_any_position_and_the_tail_give_the_full_replay(sandbox_factory: Any) -> None:
    sb = sandbox_factory(snapshot_every_events=0)
    busy(sb)
    more(sb)
    db = sb.db
    sb.close()
    events = _events(db)
    assert len(events) > 40
    full = replay(_events(db), registry=REGISTRY)
    assert full[0].ext["trading"].orders and len(full[0].timers) > 0
    store = open_reader(db)  # where the versions a snapshot leaves out are read
    try:
        for cut in range(len(events) + 1):
            full = replay(
                _events(db), registry=REGISTRY
            )  # read-model rows fill caches: a fresh one each time
            head = replay((e for e in _events(db) if e.position <= cut), registry=REGISTRY)
            # Through the bytes, as start-up reads them: pickle keeps an order that sits in
            # `orders` and in its book level one object.
            state, versions = startup_cache.decode(startup_cache.encode(*head), store)
            tail = [e for e in _events(db) if e.position > cut]
            assert_same(replay(tail, state=state, versions=versions, registry=REGISTRY), full)
    finally:
        store.close()


def _reopen(db: Path | str, **settings: Any) -> Sandbox:
    return Sandbox(db, make_settings(**settings))


def test_the_writer_snapshots_in_the_background_and_start_up_replays_only_the_tail(
    sandbox_factory: Any, database: Any
) -> None:
    sb = sandbox_factory("live.db", snapshot_every_events=10)
    busy(sb)  # open orders, a pending withdrawal and deposit, timers: then a snapshot
    sb.engine.wait_for_snapshot(30)
    sb.deposit("BTC", "1")  # the writer stores the snapshot handed to it
    sb.engine.wait_for_snapshot(30)
    sb.close()
    store = open_reader(sb.db)
    taken = store.state_snapshots(startup_cache.FORMAT)
    last = store.last_position()
    store.close()
    assert taken and 0 < taken[0][0] <= last
    assert len(taken) <= startup_cache.KEEP

    # Two copies of the database: one starts from the snapshot, one replays everything.
    copy_database(sb.db, database("full.db"))
    snap = _reopen(sb.db, snapshot_every_events=10)
    full = _reopen(database("full.db"), snapshot_every_events=0)
    try:
        assert snap.engine.loaded_from == taken[0][0]
        assert full.engine.loaded_from == 0
        assert_same(
            (snap.engine.state, snap.engine._versions), (full.engine.state, full.engine._versions)
        )
        # ... and from there they decide alike: the same events, byte for byte.
        more(snap)
        more(full)
    finally:
        snap.close()
        full.close()
    assert log_hash(sb.db) == log_hash(database("full.db"))
    assert snap.verify() == [] and full.verify() == []


def test_a_snapshot_that_does_not_fit_the_log_is_ignored(sandbox_factory: Any) -> None:
    sb = sandbox_factory("s.db", snapshot_every_events=0)
    busy(sb)
    db = sb.db
    sb.close()
    store = open_store(db)
    position = store.last_position() - 5
    head = replay(store.read(until=position, with_meta=False), registry=REGISTRY)
    check = store.event_check(position)
    assert check is not None
    store.save_state_snapshot(position, startup_cache.FORMAT, check, startup_cache.encode(*head))
    assert startup_cache.load(store, registry=REGISTRY)[2] == position
    assert_same(
        startup_cache.load(store, registry=REGISTRY)[:2],
        replay(store.read(with_meta=False), registry=REGISTRY),
    )

    # Another log under the same position (time travel elsewhere, a rewritten file).
    execute(db, "UPDATE state_snapshots SET event_check = 'other'")
    assert startup_cache.load(store, registry=REGISTRY)[2] == 0
    # Another version of the code: another format.
    execute(db, ("UPDATE state_snapshots SET event_check = ?, format = '0:old'", (check,)))
    assert startup_cache.load(store, registry=REGISTRY)[2] == 0
    # Unreadable bytes cost a full replay, nothing else.
    unreadable = "UPDATE state_snapshots SET format = ?, data = ?"
    execute(db, (unreadable, (startup_cache.FORMAT, b"\x00")))
    loaded = startup_cache.load(store, registry=REGISTRY)
    assert loaded[2] == 0
    assert_same(loaded[:2], replay(store.read(with_meta=False), registry=REGISTRY))
    store.close()


def test_verify_replays_the_whole_log_whatever_the_snapshots(
    sandbox_factory: Any, database: Any
) -> None:
    sb = sandbox_factory("v.db", snapshot_every_events=5)
    busy(sb)
    sb.engine.wait_for_snapshot(30)
    sb.deposit("BTC", "1")
    sb.close()
    tampered = database("tampered.db")
    copy_database(sb.db, tampered)
    assert query(tampered, "SELECT count(*) FROM state_snapshots")[0][0] >= 1
    # An event taken out of the log, long before the newest snapshot: a start-up would
    # not look there, the audit does.
    execute(tampered, "DELETE FROM events WHERE position = 3")
    problems = verify(str(tampered))
    assert problems and "gap" in problems[0]


def test_a_settled_transfer_loaded_from_a_snapshot_reads_as_it_was_written(
    sandbox_factory: Any,
) -> None:
    """Settled transfers are stored compactly in a snapshot (engine/kernel/compact_records.py): an
    idempotent retry after such a start-up still answers with the whole transfer."""
    sb = sandbox_factory("settled.db", snapshot_every_events=5)
    sb.deposit("USDC", "500")
    r = withdraw(sb, asset="USDC", network="SOLANA", amount="10", ref_id="settled-1")
    assert r.status_code == 200, r.text
    sb.advance(3600)  # confirmed and completed
    settled = sb.get(f"/v2/transfer/transfers/{r.json()['id']}").json()
    assert settled["status"] == "COMPLETED"
    for _ in range(3):
        sb.deposit("BTC", "1")
        sb.engine.wait_for_snapshot(30)
    sb.close()
    again = _reopen(sb.db, snapshot_every_events=5)
    try:
        assert again.engine.loaded_from > 0
        stored = dict.__getitem__(again.engine.state.transfers, settled["id"])
        assert type(stored) is int  # the compact form: a row of the columns, not a dict
        retry = withdraw(again, asset="USDC", network="SOLANA", amount="10", ref_id="settled-1")
        assert retry.status_code == 409, retry.text
        assert retry.json()["meta"]["existing"] == settled
    finally:
        again.close()


def test_snapshots_of_another_build_are_ignored_and_the_start_up_says_so(
    sandbox_factory: Any,
) -> None:
    """A start-up after the engine's sources changed (another release, or a checkout
    edited while a benchmark ran) replays the whole log: it must say why, as bench_postgres
    once measured a full replay with nothing said."""
    sb = sandbox_factory("built.db", snapshot_every_events=5)
    busy(sb)
    sb.engine.wait_for_snapshot(30)
    sb.deposit("BTC", "1")
    sb.close()
    assert query(sb.db, "SELECT count(*) FROM state_snapshots")[0][0] >= 1
    execute(sb.db, "UPDATE state_snapshots SET format = '1:another-build'")
    with capture_logs() as logs:
        again = _reopen(sb.db, snapshot_every_events=100_000)
    try:
        assert again.engine.loaded_from == 0
    finally:
        again.close()
    said = [e for e in logs if "another sandex build" in e["event"]]
    assert said and said[0]["log_level"] == "warning", logs


@dataclass(frozen=True, slots=True)
class _Append(Command):
    """Appends an event to any stream (no command of the domain appends to a settled
    transfer's or a closed order's; a later one might)."""

    stream: str = ""


def _append(ctx: Ctx, cmd: _Append) -> int:
    return ctx.emit("StreamNoted", cmd.stream, {"stream": cmd.stream}).version


def _noted(state: State, event: Event) -> None:
    state.ext.setdefault("noted", []).append(event.data["stream"])


_NOTING = build_registry(
    [*REGISTRATIONS, Registration({_Append: _append}, {"StreamNoted": _noted})]
)


def test_an_event_appended_to_a_settled_stream_after_a_restart_gets_its_next_version(
    sandbox_factory: Any, database: Any
) -> None:
    """A snapshot leaves out the versions of settled transfers' and closed orders'
    streams: the first event appended to one after a restart reads its version from
    the log."""
    sb = sandbox_factory("s.db", snapshot_every_events=0)
    busy(sb)  # deposits, open, filled and cancelled orders, a pending withdrawal
    for memo in (None, "sandbox:fail"):  # created, then completed or failed: version 2+
        r = withdraw(sb, amount="0.001", memo=memo)
        assert r.status_code == 200, r.text
    sb.advance(60)
    state = sb.engine.state
    transfers = {f"transfer-{t['id']}": t["status"] in SETTLED for t in state.transfers.values()}
    orders = {
        f"order-{o.id}": o.closed_at is not None for o in state.ext["trading"].orders.values()
    }
    sb.close()
    db = database("restart.db")  # the log gets events the domain's registry cannot read
    copy_database(sb.db, db)
    store = open_store(db)
    last = store.last_position()
    versions = {stream: store.stream_version(stream) for stream in {**transfers, **orders}}
    left_out = {stream for stream, settled in {**transfers, **orders}.items() if settled}
    assert any(versions[s] > 1 for s in left_out if s.startswith("transfer-"))
    assert any(s.startswith("order-") for s in left_out)
    assert len(left_out) < len(versions)  # open orders and pending transfers: kept
    check = store.event_check(last)
    assert check is not None
    data = startup_cache.encode(*replay(store.read(with_meta=False), registry=REGISTRY))
    store.save_state_snapshot(last, startup_cache.FORMAT, check, data)
    store.close()

    engine = open_engine(db, make_settings(snapshot_every_events=1000), registry=_NOTING)
    engine.start()
    try:
        assert engine.loaded_from == last
        assert set(dict.keys(engine._versions)) & set(versions) == set(versions) - left_out
        for stream, version in versions.items():
            assert engine.execute(_Append(stream=stream)) == version + 1
            assert engine.execute(_Append(stream=stream)) == version + 2
        assert engine.execute(_Append(stream="transfer-new")) == 1  # no event yet
        assert engine.execute(_Append(stream="order-new")) == 1
    finally:
        engine.stop()
    assert verify(str(db), registry=_NOTING) == []
