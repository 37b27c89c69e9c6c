"""A posting marks a profile's balance row only when it touches an account the row
shows (`available`, `trading`): a withdrawal's confirmation, which empties its hold into
the world, rewrites the transfer's row but not the balance row, which it left as it was;
the rows written stay equal to a rebuild (`sandex verify`, tests/api)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from sandex.engine import Engine, open_engine
from sandex.engine.domain.sandbox_triggers import FAIL as FAIL_MEMO
from sandex.engine.kernel.commands import (
    Actor,
    AdvanceClock,
    CreateCryptoWithdrawal,
    CreateCustomer,
    SandboxDeposit,
)
from sandex.engine.tools.verify import verify
from tests.conftest import make_settings

WITHDRAWAL = {
    "profile_id": "default",
    "asset": "USDC",
    "crypto_network": "SOLANA",
    "destination_address": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
    "amount": "10",
}


def _tables_written(engine: Engine) -> list[set[str]]:
    """The tables each later commit upserts rows of."""
    commits: list[set[str]] = []
    real_write = engine.store.write

    def recording(events: Any, writes: Any, checkpoint: int) -> None:
        commits.append({table for table, (upserts, _) in writes.items() if upserts})
        real_write(events, writes, checkpoint)

    engine.store.write = recording  # type: ignore[method-assign]
    return commits


def _withdrawn(db: Path, memo: str | None) -> list[set[str]]:
    """The tables the withdrawal's confirmation (or failure) wrote rows of; the database
    then verified (its rows equal a rebuild from the log)."""
    engine = open_engine(db, make_settings())
    try:
        made = engine.run_inline(CreateCustomer())
        actor = Actor(made["customer_id"], made["client_id"])
        deposit = SandboxDeposit(actor=actor, profile_id="default", asset="USDC", amount="100")
        engine.run_inline(deposit)
        engine.run_inline(CreateCryptoWithdrawal(actor=actor, memo=memo, **WITHDRAWAL))
        commits = _tables_written(engine)
        engine.run_inline(AdvanceClock(by=timedelta(seconds=5)))  # the confirmation's timer
    finally:
        engine.stop()
    assert verify(str(db)) == []
    return commits


def test_a_confirmation_writes_the_transfer_not_the_unchanged_balance_row(tmp_path: Path) -> None:
    assert _withdrawn(tmp_path / "c.db", memo=None) == [{"transfers", "event_feed"}]


def test_a_failed_withdrawal_writes_the_balance_row_it_returns_to(tmp_path: Path) -> None:
    written = _withdrawn(tmp_path / "f.db", memo=FAIL_MEMO)
    assert written == [{"transfers", "event_feed", "balances"}]
