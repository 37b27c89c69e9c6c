"""On a wall clock, APScheduler makes deadlines fire without anyone asking."""

from __future__ import annotations

import time
from pathlib import Path

from engine import open_engine
from engine.kernel.commands import (
    Actor,
    CreateCustomer,
    CreateFiatDepositInstructions,
    InitiateFiatDeposit,
)
from engine.runtime.scheduler import Scheduler
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
            deadline = time.monotonic() + 5
            while engine.state.ledger.balance(account, "USD") == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            scheduler.stop()
        assert str(engine.state.ledger.balance(account, "USD")) == "12"
        (credit,) = [e for e in engine.store.read() if e.type == "FiatDepositCredited"]
        (initiated,) = [e for e in engine.store.read() if e.type == "FiatDepositInitiated"]
        assert credit.occurred_at >= initiated.data["due_at"]
