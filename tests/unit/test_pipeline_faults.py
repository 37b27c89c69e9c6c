"""The pipelined writer under failing COMMITs, in seeded random runs.

The writer decides a group while the one before it is still syncing, on a state that
already holds it. Here COMMITs fail at random points of random sequences of deposits
and transfers that depend on them (a transfer needs the money a deposit just before it
brought). Whatever fails, what was answered success must be exactly what the log holds:
the balances after a restart are the sums of the successful answers, no balance is
negative, and `sandex verify` finds nothing wrong.
"""

from __future__ import annotations

import tempfile
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sandex.engine import open_engine
from sandex.engine.kernel.commands import (
    Actor,
    CreateCustomer,
    CreateInternalTransfer,
    CreateProfile,
    SandboxDeposit,
)
from sandex.engine.kernel.errors import InsufficientFunds, Unavailable
from sandex.engine.store import StoreUnavailable
from sandex.engine.tools.verify import verify
from tests.conftest import make_settings

# How long a test waits for the writer's answer before calling it hung: a guard, not a
# timing (a loaded machine ran out of 10 s here).
HUNG = 60

ops = st.lists(
    st.tuples(st.sampled_from(["deposit", "transfer"]), st.integers(min_value=1, max_value=9)),
    min_size=4,
    max_size=40,
)


@settings(max_examples=25, deadline=None, database=None, derandomize=True)
@given(
    ops=ops,
    failing=st.sets(st.integers(min_value=0, max_value=12), max_size=4),
    together=st.integers(min_value=1, max_value=5),
)
def test_what_was_answered_success_is_what_the_log_holds(
    ops: list[tuple[str, int]], failing: set[int], together: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "p.db"
        with open_engine(db, make_settings()) as engine:
            made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
            actor = Actor(made["customer_id"], "c")
            payer = engine.state.customers[actor.customer_id]["default_profile_id"]
            payee = engine.execute(CreateProfile(actor=actor, nickname="payee"))["id"]
        engine = open_engine(db, make_settings(group_commit_max=3))
        real_finish = engine.store.finish
        commits = [0]

        def sometimes_refused() -> None:
            n = commits[0]
            commits[0] += 1
            if n in failing:
                engine.store._undo()
                raise StoreUnavailable("disk I/O error")
            real_finish()

        engine.store.finish = sometimes_refused  # type: ignore[method-assign]
        commands: list[Any] = [
            SandboxDeposit(actor=actor, profile_id=payer, asset="USD", amount=str(amount))
            if kind == "deposit"
            else CreateInternalTransfer(
                actor=actor,
                from_profile_id=payer,
                to_profile_id=payee,
                asset="USD",
                amount=str(amount),
            )
            for kind, amount in ops
        ]
        # Everything queued before the writer starts: groups form back to back, each
        # decided while the one before it commits.
        engine._thread = threading.current_thread()
        batches = [
            (engine.submit_many(commands[i : i + together]), i)
            for i in range(0, len(commands), together)
        ]
        engine._thread = None
        engine.start()
        paid_in = paid_over = Decimal(0)
        for batch, first in batches:
            values = batch.result(HUNG)
            for k, value in enumerate(values):
                kind, amount = ops[first + k]
                error = batch.errors.get(k)
                if error is None:
                    assert value is not None
                    if kind == "deposit":
                        paid_in += amount
                    else:
                        paid_over += amount
                else:
                    assert isinstance(error, (Unavailable, InsufficientFunds)), error
        engine.stop()
        with open_engine(db, make_settings()) as again:
            ledger = again.state.ledger
            assert ledger.balance(f"{payer}:available", "USD") == paid_in - paid_over
            assert ledger.balance(f"{payee}:available", "USD") == paid_over
        assert verify(str(db)) == []
