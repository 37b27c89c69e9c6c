"""The start-up replay (engine.replay_log: raw rows, replayers, deposits kept as their
event's text) gives exactly the state of the generic replay and of the live writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from sandex.engine.kernel.ledger import Ledger, LedgerViolation
from sandex.engine.kernel.state import State
from sandex.engine.runtime import startup_cache
from sandex.engine.runtime.composition import default_projection, default_registry
from sandex.engine.runtime.replay import Cancelled, replay, replay_log
from sandex.engine.store import EventStore, SqliteEventStore, open_reader
from tests.support.state_helpers import assert_same, busy, canon, more
from tests.support.transfer_helpers import withdraw


def mixed(sb: Any) -> None:
    """Orders, trades, stops, fee quotes, withdrawals (pending, completed, failed), fiat
    deposits, internal transfers with a ref_id, a snapshot restore, and deposits."""
    busy(sb)
    desk = sb.post("/v2/profiles", {"nickname": "desk"}).json()["id"]
    body = {"from_profile_id": "default", "to_profile_id": desk, "asset": "BTC"}
    for n, amount in enumerate(("0.01", "0.25", "1.5")):
        r = sb.post("/v2/transfer/internal", {**body, "amount": amount, "ref_id": f"r{n}"})
        assert r.status_code == 200, r.text
    more(sb)
    r = withdraw(sb, asset="USDC", network="SOLANA", amount="3", memo="sandbox:fail")
    assert r.status_code == 200, r.text
    sb.advance(60)
    for amount in ("0.001", "2", "0.000001", "13.37"):
        sb.deposit("BTC", amount)
        sb.deposit("USDC", amount, profile=desk)


REGISTRY = default_registry()
PROJECTION = default_projection()

LOGGED = (
    "ledger",
    "customers",
    "clients",
    "profiles",
    "transfers",
    "transfer_refs",
    "fiat_instructions",
    "memos",
    "pending_fiat",
    "last_time",
    "position",
)


def rows(state: State) -> list[Any]:
    return sorted((t, sorted(r.items())) for t, r in PROJECTION.all_rows(state))


def _store(db: Path | str) -> EventStore:
    return open_reader(db)


def _mixed_log(sandbox_factory: Any) -> Path | str:
    """A closed database holding the `mixed` session's log."""
    sb = sandbox_factory(snapshot_every_events=0)
    mixed(sb)
    sb.close()
    return sb.db  # type: ignore[no-any-return]


def _generic(db: Path | str) -> tuple[State, dict[str, int]]:
    store = _store(db)
    try:
        return replay(store.read(with_meta=False), registry=REGISTRY)
    finally:
        store.close()


def _fast(db: Path | str, **kw: Any) -> tuple[State, dict[str, int]]:
    store = _store(db)
    try:
        return replay_log(store, registry=REGISTRY, **kw)
    finally:
        store.close()


def test_the_start_up_replay_gives_the_live_state_and_the_generic_replays(
    sandbox_factory: Any,
) -> None:
    sb = sandbox_factory(snapshot_every_events=0)
    mixed(sb)
    live = (sb.engine.state, dict(sb.engine._versions))
    db = sb.db
    sb.close()
    fast = _fast(db)
    assert any(type(v) is tuple for v in dict.values(fast[0].transfers))  # deposits encoded
    assert_same(fast, _generic(db))
    # The live writer also keeps what no event records (timers it fired, the market
    # watch a decision armed: engine/state_snapshots.py): all the log determines agrees.
    assert fast[1] == live[1]
    for name in LOGGED:
        assert canon(getattr(fast[0], name)) == canon(getattr(live[0], name)), name
    assert rows(fast[0]) == rows(live[0])


def test_a_snapshot_of_the_start_up_replay_and_its_tail_give_the_full_replay(
    sandbox_factory: Any,
) -> None:
    db = _mixed_log(sandbox_factory)
    store = _store(db)  # where the versions a snapshot leaves out are read
    try:
        for cut in range(0, store.last_position() + 1, 7):
            head = _fast(db, until=cut)
            assert head[0].position == cut
            state, versions = startup_cache.decode(startup_cache.encode(*head), store)
            tail = _fast(db, state=state, versions=versions, after=cut)
            assert_same(tail, _generic(db))
    finally:
        store.close()


def test_an_encoded_deposit_reads_as_the_live_record_field_for_field_in_order(
    sandbox_factory: Any,
) -> None:
    sb = sandbox_factory(snapshot_every_events=0)
    sb.deposit("BTC", "0.5")
    state = sb.engine.state
    tid = next(iter(state.transfers))
    written = list(state.transfers[tid].items())
    db = sb.db
    sb.close()
    replayed = _fast(db)[0].transfers
    assert type(dict.__getitem__(replayed, tid)) is tuple
    assert list(replayed[tid].items()) == written
    assert list(replayed.get(tid).items()) == written
    assert canon(list(replayed.values())) == canon([dict(written)])
    replayed[tid]["status"] = "FAILED"  # a read is a fresh dict: the entry stays as it was
    assert replayed[tid]["status"] == "COMPLETED"
    # A state snapshot keeps the compact tuples, not the event's text.
    assert replayed.settle(lambda record: False) == 1
    assert len(dict.__getitem__(replayed, tid)) == 2
    assert list(replayed[tid].items()) == written


def test_the_start_up_replay_stops_when_cancelled(sandbox_factory: Any) -> None:
    sb = sandbox_factory(snapshot_every_events=0)
    sb.deposit("BTC", "1")
    db = sb.db
    sb.close()
    with pytest.raises(Cancelled):
        _fast(db, cancelled=lambda: True)


def test_a_replay_s_run_of_postings_leaves_the_balances_one_by_one_posting_leaves() -> None:
    a, b, w = "p1:available", "p2:available", "world"
    raws = [
        [[w, a, "BTC", "1"]],
        [[w, a, "BTC", "1"]],
        [[w, a, "BTC", "0.10"]],
        [[a, b, "BTC", "0.5"]],
        [[a, b, "BTC", "0.5"]],
        [[w, w, "USD", "3"]],
        [[w, a, "USD", "5"], [a, "fees", "USD", "0.25"]],
        [[w, b, "ETH", "2"]],
        [[w, a, "BTC", "0.00000001"]],
    ]
    one_by_one, in_runs = Ledger(), Ledger()
    for raw in raws:
        one_by_one.post_encoded(raw, {})
    in_runs.apply_encoded(raws, {})
    assert list(in_runs.balances.items()) == list(one_by_one.balances.items())
    assert canon(in_runs.balances) == canon(one_by_one.balances)
    with pytest.raises(LedgerViolation, match="p2:available would go negative"):
        in_runs.apply_encoded([[[b, a, "BTC", "0.6"]], [[b, a, "BTC", "0.6"]]], {})


@pytest.mark.sqlite_only("SQLite's mmap_size PRAGMA")
def test_the_scan_leaves_the_connection_unmapped(sandbox_factory: Any) -> None:
    sb = sandbox_factory(snapshot_every_events=0)
    sb.deposit("BTC", "1")
    db = sb.db
    sb.close()
    store = SqliteEventStore(db)
    try:
        before = store.conn.execute("PRAGMA mmap_size").fetchone()
        assert sum(len(rows) for rows in store.scan()) == store.last_position()
        assert store.conn.execute("PRAGMA mmap_size").fetchone() == before
    finally:
        store.close()


def test_the_scan_gives_brief_rows_for_the_first_events_of_the_types_asked(
    sandbox_factory: Any,
) -> None:
    db = _mixed_log(sandbox_factory)
    store = _store(db)
    try:
        events = list(store.read(with_meta=False))
        first = ("TransferCompleted", "TransferCreated")
        scanned = [row for rows in store.scan(first=first) for row in rows]
        assert [row[:3] for row in scanned] == [
            (e.position, e.stream, orjson.dumps(e.data).decode()) for e in events
        ]
        briefs = 0
        for event, (*_, rest) in zip(events, scanned, strict=True):
            if event.type in first and event.version == 1 and event.schema == 1:
                assert rest == first.index(event.type)
                briefs += 1
            else:
                assert orjson.loads(rest) == [
                    event.version,
                    event.type,
                    event.schema,
                    event.occurred_at,
                ]
        assert briefs > 0
        assert store.occurred_at(events[-1].position) == events[-1].occurred_at
        assert store.occurred_at(events[-1].position + 1) is None
    finally:
        store.close()


def test_a_replay_that_ends_on_a_brief_row_reads_its_time(sandbox_factory: Any) -> None:
    sb = sandbox_factory(snapshot_every_events=0)
    sb.deposit("BTC", "1")
    sb.advance(5)
    sb.deposit("BTC", "2")
    db = sb.db
    live = sb.engine.state.last_time
    sb.close()
    store = _store(db)
    *_, (*_, rest) = [row for rows in store.scan(first=("TransferCreated",)) for row in rows]
    store.close()
    assert rest == 0
    state, _ = _fast(db)
    assert state.last_time == live
    assert state.last_time == _generic(db)[0].last_time
