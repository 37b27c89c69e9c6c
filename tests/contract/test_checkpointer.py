"""The WAL is copied into the database by a thread of its own, not inside a COMMIT."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import structlog
import structlog.testing

from sandex.engine import open_engine
from sandex.engine.kernel.commands import Actor, CreateCustomer, SandboxDeposit
from sandex.engine.store import checkpointer
from tests.conftest import make_settings


def _checkpointers() -> set[threading.Thread]:
    """Other tests' engines may run beside this one's: compare sets, not counts."""
    return {t for t in threading.enumerate() if t.name == "sandex-checkpoint"}


def test_a_running_engine_copies_its_log_into_the_database_in_the_background(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.db"
    engine = open_engine(db, make_settings())
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
    running = _checkpointers()
    engine.stop()
    assert grew
    assert len(running) == 1  # the process's one checkpoint thread
    assert not (running - others) & _checkpointers()  # started for this engine: ended with it
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == engine.state.position


def test_the_engines_of_a_process_share_one_checkpoint_thread_and_each_is_copied(
    tmp_path: Path,
) -> None:
    """A server's loaded worlds each run an engine: their checkpoints cost one thread
    between them, not one each, and every database is still copied."""
    others = _checkpointers()
    engines = [open_engine(tmp_path / f"e{n}.db", make_settings()) for n in range(3)]
    sizes = [os.path.getsize(tmp_path / f"e{n}.db") for n in range(3)]
    try:
        for engine in engines:
            engine.start()
            made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
            actor = Actor(made["customer_id"], "c")
            for _ in range(20):
                engine.execute(
                    SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
                )
        assert len(_checkpointers()) == 1
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(
            os.path.getsize(tmp_path / f"e{n}.db") == sizes[n] for n in range(3)
        ):
            time.sleep(0.01)
        assert all(os.path.getsize(tmp_path / f"e{n}.db") > sizes[n] for n in range(3))
        engines.pop().stop()  # one stops: the others are still copied
        assert len(_checkpointers()) == 1
    finally:
        for engine in engines:
            engine.stop()
    assert not (_checkpointers() - others)


def test_an_engine_that_never_starts_runs_no_checkpointer(tmp_path: Path) -> None:
    others = _checkpointers()
    engine = open_engine(tmp_path / "n.db", make_settings())
    assert _checkpointers() <= others
    engine.store.close()


def _waits(worker: checkpointer.Checkpointer, passes: int) -> list[float]:
    """The waits of `passes` passes: the first, before any pass, then each pass's."""
    return [worker.interval] + [worker.pass_once() for _ in range(passes)]


class _Disk:
    """A connection whose checkpoints fail while `full`, as on a full disk; each pass
    that succeeds finds `written` more log frames than the last (0: an idle database)."""

    def __init__(self, failures: int, written: int = 1) -> None:
        self.failures = failures
        self.written = written
        self.frames = 0
        self.opened = 0

    def connect(self, path: str) -> Any:
        self.opened += 1
        return self

    def execute(self, sql: str) -> Any:
        if self.failures:
            self.failures -= 1
            raise sqlite3.OperationalError("database or disk is full")
        return self

    def fetchone(self) -> tuple[int, int, int]:
        self.frames += self.written
        return (0, self.frames, self.frames)

    def close(self) -> None:
        pass


def test_a_failing_checkpoint_backs_off_and_logs_once_when_it_fails_and_once_when_it_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = _Disk(failures=12)
    monkeypatch.setattr(checkpointer, "_connect", disk.connect, raising=False)
    worker = checkpointer.Checkpointer(str(tmp_path / "c.db"), interval=0.02, max_interval=1.0)
    with structlog.testing.capture_logs() as logs:
        waits = _waits(worker, 16)
    assert [(line["log_level"], line["event"]) for line in logs] == [
        ("warning", "background checkpoint failed; backing off"),
        ("info", "background checkpoints resumed"),
    ]
    assert logs[0]["error"] == "database or disk is full"
    # The first pass at the interval; each failure doubles the wait up to the cap, and the
    # first success brings it back to the interval.
    failing = waits[1:13]
    assert failing == sorted(failing) and failing[0] == 0.04 and failing[-1] == 1.0
    assert waits[13:] == [0.02] * 4
    assert disk.opened == 13  # a fresh connection after each failure


def test_an_idle_database_is_checkpointed_less_and_less_often_until_it_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server holds many worlds, most of them idle: an idle one's checkpointer must not
    wake at the busy interval."""
    disk = _Disk(failures=0, written=0)
    monkeypatch.setattr(checkpointer, "_connect", disk.connect, raising=False)
    worker = checkpointer.Checkpointer(str(tmp_path / "c.db"), interval=0.02)
    worker.idle_interval = 0.5
    waits = _waits(worker, 6)
    waits += [worker.pass_once()]  # still idle: the wait stays at idle_interval
    disk.written = 3  # the database is written to again
    waits += [worker.pass_once() for _ in range(2)]
    # the first pass finds the log, each pass after it finds it unchanged: the wait
    # doubles up to idle_interval; the first pass that finds more frames goes back
    assert waits == [0.02, 0.02, 0.04, 0.08, 0.16, 0.32, 0.5, 0.5, 0.02, 0.02]


def test_the_first_commit_after_a_quiet_spell_nudges_an_idle_checkpointer(
    tmp_path: Path,
) -> None:
    """An idle checkpointer waits long: the next write must not wait that long to be
    copied, and a busy one is not nudged at every commit."""
    engine = open_engine(tmp_path / "q.db", make_settings())
    engine.start()
    try:
        worker = engine.store._checkpointer  # type: ignore[attr-defined]
        worker.stop()  # its own passes would set `idle` meanwhile
        nudges: list[bool] = []
        worker.nudge = lambda: nudges.append(True)
        made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
        actor = Actor(made["customer_id"], "c")
        worker.idle = False  # busy: commits do not nudge it
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"))
        assert nudges == []
        worker.idle = True  # backing off after a quiet spell
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"))
        assert nudges == [True]
    finally:
        engine.stop()


def test_an_idle_database_holds_no_checkpoint_connection_until_it_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of a server's loaded idle worlds would hold a checkpoint connection (its page
    cache, schema and statements) for nothing; a write, nudged or not, must still be
    copied by the next pass."""
    path = str(tmp_path / "i.db")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")  # only the checkpointer copies
    writer.execute("CREATE TABLE t (x)")
    opened: list[str] = []
    connect = checkpointer._connect
    monkeypatch.setattr(checkpointer, "_connect", lambda p: opened.append(p) or connect(p))
    worker = checkpointer.Checkpointer(path, interval=0.02)
    try:
        assert worker.pass_once() == 0.02 and worker.connected  # copied what was there
        assert worker.pass_once() == 0.04 and not worker.connected  # idle: closed
        assert worker.pass_once() == 0.08 and not worker.connected  # no write: none opened
        writer.execute("INSERT INTO t VALUES (1)")  # not nudged: the log file changed
        assert worker.pass_once() == 0.02 and worker.connected
        assert _rows_in_the_database_file(path) == 1  # copied
        assert worker.pass_once() == 0.04 and not worker.connected
        assert len(opened) == 2
        worker.nudge()  # a COMMIT after a quiet spell says so: the pass looks
        worker.pass_once()
        assert len(opened) == 3
    finally:
        worker.stop()
        writer.close()


def _rows_in_the_database_file(path: str) -> int:
    """The rows of t in the database file itself, its log unread (`immutable`)."""
    conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM t").fetchone()[0])
    finally:
        conn.close()


def test_databases_busy_at_once_are_each_passed_as_many_times_less_often(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worlds driven at once share one writer's pace, so each busy world's log grows that
    much slower: the checkpoint thread's passes (each a wake-up, a copy and its syncs)
    must not multiply with the busy databases. An idle or failing one keeps its own wait."""
    monkeypatch.setattr(checkpointer._Checkpoints, "_busy", set())
    members = [
        checkpointer.Checkpointer(str(tmp_path / f"{n}.db"), interval=0.02, max_interval=1.0)
        for n in range(4)
    ]
    busy_wait = checkpointer._Checkpoints.busy_wait
    with checkpointer._Checkpoints._cond:
        # each pass that found the log written (its wait at the interval) counts it busy
        assert [busy_wait(m, 0.02) for m in members] == pytest.approx([0.02, 0.04, 0.06, 0.08])
        assert busy_wait(members[0], 0.02) == pytest.approx(0.08)
        # one finds its log unchanged (idle, its wait doubled): its own wait, one fewer busy
        assert busy_wait(members[3], 0.04) == 0.04
        assert busy_wait(members[0], 0.02) == pytest.approx(0.06)
        # a failing one backs off as before and no longer counts
        assert busy_wait(members[2], 0.5) == 0.5
        assert busy_wait(members[0], 0.02) == pytest.approx(0.04)
        # never past the longest wait a database may be left
        many = [checkpointer.Checkpointer(str(tmp_path / f"m{n}.db")) for n in range(400)]
        assert max(busy_wait(m, m.interval) for m in many) == many[0].max_interval
