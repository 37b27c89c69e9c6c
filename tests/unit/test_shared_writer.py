"""Engines on one shared writer (engine/runtime/shared_writer.py): one writer thread
decides every engine's groups in turn, and each engine keeps what its own thread gave
it: durable answers, its own log, per-engine idle release, stop and died-writer
refusal."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from sandex.engine import Engine, open_engine
from sandex.engine.kernel.commands import Actor, CreateCustomer, SandboxDeposit
from sandex.engine.kernel.errors import Unavailable
from sandex.engine.runtime import startup_cache, writer
from sandex.engine.runtime.composition import TABLES, build_engine
from sandex.engine.runtime.shared_writer import SharedWriter
from sandex.engine.runtime.writer import EngineStopped, WriterDied
from sandex.engine.store import MemoryEventStore
from sandex.engine.tools.verify import store_problems
from tests.conftest import make_settings
from tests.support.engine_helpers import DyingStore, release_watched

# How long a test waits for an answer before calling it hung: a guard, not a timing.
HUNG = 60


def _writers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "sandex-writer"}


def _customer(engine: Engine) -> tuple[Actor, str]:
    made = engine.execute(CreateCustomer(client_id="me", client_secret="pw", bootstrap=True))
    return Actor(made["customer_id"], "me"), made["profile_id"]


def _deposit(actor: Actor, amount: str = "1") -> SandboxDeposit:
    return SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount=amount)


@pytest.fixture
def shared() -> Iterator[SharedWriter]:
    made = SharedWriter()
    yield made
    made.close()


def test_engines_on_a_shared_writer_run_on_its_one_thread_each_with_its_own_log(
    tmp_path: Path, shared: SharedWriter
) -> None:
    """Driven at once from threads of their own, four engines: one writer thread for
    all, every answer durable in its own engine's log, and each log verifies."""
    before = _writers()
    engines = [open_engine(tmp_path / f"e{i}.db", make_settings()).start(shared) for i in range(4)]
    try:
        assert len(_writers() - before) == 1
        assert len({engine._thread for engine in engines}) == 1
        actors = [_customer(engine) for engine in engines]
        failures: list[BaseException] = []

        def drive(engine: Engine, actor: Actor, amount: str) -> None:
            try:
                for _ in range(20):
                    batch = engine.submit_many([_deposit(actor, amount)] * 3)
                    batch.answer(2, timeout=HUNG)
                    # answered only once durable: the log holds it already
                    assert engine.store.last_position() >= batch.positions[2][1]
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        threads = [
            threading.Thread(target=drive, args=(engine, actor, str(i + 1)))
            for i, (engine, (actor, _)) in enumerate(zip(engines, actors, strict=True))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(HUNG)
        assert not failures, failures
        for i, (engine, (_, profile)) in enumerate(zip(engines, actors, strict=True)):
            balance = engine.state.ledger.balance(f"{profile}:available", "BTC")
            assert balance == Decimal(60 * (i + 1))
            assert engine.store.last_position() == engine.state.position
    finally:
        for engine in engines:
            engine.stop()
    for engine in engines:
        with open_engine(engine.db_path, make_settings()) as again:
            assert store_problems(again.store) == []


def test_a_writer_that_dies_on_one_engine_ends_it_for_that_engine_alone(
    shared: SharedWriter,
) -> None:
    store = DyingStore()
    dying = build_engine(store, make_settings()).start(shared)
    other = build_engine(MemoryEventStore(tables=TABLES), make_settings()).start(shared)
    try:
        actor, _ = _customer(dying)
        other_actor, profile = _customer(other)
        store.die = True
        with pytest.raises(WriterDied, match="stopped on an error"):
            dying.submit(_deposit(actor)).result(timeout=HUNG)
        with pytest.raises(WriterDied):
            dying.execute(_deposit(actor), timeout=HUNG)
        assert dying.health()["writer_alive"] is False
        other.execute(_deposit(other_actor, "2"), timeout=HUNG)
        assert other.state.ledger.balance(f"{profile}:available", "BTC") == Decimal("2")
        assert other.health()["writer_alive"] is True
    finally:
        dying.stop()
        other.stop()


def test_a_failed_commit_answers_that_engines_group_and_no_other(shared: SharedWriter) -> None:
    failing = MemoryEventStore(tables=TABLES)
    engine = build_engine(failing, make_settings()).start(shared)
    other = build_engine(MemoryEventStore(tables=TABLES), make_settings()).start(shared)
    real_finish = failing.finish
    calls: list[int] = []

    def once_broken() -> None:
        if not calls:
            calls.append(1)
            failing._pending = None
            raise OSError("disk full")
        real_finish()

    try:
        actor, profile = _customer(engine)
        other_actor, other_profile = _customer(other)
        failing.finish = once_broken  # type: ignore[method-assign]
        with pytest.raises(Unavailable, match="unavailable"):
            engine.execute(_deposit(actor), timeout=HUNG)
        other.execute(_deposit(other_actor, "5"), timeout=HUNG)
        engine.execute(_deposit(actor, "3"), timeout=HUNG)
        assert engine.state.ledger.balance(f"{profile}:available", "BTC") == Decimal("3")
        assert other.state.ledger.balance(f"{other_profile}:available", "BTC") == Decimal("5")
    finally:
        engine.stop()
        other.stop()


def test_a_stopped_engine_refuses_and_the_shared_writer_goes_on(shared: SharedWriter) -> None:
    first = build_engine(MemoryEventStore(tables=TABLES), make_settings()).start(shared)
    second = build_engine(MemoryEventStore(tables=TABLES), make_settings()).start(shared)
    try:
        actor, _ = _customer(first)
        second_actor, profile = _customer(second)
        first.stop()
        with pytest.raises(EngineStopped):
            first.submit(_deposit(actor)).result(timeout=HUNG)
        second.execute(_deposit(second_actor, "4"), timeout=HUNG)
        assert second.state.ledger.balance(f"{profile}:available", "BTC") == Decimal("4")
    finally:
        first.stop()
        second.stop()


def test_an_idle_engine_gives_back_its_memory_while_another_is_busy(
    tmp_path: Path, shared: SharedWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "_IDLE_SECONDS", 0.05)
    idle = open_engine(tmp_path / "idle.db", make_settings())
    busy = open_engine(tmp_path / "busy.db", make_settings())
    released = release_watched(idle, monkeypatch)
    idle.start(shared)
    busy.start(shared)
    try:
        _customer(idle)
        actor, _ = _customer(busy)
        while not released.is_set():  # the busy one keeps the writer turning meanwhile
            busy.execute(_deposit(actor), timeout=HUNG)
        assert idle._strategy.committer._thread is None, "the idle engine kept its committer"  # type: ignore[attr-defined]
        idle_actor = Actor(next(iter(idle.state.customers)), "me")
        idle.execute(_deposit(idle_actor), timeout=HUNG)  # the cache fills again
        assert idle.store.last_position() == idle.state.position
    finally:
        idle.stop()
        busy.stop()


def test_an_engine_on_a_shared_writer_stores_its_state_snapshots(
    tmp_path: Path, shared: SharedWriter
) -> None:
    """The snapshot thread hands a built snapshot to the engine's queue: the shared
    writer must be told, or the snapshot waits for the engine's next command."""
    engine = open_engine(tmp_path / "s.db", make_settings(snapshot_every_events=5)).start(shared)
    try:
        actor, _ = _customer(engine)
        for _ in range(6):
            engine.execute(_deposit(actor), timeout=HUNG)
        engine.wait_for_snapshot(HUNG)
        for _ in range(HUNG * 20):  # until the writer stored it, with nothing else queued
            if engine.store.state_snapshots(startup_cache.FORMAT):
                break
            time.sleep(0.05)
        assert engine.store.state_snapshots(startup_cache.FORMAT)
    finally:
        engine.stop()


def test_an_engine_queued_again_in_its_turn_is_not_another_engine_waiting(
    shared: SharedWriter,
) -> None:
    """A busy engine is handed more while in its turn: counted as another engine
    waiting, its group was not waited into its COMMIT, whose start then waited for
    the GIL behind the writer's next group: one world alone lost its pace."""
    engine = build_engine(MemoryEventStore(tables=TABLES), make_settings())
    other = build_engine(MemoryEventStore(tables=TABLES), make_settings())
    assert not shared.others_ready(engine)
    shared.wake(engine)  # queued, not started: nobody takes it
    assert not shared.others_ready(engine)
    assert shared.others_ready(other)
    shared.wake(other)
    assert shared.others_ready(engine)


def test_a_closed_shared_writer_starts_no_thread_for_an_engine(tmp_path: Path) -> None:
    """An engine started on a writer already closed (a world loaded as the server
    stops) is refused, and no writer thread is left running with nobody to end it."""
    shared = SharedWriter()
    shared.close()
    before = _writers()
    engine = open_engine(tmp_path / "late.db", make_settings())
    try:
        with pytest.raises(EngineStopped):
            engine.start(shared)
        assert _writers() - before == set()
        assert shared.thread is None
    finally:
        engine.stop()
