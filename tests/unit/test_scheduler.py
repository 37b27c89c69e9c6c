"""On a wall clock, the scheduler makes deadlines fire without anyone asking."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from sandex.engine import open_engine
from sandex.engine.kernel.commands import (
    Actor,
    CreateCustomer,
    CreateFiatDepositInstructions,
    InitiateFiatDeposit,
)
from sandex.engine.runtime.scheduler import Scheduler
from tests.conftest import make_settings


def test_a_wall_clock_deadline_fires_through_the_scheduler(tmp_path: Path) -> None:
    settings = make_settings(
        clock="wall", fiat_deposit_delay_seconds="0.2", tick_interval_seconds=0.02, wire_fee=0
    )
    with open_engine(tmp_path / "wall.db", settings) as engine:
        made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
        actor = Actor(made["customer_id"], "c")
        memo = engine.execute(CreateFiatDepositInstructions(actor=actor, profile_id="default"))[
            "memo_id"
        ]
        scheduler = Scheduler(engine, settings.tick_interval_seconds)
        scheduler.start()
        try:
            engine.execute(
                InitiateFiatDeposit(
                    actor=actor,
                    amount="12",
                    asset="USD",
                    memo_id=memo,
                    fiat_network_instructions={"wire": {"a": 1}},
                )
            )
            account = f"{made['profile_id']}:available"
            # the credit's event in the log, committed (the state has it a moment before its
            # COMMIT returns); a generous bound for a busy machine
            deadline = time.monotonic() + 30
            while not _credited(engine) and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            scheduler.stop()
        assert str(engine.state.ledger.balance(account, "USD")) == "12"
        (credit,) = _credited(engine)
        (initiated,) = [e for e in engine.store.read() if e.type == "FiatDepositInitiated"]
        assert credit.occurred_at >= initiated.data["due_at"]


def _credited(engine: Any) -> list[Any]:
    return [e for e in engine.store.read() if e.type == "FiatDepositCredited"]


def _fiat_deposit(engine: Any) -> str:
    """A fiat deposit initiated on `engine`, due a moment later: the account it credits."""
    made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
    actor = Actor(made["customer_id"], "c")
    memo = engine.execute(CreateFiatDepositInstructions(actor=actor, profile_id="default"))
    engine.execute(
        InitiateFiatDeposit(
            actor=actor,
            amount="12",
            asset="USD",
            memo_id=memo["memo_id"],
            fiat_network_instructions={"wire": {"a": 1}},
        )
    )
    return f"{made['profile_id']}:available"


def test_the_schedulers_of_many_engines_share_one_thread_that_ends_with_the_last(
    tmp_path: Path,
) -> None:
    """A server's worlds each run a scheduler: one thread between them, not one each."""
    settings = make_settings(
        clock="wall", fiat_deposit_delay_seconds="0.2", tick_interval_seconds=0.02, wire_fee=0
    )
    before = set(threading.enumerate())
    engines = [open_engine(tmp_path / f"w{i}.db", settings) for i in range(3)]
    schedulers = []
    try:
        for engine in engines:
            engine.start()
            scheduler = Scheduler(engine, settings.tick_interval_seconds)
            scheduler.start()
            schedulers.append(scheduler)
        started = [t.name for t in set(threading.enumerate()) - before]
        assert started.count("APScheduler") == 1
        accounts = [_fiat_deposit(engine) for engine in engines]
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not all(
            engine.state.ledger.balance(account, "USD")
            for engine, account in zip(engines, accounts, strict=True)
        ):
            time.sleep(0.02)
        # every engine's deadline fired; one stopped, the others still tick
        assert [
            str(e.state.ledger.balance(a, "USD")) for e, a in zip(engines, accounts, strict=True)
        ] == ["12"] * 3
        schedulers.pop(0).stop()
        assert any(t.name == "APScheduler" for t in set(threading.enumerate()) - before)
    finally:
        for scheduler in schedulers:
            scheduler.stop()
        for engine in engines:
            engine.stop()
    assert [t.name for t in set(threading.enumerate()) - before if t.is_alive()] == []
