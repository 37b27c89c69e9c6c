"""The writer's commit strategies (engine/runtime/commit_strategies.py): one decide loop,
and how its groups reach the log chosen by who drives the engine."""

from __future__ import annotations

from pathlib import Path

from sandex.engine.kernel.commands import Actor, CreateCustomer, SandboxDeposit
from sandex.engine.runtime.commit_strategies import Inline, OneTransaction, Pipelined
from sandex.engine.runtime.composition import open_engine
from tests.conftest import make_settings


def test_each_way_of_driving_the_engine_commits_through_its_own_strategy(tmp_path: Path) -> None:
    engine = open_engine(tmp_path / "strategies.db", make_settings())
    try:
        assert type(engine._strategy) is Inline  # no writer thread: run_inline
        made = engine.run_inline(CreateCustomer(client_id="me", client_secret="pw", bootstrap=True))
        actor = Actor(made["customer_id"], "me")
        assert engine.store.last_position() == engine.state.position  # committed at once
        with engine.one_transaction():
            held = engine._strategy
            assert type(held) is OneTransaction and not held.scratch
            engine.run_inline(
                SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
            )
            assert held.deferred  # decided, held in memory until the block ends
        assert type(engine._strategy) is Inline
        assert engine.store.last_position() == engine.state.position
        engine.start()
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="2"))
        assert type(engine._strategy) is Pipelined  # the writer thread's, with a committer
    finally:
        engine.stop()
    assert type(engine._strategy) is Inline
