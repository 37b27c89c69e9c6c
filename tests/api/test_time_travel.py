"""Time travel: a new database holding the state as it was at a past position or time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from sandex.api_adapter.cli import main
from sandex.engine.kernel.clock import parse_time
from sandex.engine.runtime.composition import TABLES
from sandex.engine.tools.time_travel import log_hash, travel
from sandex.engine.tools.verify import verify
from tests.conftest import START, Sandbox, make_settings
from tests.support.database import execute, query
from tests.support.transfer_helpers import withdraw


def _events(db: Path | str) -> list[tuple[Any, ...]]:
    return query(db, "SELECT position, type, meta, occurred_at FROM events ORDER BY position")


def _balance(db: Path, asset: str) -> dict[str, str]:
    sb = Sandbox(db, make_settings())
    try:
        return sb.balance(asset)
    finally:
        sb.close()


def test_travel_to_a_position_and_to_a_time(sandbox: Any, tmp_path: Path) -> None:
    sandbox.deposit("BTC", "1")
    sandbox.advance(60)
    after_first = sandbox.engine.state.position
    sandbox.deposit("BTC", "2")
    sandbox.advance(60)
    sandbox.deposit("BTC", "4")
    sandbox.close()

    by_position = travel(sandbox.db, tmp_path / "p.db", position=after_first)
    assert by_position.position == after_first
    assert verify(str(tmp_path / "p.db")) == []
    assert _balance(tmp_path / "p.db", "BTC")["available"] == "1"

    by_time = travel(sandbox.db, tmp_path / "t.db", until=parse_time("2024-01-01T00:01:30Z"))
    assert verify(str(tmp_path / "t.db")) == []
    assert _balance(tmp_path / "t.db", "BTC")["available"] == "3"
    assert by_time.occurred_at <= "2024-01-01T00:01:30.000000Z"

    # the kept log is the source's prefix, byte for byte
    whole = _events(sandbox.db)
    assert _events(tmp_path / "t.db") == whole[: by_time.position]

    everything = travel(sandbox.db, tmp_path / "all.db", position=10**9)
    assert everything.position == whole[-1][0]
    assert log_hash(tmp_path / "all.db") == log_hash(sandbox.db)
    with pytest.raises(FileExistsError):
        travel(sandbox.db, tmp_path / "all.db", position=1)


def test_a_cut_inside_a_decision_moves_back_to_its_start(sandbox: Any, tmp_path: Path) -> None:
    sandbox.deposit("BTC", "1")
    before = sandbox.engine.state.position
    r = sandbox.post(
        "/v2/profiles",
        {"nickname": "desk"},
    )
    assert r.status_code == 200
    desk = r.json()["id"]
    moved = sandbox.post(
        "/v2/transfer/internal",
        {"from_profile_id": "default", "to_profile_id": desk, "asset": "BTC", "amount": "0.5"},
    )
    assert moved.status_code == 200, moved.text
    sandbox.close()
    events = _events(sandbox.db)
    pair = [e for e in events if e[1] == "TransferCreated"][-2:]
    first = orjson.loads(pair[0][2])["command_position"]
    assert orjson.loads(pair[1][2])["command_position"] == first
    # a cut between the debit and the credit would leave money in transit
    done = travel(sandbox.db, tmp_path / "cut.db", position=pair[0][0])
    assert done.asked == pair[0][0] and done.position == first - 1 > before
    assert verify(str(tmp_path / "cut.db")) == []


def test_the_command_line_writes_a_database_that_verifies(
    sandbox: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sandbox.deposit("BTC", "1")
    sandbox.advance(10)
    sandbox.deposit("BTC", "1")
    sandbox.close()
    out = tmp_path / "then.db"
    when = "2024-01-01T00:00:05Z"
    assert main(["time-travel", "--db", str(sandbox.db), "--until", when, "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert main(["verify", "--db", str(out)]) == 0
    assert capsys.readouterr().out.startswith("OK")
    assert _balance(out, "BTC")["available"] == "1"
    bad = ["time-travel", "--db", str(sandbox.db), "--until", "next tuesday", "--out", "x.db"]
    assert main(bad) == 2
    assert "--until" in capsys.readouterr().err


def test_travel_across_a_restore_lands_before_or_after_it(sandbox: Any, tmp_path: Path) -> None:
    sandbox.deposit("BTC", "1")
    assert sandbox.post("/v2/sandbox/snapshots", {"name": "one"}).status_code == 200
    sandbox.deposit("BTC", "2")
    before_restore = sandbox.engine.state.position
    assert sandbox.post("/v2/sandbox/snapshots/one/restore").status_code == 200
    sandbox.close()
    travel(sandbox.db, tmp_path / "before.db", position=before_restore)
    travel(sandbox.db, tmp_path / "after.db", until=START.replace(year=2030))
    assert _balance(tmp_path / "before.db", "BTC")["available"] == "3"
    assert _balance(tmp_path / "after.db", "BTC")["available"] == "1"
    assert verify(str(tmp_path / "before.db")) == verify(str(tmp_path / "after.db")) == []


def _tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    return {t: sorted(query(db, f"SELECT * FROM {t}"), key=repr) for t in TABLES}


def test_travel_starts_from_a_state_snapshot_and_lands_where_a_full_replay_does(
    sandbox_factory: Any, tmp_path: Path
) -> None:
    sb = sandbox_factory("snapped.db", snapshot_every_events=10)
    for _ in range(12):
        sb.deposit("BTC", "1")
        withdraw(sb, amount="0.001")
    sb.engine.wait_for_snapshot(30)
    sb.deposit("BTC", "1")  # the writer stores the snapshot handed to it
    sb.engine.wait_for_snapshot(30)
    sb.advance(30)
    cut = sb.engine.state.position - 1
    sb.close()
    fast = travel(sb.db, tmp_path / "fast.db", position=cut)
    assert 0 < fast.base <= cut
    plain = tmp_path / "plain.db"
    execute(sb.db, "DELETE FROM state_snapshots")
    slow = travel(sb.db, plain, position=cut)
    assert slow.base == 0 and slow.position == fast.position
    assert _tables(tmp_path / "fast.db") == _tables(plain)
    assert verify(str(tmp_path / "fast.db")) == []
