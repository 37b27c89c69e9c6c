"""`sandex verify` on a log that holds an event of a type no applier knows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sandex.engine import open_engine
from sandex.engine.kernel.commands import CreateCustomer
from sandex.engine.tools.verify import verify
from tests.conftest import make_settings


def test_an_unknown_event_type_is_reported_not_a_crash(tmp_path: Path) -> None:
    db = tmp_path / "unknown.db"
    with open_engine(db, make_settings()) as engine:
        engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
    conn = sqlite3.connect(db)
    last = conn.execute("SELECT max(position) FROM events").fetchone()[0]
    conn.execute("UPDATE events SET type = 'FromTheFuture' WHERE position = ?", (last,))
    conn.commit()
    conn.close()
    problems = verify(str(db))
    assert problems == [f"unknown event type FromTheFuture at position {last}"]
