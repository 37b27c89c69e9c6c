"""The WAL is copied into the database by a thread of its own, not inside a COMMIT."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

from engine import Engine
from engine.commands import Actor, CreateCustomer, SandboxDeposit
from tests.conftest import make_settings


def _checkpointers() -> set[threading.Thread]:
    """Other tests' engines may run beside this one's: compare sets, not counts."""
    return {t for t in threading.enumerate() if t.name == "sandex-checkpoint"}


def test_a_running_engine_copies_its_log_into_the_database_in_the_background(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.db"
    engine = Engine(db, make_settings())
    before = os.path.getsize(db)
    others = _checkpointers()
    engine.start()
    made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
    actor = Actor(made["customer_id"], "c")
    for _ in range(50):
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"))
    # Far fewer pages than any automatic checkpoint waits for: only the background
    # thread copies them into the database file.
    assert engine.store.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] > 1_000
    deadline = time.monotonic() + 5
    while os.path.getsize(db) == before and time.monotonic() < deadline:
        time.sleep(0.01)
    grew = os.path.getsize(db) > before
    ours = _checkpointers() - others
    engine.stop()
    assert grew
    assert len(ours) == 1 and not ours & _checkpointers()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == engine.state.position


def test_an_engine_that_never_starts_runs_no_checkpointer(tmp_path: Path) -> None:
    others = _checkpointers()
    engine = Engine(tmp_path / "n.db", make_settings())
    assert _checkpointers() <= others
    engine.store.close()
