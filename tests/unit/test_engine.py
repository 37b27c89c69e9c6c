"""The writer: group commit, answers only after commit, timers, determinism, restart."""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import Future
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sandex.engine import Engine, open_engine
from sandex.engine.kernel.commands import (
    Actor,
    AdvanceClock,
    CreateCustomer,
    CreateFiatDepositInstructions,
    CreateProfile,
    InitiateFiatDeposit,
    SandboxDeposit,
)
from sandex.engine.kernel.errors import Conflict, Invalid, Unavailable
from sandex.engine.store import StoreUnavailable
from tests.conftest import START, make_settings
from tests.support.log_helpers import masked_log

WIRE = {"wire": {"account_number": "1"}}
# How long a test waits for the writer's answer before calling it hung: a guard, not a
# timing (a loaded CI machine has taken more than 5 s to answer after a failed commit).
HUNG = 60


def _boot(engine: Engine) -> Actor:
    made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
    return Actor(made["customer_id"], "c")


def _count_writes(engine: Engine) -> list[int]:
    """The number of events of each group commit the engine writes from now on."""
    commits: list[int] = []
    real_write = engine.store.write

    def counting(events: Any, writes: Any, checkpoint: int) -> None:
        commits.append(len(events))
        real_write(events, writes, checkpoint)

    engine.store.write = counting  # type: ignore[method-assign]
    return commits


def _log(db: Path) -> bytes:
    """The log byte for byte, but for the credential fields drawn from the OS."""
    return repr(masked_log(db)).encode()


def test_group_commit_puts_many_queued_commands_in_one_transaction(tmp_path: Path) -> None:
    with open_engine(tmp_path / "g.db", make_settings()) as engine:
        actor = _boot(engine)
    engine = open_engine(tmp_path / "g.db", make_settings())
    commits = _count_writes(engine)
    # Queue everything before the writer starts, so that it finds one full queue.
    engine._thread = threading.current_thread()  # submit() only checks that it is set
    futures = [
        engine.submit(SandboxDeposit(actor=actor, profile_id="default", asset="USD", amount="1"))
        for _ in range(50)
    ]
    engine._thread = None
    engine.start()
    results = [f.result(HUNG) for f in futures]
    engine.stop()
    assert len({r["activity_id"] for r in results}) == 50
    assert commits == [50]


def test_a_caller_is_answered_only_after_its_events_are_committed(tmp_path: Path) -> None:
    engine = open_engine(tmp_path / "a.db", make_settings()).start()
    actor = _boot(engine)
    gate = threading.Event()
    real_finish = engine.store.finish

    def slow() -> None:  # the COMMIT, the written events' last step to the disk
        gate.wait(5)
        real_finish()

    engine.store.finish = slow  # type: ignore[method-assign]
    future = engine.submit(
        SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
    )
    assert not future.done()
    gate.set()
    activity = future.result(HUNG)["activity_id"]
    assert any(e.stream == f"transfer-{activity}" for e in engine.store.read())
    engine.stop()


def test_a_failed_commit_answers_unavailable_and_leaves_no_trace(tmp_path: Path) -> None:
    engine = open_engine(tmp_path / "f.db", make_settings()).start()
    actor = _boot(engine)
    before = engine.state.position

    def broken(*_: Any) -> None:
        raise StoreUnavailable("disk full")

    real_write = engine.store.write
    engine.store.write = broken  # type: ignore[method-assign]
    with pytest.raises(Unavailable):
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"))
    assert engine.state.position == before
    assert engine.state.ledger.balances == {}
    engine.store.write = real_write  # type: ignore[method-assign]
    engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="2"))
    pid = engine.state.customers[actor.customer_id]["default_profile_id"]
    assert str(engine.state.ledger.balance(f"{pid}:available", "BTC")) == "2"
    engine.stop()


def test_domain_errors_reach_their_caller_only(tmp_path: Path) -> None:
    with open_engine(tmp_path / "e.db", make_settings()) as engine:
        actor = _boot(engine)
        good = engine.submit(CreateProfile(actor=actor, nickname="one"))
        bad = engine.submit(CreateProfile(actor=actor, nickname=""))
        assert good.result(HUNG)["nickname"] == "one"
        with pytest.raises(Invalid):
            bad.result(HUNG)


def test_advance_fires_deadlines_in_order_at_their_exact_time(tmp_path: Path) -> None:
    settings = make_settings(fiat_deposit_delay_seconds=2, wire_fee=0)
    with open_engine(tmp_path / "t.db", settings) as engine:
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
    with open_engine(tmp_path / "m.db", make_settings()) as engine:
        engine.execute(AdvanceClock(to=START + timedelta(seconds=10)))
        with pytest.raises(Invalid, match="backwards"):
            engine.execute(AdvanceClock(to=START))
    with (
        open_engine(tmp_path / "w.db", make_settings(clock="wall")) as engine,
        pytest.raises(Conflict),
    ):
        engine.execute(AdvanceClock(to=START))


def _session(db: Path) -> None:
    with open_engine(db, make_settings(seed=99)) as engine:
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
    with open_engine(db, make_settings(seed=99)) as engine:
        assert engine.clock.now() == START + timedelta(minutes=1)
        (customer,) = engine.state.customers.values()
        assert len(customer["profile_ids"]) == 2
        before = engine.state.position
        actor = Actor(customer["id"], "c")
        made = engine.execute(CreateProfile(actor=actor, nickname="after-restart"))
        assert made["id"] not in {p for p in engine.state.profiles if p != made["id"]}
        assert engine.state.position == before + 1


def test_submit_on_a_stopped_engine_fails_fast(tmp_path: Path) -> None:
    engine = open_engine(tmp_path / "s.db", make_settings())
    future: Future[Any] = engine.submit(CreateProfile(nickname="x"))
    with pytest.raises(Unavailable):
        future.result(1)
    engine.store.close()


def test_submit_many_answers_each_command_in_order_across_group_commits(tmp_path: Path) -> None:
    with open_engine(tmp_path / "b.db", make_settings()) as engine:
        actor = _boot(engine)
    engine = open_engine(tmp_path / "b.db", make_settings(group_commit_max=4))
    commits = _count_writes(engine)
    deposit = SandboxDeposit(actor=actor, profile_id="default", asset="USD", amount="1")
    commands = [deposit] * 3 + [CreateProfile(actor=actor, nickname="")] + [deposit] * 6
    # Queued before the writer starts, after a command submitted alone.
    engine._thread = threading.current_thread()  # submit() only checks that it is set
    alone = engine.submit(deposit)
    batch = engine.submit_many(commands)
    engine._thread = None
    engine.start()
    values = batch.result(HUNG)
    assert alone.result(HUNG)["activity_id"]
    engine.stop()
    # Never more than group_commit_max commands per commit; the refused one emits nothing.
    assert commits == [4, 3, 3]
    assert list(batch.errors) == [3] and isinstance(batch.errors[3], Invalid)
    with pytest.raises(Invalid):
        batch.answer(3)
    assert values[3] is None and batch.answer(0) == values[0]
    assert len({v["activity_id"] for i, v in enumerate(values) if i != 3}) == 9


def test_a_group_commit_holds_about_group_commit_events_events(tmp_path: Path) -> None:
    """After its first group the writer takes as many commands as fit
    `group_commit_events` at the last group's events per command: a backlog of
    one-event commands goes in groups of that many, never more than `group_commit_max`
    commands."""
    with open_engine(tmp_path / "g.db", make_settings()) as engine:
        actor = _boot(engine)
    engine = open_engine(
        tmp_path / "g.db", make_settings(group_commit_max=10, group_commit_events=8)
    )
    commits = _count_writes(engine)
    per_event = [CreateProfile(actor=actor, nickname=f"p{k}") for k in range(20)]
    engine._thread = threading.current_thread()  # queued before the writer starts
    one = engine.submit_many(per_event)
    engine._thread = None
    engine.start()
    one.result(HUNG)
    assert not one.errors
    # the first group assumes four events a command: 8 / 4 = 2 commands
    assert commits == [2, 8, 8, 2]
    engine.stop()
    engine = open_engine(
        tmp_path / "g.db", make_settings(group_commit_max=3, group_commit_events=100)
    )
    capped = _count_writes(engine)
    engine._thread = threading.current_thread()
    many = engine.submit_many([CreateProfile(actor=actor, nickname=f"q{k}") for k in range(7)])
    engine._thread = None
    engine.start()
    many.result(HUNG)
    engine.stop()
    assert capped == [3, 3, 1]


def test_submit_many_on_a_stopped_engine_answers_every_command_unavailable(
    tmp_path: Path,
) -> None:
    engine = open_engine(tmp_path / "s.db", make_settings())
    batch = engine.submit_many([CreateProfile(nickname="x"), CreateProfile(nickname="y")])
    assert batch.done() and batch.result(0) == [None, None]
    assert all(isinstance(batch.errors[i], Unavailable) for i in (0, 1))
    assert engine.submit_many([]).result(0) == []
    engine.store.close()


def test_a_failed_commit_fails_only_the_part_of_a_batch_it_held(tmp_path: Path) -> None:
    with open_engine(tmp_path / "f.db", make_settings()) as engine:
        actor = _boot(engine)
    engine = open_engine(tmp_path / "f.db", make_settings(group_commit_max=2))
    real_write = engine.store.write
    calls: list[int] = []

    def second_fails(events: Any, writes: Any, checkpoint: int) -> None:
        calls.append(len(events))
        if len(calls) == 2:
            raise StoreUnavailable("disk full")
        real_write(events, writes, checkpoint)

    engine.store.write = second_fails  # type: ignore[method-assign]
    deposit = SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
    engine._thread = threading.current_thread()
    batch = engine.submit_many([deposit] * 5)
    engine._thread = None
    engine.start()
    batch.result(HUNG)
    engine.stop()
    assert sorted(batch.errors) == [2, 3]  # the second commit's two commands
    assert all(isinstance(e, Unavailable) for e in batch.errors.values())
    with open_engine(tmp_path / "f.db", make_settings()) as engine:
        pid = engine.state.customers[actor.customer_id]["default_profile_id"]
        assert str(engine.state.ledger.balance(f"{pid}:available", "BTC")) == "3"


def test_a_failed_commit_after_the_write_answers_unavailable_and_leaves_no_trace(
    tmp_path: Path,
) -> None:
    """The COMMIT itself fails (the disk refuses the sync): the written group is undone,
    its caller told to retry, and the state holds nothing of it."""
    engine = open_engine(tmp_path / "c.db", make_settings()).start()
    actor = _boot(engine)
    before = engine.state.position
    real_finish = engine.store.finish

    def refused() -> None:
        engine.store._undo()
        raise StoreUnavailable("disk I/O error")

    engine.store.finish = refused  # type: ignore[method-assign]
    with pytest.raises(Unavailable, match="disk I/O error"):
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"))
    engine.store.finish = real_finish  # type: ignore[method-assign]
    engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="2"))
    assert engine.state.position == before + 1
    pid = engine.state.customers[actor.customer_id]["default_profile_id"]
    assert str(engine.state.ledger.balance(f"{pid}:available", "BTC")) == "2"
    engine.stop()
    assert [e.type for e in engine_log(tmp_path / "c.db")][-1] == "TransferCreated"


def engine_log(db: Path) -> list[Any]:
    from sandex.engine.store import SqliteEventStore

    store = SqliteEventStore(db)
    try:
        return list(store.read())
    finally:
        store.close()


def test_the_next_group_is_decided_while_the_last_one_commits(tmp_path: Path) -> None:
    """While one group's COMMIT waits on the disk, the writer decides the next: those
    commands are applied, but no caller of either group is answered before its own
    COMMIT has returned."""
    with open_engine(tmp_path / "p.db", make_settings()) as engine:
        actor = _boot(engine)
    engine = open_engine(tmp_path / "p.db", make_settings())
    gate = threading.Event()
    waiting = threading.Event()
    real_finish = engine.store.finish
    finished: list[int] = []

    def first_waits() -> None:
        if not finished:
            waiting.set()
            gate.wait(5)
        finished.append(engine.store.last_position())
        real_finish()

    engine.store.finish = first_waits  # type: ignore[method-assign]
    engine.start()
    deposit = SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
    first = engine.submit(deposit)
    assert waiting.wait(5)
    after_first = engine.state.position
    second = engine.submit(deposit)
    deadline = threading.Event()
    while engine.state.position == after_first and not deadline.wait(0.005):
        pass  # the writer decides the second deposit while the first is not yet durable
    assert engine.state.position > after_first
    assert not first.done() and not second.done()
    gate.set()
    assert first.result(HUNG)["activity_id"] != second.result(HUNG)["activity_id"]
    engine.stop()
    assert finished == [after_first, engine.state.position]
    assert [e.position for e in engine_log(tmp_path / "p.db")][-1] == engine.state.position


def test_a_failed_commit_fails_the_group_decided_behind_it_and_keeps_what_was_answered(
    tmp_path: Path,
) -> None:
    """A group is decided on the state the group before it left, before that one is
    durable: if that COMMIT fails, every command resting on it is refused too, and what
    was answered success is exactly what the log holds."""
    with open_engine(tmp_path / "q.db", make_settings()) as engine:
        actor = _boot(engine)
    engine = open_engine(tmp_path / "q.db", make_settings(group_commit_max=2))
    real_finish = engine.store.finish
    calls: list[int] = []

    def second_fails() -> None:
        calls.append(1)
        if len(calls) == 2:
            engine.store._undo()
            raise StoreUnavailable("disk full")
        real_finish()

    engine.store.finish = second_fails  # type: ignore[method-assign]
    deposit = SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
    engine._thread = threading.current_thread()
    batch = engine.submit_many([deposit] * 7)
    engine._thread = None
    engine.start()
    batch.result(HUNG)
    engine.stop()
    assert {2, 3} <= set(batch.errors) and all(
        isinstance(e, Unavailable) for e in batch.errors.values()
    )
    answered = [v for v in batch.result(0) if v is not None]
    with open_engine(tmp_path / "q.db", make_settings()) as engine:
        pid = engine.state.customers[actor.customer_id]["default_profile_id"]
        assert str(engine.state.ledger.balance(f"{pid}:available", "BTC")) == str(len(answered))
        made = {e.stream for e in engine_log(tmp_path / "q.db") if e.type == "TransferCreated"}
        assert made == {f"transfer-{v['activity_id']}" for v in answered}


def test_a_batch_names_the_log_positions_each_command_caused(tmp_path: Path) -> None:
    """`Batch.positions`: each command's own decision's first and last event, none for a
    refused one, and a clock move's span holds the timers it fired (the request log
    shows them as what the request caused)."""
    settings = make_settings(fiat_deposit_delay_seconds=2, wire_fee=0)
    with open_engine(tmp_path / "p.db", settings) as engine:
        actor = _boot(engine)
        memo = engine.execute(CreateFiatDepositInstructions(actor=actor, profile_id="default"))[
            "memo_id"
        ]
        batch = engine.submit_many(
            [
                SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"),
                CreateProfile(actor=actor, nickname=""),  # refused: nothing recorded
                InitiateFiatDeposit(
                    actor=actor,
                    amount="5",
                    asset="USD",
                    memo_id=memo,
                    fiat_network_instructions=WIRE,
                ),
                AdvanceClock(to=START + timedelta(minutes=1)),
            ]
        )
        batch.result(HUNG)
        assert sorted(batch.positions) == [0, 2, 3]
        log = list(engine.store.read())
        by_position = {e.position: e for e in log}
        for index, (first, last) in batch.positions.items():
            own = [by_position[p] for p in range(first, last + 1)]
            assert own, index
            if index != 3:  # one decision each: every event names its first
                assert {e.meta["command_position"] for e in own} == {first}
        spans = sorted(batch.positions.values())
        assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))
        clock_move = [by_position[p].type for p in range(*batch.positions[3])]
        assert "TransferCompleted" in clock_move  # the deposit's credit, fired by the move
        assert batch.positions[3][1] == log[-1].position
        assert by_position[batch.positions[3][1]].type == "ClockAdvanced"
