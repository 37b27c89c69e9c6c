"""State snapshots for start-up (engine/runtime/startup_cache.py): a snapshot and the tail of
the log give exactly the state a full replay gives, and an engine started from one
behaves exactly as one started from the whole log."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
from collections import deque
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from sortedcontainers import SortedDict

from engine.kernel.compact_records import Records
from engine.kernel.state import State
from engine.read.readmodels import all_rows
from engine.runtime import startup_cache
from engine.runtime.writer import replay
from engine.store import SqliteEventStore
from engine.tools.time_travel import log_hash
from engine.tools.verify import verify
from tests.conftest import Sandbox, make_settings
from tests.trading_helpers import limit, placed, set_price
from tests.transfer_helpers import quote, withdraw

WIRE = {
    "account_number": "12345678",
    "fiat_account_owner_address": {"country": "US", "city": "Austin"},
    "routing_details": {
        "routing_number_type": "ABA",
        "routing_number": "021000021",
        "bank_name": "Example Bank",
        "bank_address": {"country": "US"},
    },
}


def canon(obj: Any, stack: frozenset[int] = frozenset()) -> Any:
    """A plain, comparable form of any part of the state: every field of every object,
    slotted or not, containers in their order (dicts as sorted items)."""
    if obj is None or isinstance(obj, bool | int | float | str | bytes):
        return obj
    if isinstance(obj, Decimal):
        return ("Decimal", str(obj))
    if isinstance(obj, datetime):
        return ("datetime", obj.isoformat())
    if id(obj) in stack:
        raise AssertionError(f"a cycle through {type(obj).__name__}")
    inner = stack | {id(obj)}
    if isinstance(obj, Records):  # settled entries are stored as JSON, read as dicts
        return canon({key: obj[key] for key in obj}, stack)
    if isinstance(obj, SortedDict):
        return ("SortedDict", [(canon(k, inner), canon(v, inner)) for k, v in obj.items()])
    if isinstance(obj, dict):
        items = [(canon(k, inner), canon(v, inner)) for k, v in obj.items()]
        return ("dict", sorted(items, key=repr))
    if isinstance(obj, list | tuple | deque):
        return (type(obj).__name__, [canon(v, inner) for v in obj])
    if isinstance(obj, set | frozenset):
        return ("set", sorted((canon(v, inner) for v in obj), key=repr))
    if dataclasses.is_dataclass(obj):
        fields = {f.name: canon(getattr(obj, f.name), inner) for f in dataclasses.fields(obj)}
        return (type(obj).__name__, fields)
    slots = [s for cls in type(obj).__mro__ for s in getattr(cls, "__slots__", ())]
    if slots or hasattr(obj, "__dict__"):
        names = sorted(set(slots) | set(getattr(obj, "__dict__", {})))
        return (
            type(obj).__name__,
            {n: canon(getattr(obj, n), inner) for n in names if hasattr(obj, n)},
        )
    raise AssertionError(f"cannot compare a {type(obj).__name__}")


def assert_same(a: tuple[State, dict[str, int]], b: tuple[State, dict[str, int]]) -> None:
    """Field by field, caches included; then the read-model rows (which fill caches).
    Fields out of the state's value (`State.caches`, what its appliers last remembered
    for speed) are left out."""
    (sa, va), (sb, vb) = a, b
    assert va == vb
    for f in dataclasses.fields(State):
        if not f.compare:
            continue
        assert canon(getattr(sa, f.name)) == canon(getattr(sb, f.name)), f"State.{f.name} differs"
    rows_a = sorted((t, sorted(r.items())) for t, r in all_rows(sa))
    rows_b = sorted((t, sorted(r.items())) for t, r in all_rows(sb))
    assert rows_a == rows_b


def busy(sb: Sandbox) -> None:
    """Everything that stays open across a snapshot: resting and GTT orders, a delayed
    order, stops, fee quotes, a pending withdrawal, a pending fiat deposit, a sandbox
    snapshot, timers of every kind."""
    sb.deposit("USD", "1000000")
    sb.deposit("BTC", "10")
    sb.deposit("USDC", "500")
    set_price(sb, "42000")
    placed(sb, **limit("BUY", "41000", "0.5"))
    placed(sb, **limit("SELL", "43000", "0.25"))
    placed(
        sb,
        **limit("BUY", "41500", "0.1", time_in_force="GTT"),
        expiration_date="1704074400000",
    )
    placed(sb, side="SELL", type="STOP_MARKET", stop_price="40000", base_amount="0.1")
    placed(sb, side="BUY", type="MARKET", quote_amount="100.00")
    quote(sb)
    r = withdraw(sb, asset="USDC", network="SOLANA", amount="10")
    assert r.status_code == 200, r.text
    memo = sb.post(
        "/v2/transfer/fiat-deposit-instructions", {"profile_id": "default", "fiat_network": "WIRE"}
    ).json()["memo_id"]
    r = sb.post(
        "/v2/sandbox/fiat-deposits",
        {
            "amount": "150.33",
            "asset": "USD",
            "memo_id": memo,
            "fiat_network_instructions": {"wire": WIRE},
        },
    )
    assert r.status_code == 200, r.text
    assert sb.post("/v2/sandbox/snapshots", {"name": "mid"}).status_code == 200
    sb.advance(1)


def more(sb: Sandbox) -> None:
    """What happens after: timers fire, orders trade and expire, a restore."""
    sb.advance(30)
    placed(sb, **limit("SELL", "41000", "0.2"))
    r = withdraw(sb, asset="USDC", network="SOLANA", amount="5")
    assert r.status_code == 200, r.text
    assert sb.post("/v2/sandbox/snapshots/mid/restore").status_code == 200
    set_price(sb, "39000")
    sb.advance(7200)
    placed(sb, **limit("BUY", "38000", "0.3"))


def _events(db: Path) -> list[Any]:
    store = SqliteEventStore(db)
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
    full = replay(_events(db))
    assert full[0].ext["trading"].orders and len(full[0].timers) > 0
    for cut in range(len(events) + 1):
        full = replay(_events(db))  # read-model rows fill caches: a fresh one each time
        head = replay(e for e in _events(db) if e.position <= cut)
        # Through the bytes, as start-up reads them: pickle keeps an order that sits in
        # `orders` and in its book level one object.
        state, versions = startup_cache.decode(startup_cache.encode(*head))
        tail = [e for e in _events(db) if e.position > cut]
        assert_same(replay(tail, state=state, versions=versions), full)


def _reopen(db: Path, **settings: Any) -> Sandbox:
    return Sandbox(db, make_settings(**settings))


def test_the_writer_snapshots_in_the_background_and_start_up_replays_only_the_tail(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    sb = sandbox_factory("live.db", snapshot_every_events=10)
    busy(sb)  # open orders, a pending withdrawal and deposit, timers: then a snapshot
    sb.engine.wait_for_snapshot(30)
    sb.deposit("BTC", "1")  # the writer stores the snapshot handed to it
    sb.engine.wait_for_snapshot(30)
    sb.close()
    store = SqliteEventStore(sb.db)
    taken = store.state_snapshots(startup_cache.FORMAT)
    last = store.last_position()
    store.close()
    assert taken and 0 < taken[0][0] <= last
    assert len(taken) <= startup_cache.KEEP

    # Two copies of the database: one starts from the snapshot, one replays everything.
    shutil.copy(sb.db, tmp_path / "full.db")
    snap = _reopen(sb.db, snapshot_every_events=10)
    full = _reopen(tmp_path / "full.db", snapshot_every_events=0)
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
    assert log_hash(sb.db) == log_hash(tmp_path / "full.db")
    assert snap.verify() == [] and full.verify() == []


def test_a_snapshot_that_does_not_fit_the_log_is_ignored(sandbox_factory: Any) -> None:
    sb = sandbox_factory("s.db", snapshot_every_events=0)
    busy(sb)
    db = sb.db
    sb.close()
    store = SqliteEventStore(db)
    position = store.last_position() - 5
    head = replay(store.read(until=position, with_meta=False))
    check = store.event_check(position)
    assert check is not None
    store.save_state_snapshot(position, startup_cache.FORMAT, check, startup_cache.encode(*head))
    assert startup_cache.load(store)[2] == position
    assert_same(startup_cache.load(store)[:2], replay(store.read(with_meta=False)))

    # Another log under the same position (time travel elsewhere, a rewritten file).
    conn = sqlite3.connect(db)
    conn.execute("UPDATE state_snapshots SET event_check = 'other'")
    conn.commit()
    assert startup_cache.load(store)[2] == 0
    # Another version of the code: another format.
    conn.execute("UPDATE state_snapshots SET event_check = ?, format = '0:old'", (check,))
    conn.commit()
    assert startup_cache.load(store)[2] == 0
    # Unreadable bytes cost a full replay, nothing else.
    conn.execute("UPDATE state_snapshots SET format = ?, data = x'00'", (startup_cache.FORMAT,))
    conn.commit()
    conn.close()
    loaded = startup_cache.load(store)
    assert loaded[2] == 0
    assert_same(loaded[:2], replay(store.read(with_meta=False)))
    store.close()


def test_verify_replays_the_whole_log_whatever_the_snapshots(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    sb = sandbox_factory("v.db", snapshot_every_events=5)
    busy(sb)
    sb.engine.wait_for_snapshot(30)
    sb.deposit("BTC", "1")
    sb.close()
    tampered = tmp_path / "tampered.db"
    shutil.copy(sb.db, tampered)
    conn = sqlite3.connect(tampered)
    assert conn.execute("SELECT count(*) FROM state_snapshots").fetchone()[0] >= 1
    # An event taken out of the log, long before the newest snapshot: a start-up would
    # not look there, the audit does.
    conn.execute("DELETE FROM events WHERE position = 3")
    conn.commit()
    conn.close()
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
        assert type(stored) is tuple  # the compact form, not a dict
        retry = withdraw(again, asset="USDC", network="SOLANA", amount="10", ref_id="settled-1")
        assert retry.status_code == 409, retry.text
        assert retry.json()["meta"]["existing"] == settled
    finally:
        again.close()
