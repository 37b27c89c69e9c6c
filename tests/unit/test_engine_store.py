"""The engine on the store it is handed: a memory store (unit tests with no SQLite), an
in-memory SQLite database, and a store whose write kills the writer thread."""

from __future__ import annotations

import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sandex.engine import Engine, open_engine
from sandex.engine.kernel.commands import Actor, CreateCustomer, SandboxDeposit
from sandex.engine.kernel.errors import Unavailable
from sandex.engine.runtime import startup_cache
from sandex.engine.runtime.composition import TABLES, build_engine
from sandex.engine.runtime.writer import WriterDied
from sandex.engine.store import MemoryEventStore
from sandex.engine.tools.verify import store_problems
from tests.conftest import make_settings
from tests.support.engine_helpers import DyingStore, Escaped

# How long a test waits for the writer's answer before calling it hung: a guard, not a
# timing (a machine loaded by other work took more than 10 s to answer here).
HUNG = 60


def _customer(engine: Engine, name: str = "me") -> tuple[Actor, str]:
    made = engine.execute(CreateCustomer(client_id=name, client_secret="pw", bootstrap=True))
    return Actor(made["customer_id"], name), made["profile_id"]


def _deposit(actor: Actor, amount: str = "1") -> SandboxDeposit:
    return SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount=amount)


def test_an_engine_runs_on_a_memory_store_and_its_read_models_match_a_rebuild() -> None:
    store = MemoryEventStore(tables=TABLES)
    with build_engine(store, make_settings()) as engine:
        actor, profile = _customer(engine)
        for amount in ("1", "0.5", "0.25"):
            engine.execute(_deposit(actor, amount))
        position = engine.state.position
    assert engine.state.ledger.balance(f"{profile}:available", "BTC") == Decimal("1.75")
    assert store.last_position() == store.checkpoint() == position
    assert store_problems(store) == []
    again = build_engine(MemoryEventStore(tables=TABLES), make_settings())  # run inline, no thread
    again.run_inline(CreateCustomer(client_id="x", client_secret="pw", bootstrap=True))
    assert again.state.position > 0


def test_the_state_replayed_from_a_memory_store_is_the_live_one() -> None:
    store = MemoryEventStore(tables=TABLES)
    with build_engine(store, make_settings()) as engine:
        actor, profile = _customer(engine)
        engine.execute(_deposit(actor, "2"))
        engine.execute(_deposit(actor, "0.1"))
    state, _, _ = startup_cache.load(store, use_snapshots=False, registry=engine.registry)
    assert state.position == engine.state.position
    assert state.ledger.balance(f"{profile}:available", "BTC") == Decimal("2.1")


def test_an_engine_on_an_in_memory_sqlite_database_starts_and_writes() -> None:
    """It failed at load: the start-up scan asked `PRAGMA mmap_size`, which answers no
    row for an in-memory database."""
    with open_engine(":memory:", make_settings()) as engine:
        actor, _ = _customer(engine)
        engine.execute(_deposit(actor))
        assert engine.store.last_position() == engine.state.position > 0


def test_an_engine_given_a_path_instead_of_a_store_says_what_opens_one() -> None:
    with pytest.raises(TypeError, match=r"open_engine\(':memory:'\)"):
        build_engine(":memory:", make_settings())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"open_engine\(':memory:'\)"):
        Engine(":memory:")  # type: ignore[arg-type]


def test_when_the_writer_thread_dies_every_caller_is_told_at_once() -> None:
    """Commands queued to a dead writer waited for ever (`submit` without a timeout)."""
    store = DyingStore()
    engine = build_engine(store, make_settings()).start()
    try:
        actor, _ = _customer(engine)
        store.die = True
        started = time.monotonic()
        with pytest.raises(WriterDied, match="stopped on an error"):
            engine.submit(_deposit(actor)).result(timeout=HUNG)
        with pytest.raises(WriterDied):
            engine.submit(_deposit(actor)).result(timeout=HUNG)
        batch = engine.submit_many([_deposit(actor), _deposit(actor)])
        with pytest.raises(WriterDied):
            batch.answer(0, timeout=HUNG)
        with pytest.raises(WriterDied):
            engine.execute(_deposit(actor), timeout=HUNG)
        assert time.monotonic() - started < 5
        assert engine.health()["writer_alive"] is False
    finally:
        engine.stop()


def test_a_commit_that_fails_in_an_unexpected_way_is_answered_and_the_engine_goes_on() -> None:
    """The committer answers a group whose `finish` raised anything at all: its callers
    no longer wait for ever, and the next commands are decided on the reloaded state."""
    store = MemoryEventStore(tables=TABLES)
    engine = build_engine(store, make_settings()).start()
    real_finish = store.finish
    calls: list[Any] = []

    def once_broken() -> None:
        if not calls:
            calls.append(1)
            store._pending = None
            raise Escaped("the disk went away oddly")
        real_finish()

    try:
        actor, profile = _customer(engine)
        store.finish = once_broken  # type: ignore[method-assign]
        with pytest.raises(Unavailable, match="unavailable"):
            engine.execute(_deposit(actor), timeout=HUNG)
        engine.execute(_deposit(actor, "3"), timeout=HUNG)
        assert engine.state.ledger.balance(f"{profile}:available", "BTC") == Decimal("3")
    finally:
        engine.stop()


def test_open_engine_hands_the_engine_a_sqlite_store_on_the_path(tmp_path: Path) -> None:
    db = tmp_path / "o.db"
    with open_engine(db, make_settings()) as engine:
        assert engine.store.path == engine.db_path == str(db)
        _customer(engine)
    assert db.exists()


def test_the_snapshot_format_hashes_every_engine_source_not_only_the_runtimes() -> None:
    """A snapshot pickles domain and kernel objects: after the move into folders the
    format hashed engine/runtime alone, so a changed domain class met an old pickle."""
    names = {p.relative_to(startup_cache._ROOT).as_posix() for p in startup_cache._sources()}
    assert {"domain/ledger.py", "kernel/state.py", "runtime/writer.py"} <= names
