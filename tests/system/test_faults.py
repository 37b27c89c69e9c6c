"""Faults of the disk, the database and the clock.

A database that is read-only, full, locked or unreadable answers 503 problems with
`Retry-After` and writes nothing partial; once the fault clears the sandbox works again
and `sandex verify` passes. A database that cannot be opened is a clear start-up error.
A wall clock that steps back reorders no event and expires nothing early."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from freezegun import freeze_time

from sandex.engine import open_engine
from sandex.engine.kernel.commands import Actor, CreateCustomer, CreateWithdrawalFee, SandboxDeposit
from tests.conftest import make_settings
from tests.support import server_helpers
from tests.support.server_helpers import ROOT, Server, free_port

SANDEX = [sys.executable, "-m", "sandex.api_adapter.cli"]
DEPOSIT = "/v2/sandbox/profiles/default/deposit"
ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


def _events(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        conn.close()


def _assert_503(r: Any, *words: str) -> None:
    assert r.status_code == 503, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.headers["retry-after"] == "1"
    for word in words:
        assert word in r.json()["detail"], r.json()["detail"]


def _writes_fail_then_recover(sb: Any, *words: str) -> None:
    """Under the fault: 503, nothing written. The caller clears the fault after."""
    before = _events(sb.db)
    balance = sb.balance("BTC")["available"]
    for _ in range(3):
        _assert_503(sb.post(DEPOSIT, {"asset": "BTC", "amount": "1"}), *words)
    r = sb.post("/v2/profiles", {"nickname": "during the fault"})
    _assert_503(r)
    assert _events(sb.db) == before
    assert sb.balance("BTC")["available"] == balance  # reads still work


def _works_again(sb: Any) -> None:
    before = sb.balance("BTC")["available"]
    assert sb.post(DEPOSIT, {"asset": "BTC", "amount": "1"}).status_code == 200
    assert float(sb.balance("BTC")["available"]) == float(before) + 1
    assert sb.get("/v2/profiles", params={"nickname": "during the fault"}).json()["items"] == []


def test_a_read_only_database_answers_503_and_the_next_write_once_writable_works(
    sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's connection turns read-only (as one opened while the file was read-only
    stays), and so does every connection opened while the fault lasts; once the file is
    writable again the very next write works, with no restart."""
    sandbox.deposit("BTC", "1")
    store = sandbox.engine.store

    def read_only() -> sqlite3.Connection:
        return sqlite3.connect(
            f"file:{sandbox.db}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
        )

    monkeypatch.setattr(store, "_open_writer", read_only)
    writable, store.conn = store.conn, read_only()
    writable.close()
    _writes_fail_then_recover(sandbox, "readonly")
    monkeypatch.undo()  # the file is writable again; the writer's connection is as it was
    _works_again(sandbox)


# Root writes any file whatever its mode: a server run as root without the capabilities
# that allow it meets file permissions as any user does.
_AS_A_USER = (
    []
    if os.geteuid() != 0
    else [
        "setpriv",
        "--inh-caps=-dac_override,-dac_read_search",
        "--bounding-set=-dac_override,-dac_read_search",
    ]
)


@pytest.mark.skipif(
    bool(_AS_A_USER) and shutil.which("setpriv") is None, reason="needs setpriv to drop root"
)
def test_a_server_started_on_a_read_only_file_writes_again_once_the_file_is_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real server process on a database file of mode 0444: SQLite opens it read-only
    without a word, and every write is a 503; after `chmod 644` the next write works."""
    db = tmp_path / "ro.db"
    first = Server(db)
    headers = first.token()
    url = f"{first.base}{DEPOSIT}"
    assert httpx.post(url, json={"asset": "BTC", "amount": "1"}, headers=headers).is_success
    assert first.stop()[0] == 0
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    db.chmod(0o444)
    monkeypatch.setattr(server_helpers, "SANDEX", [*_AS_A_USER, *server_helpers.SANDEX])
    server = Server(db, "--no-rate-limits")
    try:
        url = f"{server.base}{DEPOSIT}"
        for _ in range(2):
            r = httpx.post(url, json={"asset": "BTC", "amount": "1"}, headers=headers)
            _assert_503(r, "readonly")
        for f in files:
            if f.exists():
                f.chmod(0o644)
        r = httpx.post(url, json={"asset": "BTC", "amount": "1"}, headers=headers)
        assert r.status_code == 200, r.text
        balance = f"{server.base}/v2/profiles/default/balances/BTC"
        assert httpx.get(balance, headers=headers).json()["available"] == "2"
    finally:
        code, _, err = server.stop()
    assert code == 0, err
    done = subprocess.run(
        [*SANDEX, "verify", "--db", str(db)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout


@pytest.mark.skipif(
    bool(_AS_A_USER) and shutil.which("setpriv") is None, reason="needs setpriv to drop root"
)
@pytest.mark.parametrize("refused", [0, 2])
def test_a_server_that_made_the_wal_and_shm_of_a_read_only_file_writes_once_it_is_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused: int
) -> None:
    """No `-wal` nor `-shm` beside a database of mode 0444 when the server starts: SQLite
    would make them with the database's mode, open them read-only ever after, and share
    the read-only `-shm` among the process's connections, so every write stayed a 503
    after the operator's `chmod` of the database. Now the first write after it works,
    whether writes (and reads) were refused before it or none was tried."""
    db = tmp_path / "ro.db"
    first = Server(db)
    headers = first.token()
    assert httpx.post(
        f"{first.base}{DEPOSIT}", json={"asset": "BTC", "amount": "1"}, headers=headers
    ).is_success
    assert first.stop()[0] == 0
    conn = sqlite3.connect(db)  # the last connection to close removes `-wal` and `-shm`
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()
    db.chmod(0o444)
    monkeypatch.setattr(server_helpers, "SANDEX", [*_AS_A_USER, *server_helpers.SANDEX])
    server = Server(db, "--no-rate-limits")
    url = f"{server.base}{DEPOSIT}"
    balance = f"{server.base}/v2/profiles/default/balances/BTC"
    try:
        for _ in range(refused):
            r = httpx.post(url, json={"asset": "BTC", "amount": "1"}, headers=headers)
            _assert_503(r, "readonly")
            assert httpx.get(balance, headers=headers).json()["available"] == "1"
        db.chmod(0o644)  # the database only, as the operator fixes it
        for _ in range(2):
            r = httpx.post(url, json={"asset": "BTC", "amount": "1"}, headers=headers)
            assert r.status_code == 200, r.text
        assert httpx.get(balance, headers=headers).json()["available"] == "3"
    finally:
        code, _, err = server.stop()
    assert code == 0, err


def test_a_full_disk_answers_503_and_writes_nothing(sandbox: Any) -> None:
    """What still fits in free pages is written whole; what does not is a 503 that left
    nothing behind."""
    sandbox.deposit("BTC", "1")
    conn = sandbox.engine.store.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "database or disk is full"
    refused = 0
    try:
        for i in range(40):
            before = _events(sandbox.db)
            body = {"nickname": f"p{i}", "description": "y" * 1000}
            r = sandbox.post("/v2/profiles", body)
            listed = sandbox.get("/v2/profiles", params={"nickname": f"p{i}"}).json()["items"]
            if r.status_code == 503:
                _assert_503(r, "full")
                refused += 1
                assert _events(sandbox.db) == before and listed == []
            else:
                assert r.status_code == 200, r.text
                assert _events(sandbox.db) > before and len(listed) == 1
    finally:
        conn.execute("PRAGMA max_page_count = 4294967294")
    assert refused > 0
    _works_again(sandbox)


def test_a_locked_database_answers_503_and_writes_nothing(sandbox: Any) -> None:
    sandbox.deposit("BTC", "1")
    sandbox.engine.store.conn.execute("PRAGMA busy_timeout = 50")
    other = sqlite3.connect(sandbox.db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        _writes_fail_then_recover(sandbox, "locked")
    finally:
        other.execute("ROLLBACK")
        other.close()
    _works_again(sandbox)


def test_a_log_that_cannot_be_read_back_stops_every_decision_until_it_can(
    sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed commit reloads the state from the log; if the log cannot be read, the
    in-memory state may hold what the log does not, so the writer decides nothing."""
    sandbox.deposit("BTC", "1")
    store = sandbox.engine.store

    def unreadable(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.DatabaseError("database disk image is malformed")

    def failing_commit(*args: Any, **kwargs: Any) -> None:
        from sandex.engine.store import StoreUnavailable

        raise StoreUnavailable("disk I/O error")

    monkeypatch.setattr(store, "write", failing_commit)
    monkeypatch.setattr(store, "read", unreadable)
    monkeypatch.setattr(store, "scan", unreadable)  # the start-up replay's read
    _assert_503(sandbox.post(DEPOSIT, {"asset": "BTC", "amount": "1"}), "I/O error")
    monkeypatch.undo()  # the commit would work now, but the state is not to be trusted
    monkeypatch.setattr(store, "read", unreadable)
    monkeypatch.setattr(store, "scan", unreadable)
    _assert_503(sandbox.post(DEPOSIT, {"asset": "BTC", "amount": "1"}), "cannot be read")
    monkeypatch.undo()
    _works_again(sandbox)
    assert sandbox.balance("BTC")["available"] == "2"


def test_a_decision_that_raises_a_bug_answers_500_and_the_writer_lives_on(
    sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.deposit("BTC", "1")

    def bug(ctx: Any, cmd: Any) -> Any:
        raise KeyError("a bug")

    monkeypatch.setitem(sandbox.engine.registry.deciders, SandboxDeposit, bug)
    r = sandbox.post(DEPOSIT, {"asset": "BTC", "amount": "1"})
    assert r.status_code == 500 and "a bug" not in r.text
    monkeypatch.undo()
    _works_again(sandbox)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: p / "missing" / "dir" / "x.db", "unable to open"),
        (lambda p: (p / "adir").mkdir() or p / "adir", "it is a directory"),
        (lambda p: _truncated(p), "malformed"),
    ],
)
def test_a_database_that_cannot_be_opened_is_a_clear_start_up_error(
    tmp_path: Path, make: Any, words: str
) -> None:
    db = make(tmp_path)
    done = subprocess.run(
        [*SANDEX, "serve", "--db", str(db), "--port", str(free_port())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr


def _truncated(tmp: Path) -> Path:
    """A real database cut in half, as a crashed copy or a full disk can leave one."""
    db = tmp / "whole.db"
    engine = open_engine(db, make_settings())
    with engine:
        made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
        actor = Actor(made["customer_id"], "c")
        for _ in range(300):
            engine.execute(
                SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
            )
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = db.read_bytes()
    cut = tmp / "cut.db"
    cut.write_bytes(data[: len(data) // 2])
    return cut


# -- the wall clock steps back -------------------------------------------------------------


def test_a_wall_clock_stepping_back_reorders_nothing_and_expires_nothing_early(
    tmp_path: Path,
) -> None:
    db = tmp_path / "wall.db"
    settings = make_settings(clock="wall", withdrawal_fee_ttl_seconds=60)
    noon = datetime(2030, 6, 1, 12, 0, tzinfo=UTC)
    # freezegun answers real time to code called near `threading` frames, and the
    # writer thread's clock reads are: freeze the writer thread's time as well.
    freezer = freeze_time(noon)
    freezer.ignore = tuple(m for m in freezer.ignore if m != "threading")
    with freezer as frozen:
        engine = open_engine(db, settings).start()
        made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
        actor = Actor(made["customer_id"], "c")
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"))
        quote = engine.execute(
            CreateWithdrawalFee(
                actor=actor,
                asset="BTC",
                destination_address=ADDRESS,
                crypto_network="BITCOIN",
                amount="0.001",
            )
        )
        frozen.move_to(noon - timedelta(hours=3))  # NTP steps the clock back three hours
        for _ in range(3):
            engine.execute(
                SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
            )
        engine.stop()
        engine = open_engine(db, settings).start()  # a restart while the wall clock is behind
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"))
        frozen.move_to(noon + timedelta(seconds=59))
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"))
        status = _quote_status(db, quote["id"])
        assert status == "ACTIVE"  # 59 s of real time have not passed since the quote
        frozen.move_to(noon + timedelta(seconds=61))
        engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1"))
        assert _quote_status(db, quote["id"]) == "EXPIRED"
        engine.stop()
    conn = sqlite3.connect(db)
    times = [row[0] for row in conn.execute("SELECT occurred_at FROM events ORDER BY position")]
    conn.close()
    assert times == sorted(times)
    assert times[-1] >= "2030-06-01T12:01:00"
    assert all(t >= "2030-06-01T12:00:00" for t in times)


def _quote_status(db: Path, quote_id: str) -> str:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT type FROM events WHERE stream LIKE ? ORDER BY position",
            (f"%{quote_id}%",),
        ).fetchall()
    finally:
        conn.close()
    types = [r[0] for r in rows]
    assert types and types[0] == "WithdrawalFeeQuoted", types
    return "EXPIRED" if "WithdrawalFeeExpired" in types else "ACTIVE"


@pytest.mark.parametrize("kind", ["foreign file", "directory"])
def test_a_database_that_cannot_be_opened_leaves_no_wal_nor_shm_beside_it(
    tmp_path: Path, kind: str
) -> None:
    """The writer makes a database's `-wal` and `-shm` before SQLite opens it; a file
    that is no database, or a directory, keeps nothing of that beside it."""
    from sandex.engine.store import SqliteEventStore, StoreUnavailable

    db = tmp_path / "not.db"
    if kind == "directory":
        db.mkdir()
    else:
        db.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreUnavailable, match="cannot open database"):
        SqliteEventStore(db)
    assert [p.name for p in tmp_path.iterdir()] == ["not.db"]
