"""The writer: group commit, answers only after commit, timers, determinism, restart."""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import Future
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engine import Engine
from engine.commands import (
    Actor,
    AdvanceClock,
    CreateCustomer,
    CreateFiatDepositInstructions,
    CreateProfile,
    InitiateFiatDeposit,
    SandboxDeposit,
)
from engine.errors import Conflict, Invalid, Unavailable
from engine.store import StoreUnavailable
from tests.conftest import START, make_settings

WIRE = {"wire": {"account_number": "1"}}


def _boot(engine: Engine) -> Actor:
    made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
    return Actor(made["customer_id"], "c")


def _log(db: Path) -> bytes:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT position, stream, version, type, schema, data, meta, occurred_at FROM events"
            " ORDER BY position"
        ).fetchall()
    finally:
        conn.close()
    return repr(rows).encode()


def test_group_commit_puts_many_queued_commands_in_one_transaction(tmp_path: Path) -> None:
    with Engine(tmp_path / "g.db", make_settings()) as engine:
        actor = _boot(engine)
    engine = Engine(tmp_path / "g.db", make_settings())
    commits: list[int] = []
    real_commit = engine.store.commit

    def counting(events: Any, writes: Any, checkpoint: int) -> None:
        commits.append(len(events))
        real_commit(events, writes, checkpoint)

    engine.store.commit = counting  # type: ignore[method-assign]
    # Queue everything before the writer starts, so that it finds one full queue.
    engine._thread = threading.current_thread()  # submit() only checks that it is set
    futures = [
        engine.submit(SandboxDeposit(actor=actor, profile_id="default", asset="USD", amount="1"))
        for _ in range(50)
    ]
    engine._thread = None
    engine.start()
    results = [f.result(5) for f in futures]
    engine.stop()
    assert len({r["activity_id"] for r in results}) == 50
    assert commits == [50]


def test_a_caller_is_answered_only_after_its_events_are_committed(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "a.db", make_settings()).start()
    actor = _boot(engine)
    gate = threading.Event()
    real_commit = engine.store.commit

    def slow(events: Any, writes: Any, checkpoint: int) -> None:
        gate.wait(5)
        real_commit(events, writes, checkpoint)

    engine.store.commit = slow  # type: ignore[method-assign]
    future = engine.submit(
        SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
    )
    assert not future.done()
    gate.set()
    activity = future.result(5)["activity_id"]
    assert any(e.stream == f"transfer-{activity}" for e in engine.store.read())
    engine.stop()


def test_a_failed_commit_answers_unavailable_and_leaves_no_trace(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "f.db", make_settings()).start()
    actor = _boot(engine)
    before = engine.state.position

    def broken(*_: Any) -> None:
        raise StoreUnavailable("disk full")

    real_commit = engine.store.commit
    engine.store.commit = broken  # type: ignore[method-assign]
    with pytest.raises(Unavailable):
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"))
    assert engine.state.position == before
    assert engine.state.ledger.balances == {}
    engine.store.commit = real_commit  # type: ignore[method-assign]
    engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="2"))
    pid = engine.state.customers[actor.customer_id]["default_profile_id"]
    assert str(engine.state.ledger.balance(f"{pid}:available", "BTC")) == "2"
    engine.stop()


def test_domain_errors_reach_their_caller_only(tmp_path: Path) -> None:
    with Engine(tmp_path / "e.db", make_settings()) as engine:
        actor = _boot(engine)
        good = engine.submit(CreateProfile(actor=actor, nickname="one"))
        bad = engine.submit(CreateProfile(actor=actor, nickname=""))
        assert good.result(5)["nickname"] == "one"
        with pytest.raises(Invalid):
            bad.result(5)


def test_advance_fires_deadlines_in_order_at_their_exact_time(tmp_path: Path) -> None:
    settings = make_settings(fiat_deposit_delay_seconds=2)
    with Engine(tmp_path / "t.db", settings) as engine:
        actor = _boot(engine)
        memo = engine.execute(CreateFiatDepositInstructions(actor=actor, profile_id="default"))[
            "memo_id"
        ]
        engine.execute(
            InitiateFiatDeposit(
                actor=actor, amount="5", asset="USD", memo_id=memo, fiat_network_instructions=WIRE
            )
        )
        engine.execute(AdvanceClock(to=START + timedelta(seconds=1)))
        engine.execute(
            InitiateFiatDeposit(
                actor=actor, amount="7", asset="USD", memo_id=memo, fiat_network_instructions=WIRE
            )
        )
        engine.execute(AdvanceClock(to=START + timedelta(hours=1)))
        credits = [
            (e.occurred_at, e.data["changes"]["status"])
            for e in engine.store.read()
            if e.type == "TransferCompleted"
        ]
        assert credits == [
            ("2024-01-01T00:00:02.000000Z", "COMPLETED"),
            ("2024-01-01T00:00:03.000000Z", "COMPLETED"),
        ]
        clock_events = [e for e in engine.store.read() if e.type == "ClockAdvanced"]
        assert clock_events[-1].occurred_at == "2024-01-01T01:00:00.000000Z"


def test_a_manual_clock_never_moves_backwards_and_a_wall_clock_is_not_moved(tmp_path: Path) -> None:
    with Engine(tmp_path / "m.db", make_settings()) as engine:
        engine.execute(AdvanceClock(to=START + timedelta(seconds=10)))
        with pytest.raises(Invalid, match="backwards"):
            engine.execute(AdvanceClock(to=START))
    with Engine(tmp_path / "w.db", make_settings(clock="wall")) as engine, pytest.raises(Conflict):
        engine.execute(AdvanceClock(to=START))


def _session(db: Path) -> None:
    with Engine(db, make_settings(seed=99)) as engine:
        actor = _boot(engine)
        engine.execute(CreateProfile(actor=actor, nickname="desk"))
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="ETH", amount="2"))
        memo = engine.execute(CreateFiatDepositInstructions(actor=actor, profile_id="default"))[
            "memo_id"
        ]
        engine.execute(
            InitiateFiatDeposit(
                actor=actor,
                amount="9.99",
                asset="USD",
                memo_id=memo,
                fiat_network_instructions=WIRE,
            )
        )
        engine.execute(AdvanceClock(to=START + timedelta(minutes=1)))


def test_the_same_seed_and_commands_give_a_byte_identical_log(tmp_path: Path) -> None:
    _session(tmp_path / "one.db")
    _session(tmp_path / "two.db")
    one, two = _log(tmp_path / "one.db"), _log(tmp_path / "two.db")
    assert hashlib.sha256(one).hexdigest() == hashlib.sha256(two).hexdigest()
    assert b"WIRE_DEPOSIT" in one


def test_a_restart_keeps_state_ids_and_clock(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    _session(db)
    with Engine(db, make_settings(seed=99)) as engine:
        assert engine.clock.now() == START + timedelta(minutes=1)
        (customer,) = engine.state.customers.values()
        assert len(customer["profile_ids"]) == 2
        before = engine.state.position
        actor = Actor(customer["id"], "c")
        made = engine.execute(CreateProfile(actor=actor, nickname="after-restart"))
        assert made["id"] not in {p for p in engine.state.profiles if p != made["id"]}
        assert engine.state.position == before + 1


def test_submit_on_a_stopped_engine_fails_fast(tmp_path: Path) -> None:
    engine = Engine(tmp_path / "s.db", make_settings())
    future: Future[Any] = engine.submit(CreateProfile(nickname="x"))
    with pytest.raises(Unavailable):
        future.result(1)
    engine.store.close()


def test_submit_many_answers_each_command_in_order_across_group_commits(tmp_path: Path) -> None:
    with Engine(tmp_path / "b.db", make_settings()) as engine:
        actor = _boot(engine)
    engine = Engine(tmp_path / "b.db", make_settings(group_commit_max=4))
    commits: list[int] = []
    real_commit = engine.store.commit

    def counting(events: Any, writes: Any, checkpoint: int) -> None:
        commits.append(len(events))
        real_commit(events, writes, checkpoint)

    engine.store.commit = counting  # type: ignore[method-assign]
    deposit = SandboxDeposit(actor=actor, profile_id="default", asset="USD", amount="1")
    commands = [deposit] * 3 + [CreateProfile(actor=actor, nickname="")] + [deposit] * 6
    # Queued before the writer starts, after a command submitted alone.
    engine._thread = threading.current_thread()  # submit() only checks that it is set
    alone = engine.submit(deposit)
    batch = engine.submit_many(commands)
    engine._thread = None
    engine.start()
    values = batch.result(5)
    assert alone.result(5)["activity_id"]
    engine.stop()
    # Never more than group_commit_max commands per commit; the refused one emits nothing.
    assert commits == [4, 3, 3]
    assert list(batch.errors) == [3] and isinstance(batch.errors[3], Invalid)
    with pytest.raises(Invalid):
        batch.answer(3)
    assert values[3] is None and batch.answer(0) == values[0]
    assert len({v["activity_id"] for i, v in enumerate(values) if i != 3}) == 9


def test_submit_many_on_a_stopped_engine_answers_every_command_unavailable(
    tmp_path: Path,
) -> None:
    engine = Engine(tmp_path / "s.db", make_settings())
    batch = engine.submit_many([CreateProfile(nickname="x"), CreateProfile(nickname="y")])
    assert batch.done() and batch.result(0) == [None, None]
    assert all(isinstance(batch.errors[i], Unavailable) for i in (0, 1))
    assert engine.submit_many([]).result(0) == []
    engine.store.close()


def test_a_failed_commit_fails_only_the_part_of_a_batch_it_held(tmp_path: Path) -> None:
    with Engine(tmp_path / "f.db", make_settings()) as engine:
        actor = _boot(engine)
    engine = Engine(tmp_path / "f.db", make_settings(group_commit_max=2))
    real_commit = engine.store.commit
    calls: list[int] = []

    def second_fails(events: Any, writes: Any, checkpoint: int) -> None:
        calls.append(len(events))
        if len(calls) == 2:
            raise StoreUnavailable("disk full")
        real_commit(events, writes, checkpoint)

    engine.store.commit = second_fails  # type: ignore[method-assign]
    deposit = SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
    engine._thread = threading.current_thread()
    batch = engine.submit_many([deposit] * 5)
    engine._thread = None
    engine.start()
    batch.result(5)
    engine.stop()
    assert sorted(batch.errors) == [2, 3]  # the second commit's two commands
    assert all(isinstance(e, Unavailable) for e in batch.errors.values())
    with Engine(tmp_path / "f.db", make_settings()) as engine:
        pid = engine.state.customers[actor.customer_id]["default_profile_id"]
        assert str(engine.state.ledger.balance(f"{pid}:available", "BTC")) == "3"
