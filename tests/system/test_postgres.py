"""sandex on PostgreSQL as a user runs it: the same scenario on SQLite and PostgreSQL
leaves the same log hash and read-model rows; every `--db` verb takes a
`postgresql://` URL; `sandex copy` moves a whole log both ways, verified.

On a real server (tests/support/postgres_server.py: a throwaway cluster, or
SANDEX_TEST_POSTGRES); skipped, saying why, where there is none."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandex.api_adapter.scenarios.runner import run_in_process
from sandex.engine.tools.scenario_file import load_file
from sandex.engine.tools.time_travel import log_hash
from tests.support.golden_helpers import read_models
from tests.support.server_helpers import ROOT, SANDEX, Server

SCENARIO = ROOT / "scenarios" / "events_feed_orders_and_transfers.yaml"
STOP_LOSS = ROOT / "scenarios" / "backtests" / "stop_loss.yaml"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SANDEX, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_scenario_leaves_the_same_log_and_rows_on_sqlite_and_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    scenario = load_file(SCENARIO)
    on_sqlite = run_in_process(scenario, keep_db=tmp_path / "s.db", check_invariants=True)
    on_postgres = run_in_process(scenario, db=postgres_url, check_invariants=True)
    assert on_sqlite.ok and on_postgres.ok
    assert on_sqlite.log_hash is not None
    assert on_postgres.log_hash == on_sqlite.log_hash
    assert read_models(postgres_url) == read_models(tmp_path / "s.db")
    assert sum(len(rows) for rows in read_models(postgres_url).values()) > 0


@pytest.mark.slow  # two server processes and six commands: about 13 s
def test_every_db_verb_takes_a_postgresql_url(
    tmp_path: Path,
    postgres_url: str,
    servers: list[Server],  # noqa: F811 - the fixture
) -> None:
    server = Server(postgres_url)  # type: ignore[arg-type]
    servers.append(server)
    headers = server.token()
    r = httpx.post(
        f"{server.base}/v2/sandbox/profiles/default/deposit",
        json={"asset": "USD", "amount": "1000"},
        headers=headers,
    )
    assert r.status_code == 200, r.text
    order = {"market": "BTCUSD", "type": "LIMIT", "side": "BUY", "price": "20000.00"}
    order["base_amount"] = "0.001"
    r = httpx.post(f"{server.base}/v2/profiles/default/orders", json=order, headers=headers)
    assert r.status_code == 200, r.text
    code, out, _ = server.stop()
    assert code == 0 and "sandex serving" in out

    again = Server(postgres_url)  # type: ignore[arg-type]
    servers.append(again)
    balance = httpx.get(f"{again.base}/v2/profiles/default/balances/USD", headers=headers)
    assert balance.status_code == 200 and balance.json()["trading"] == "20"
    assert again.stop()[0] == 0

    assert _run("verify", "--db", postgres_url).returncode == 0
    rebuilt = _run("rebuild", "--db", postgres_url)
    assert rebuilt.returncode == 0, rebuilt.stderr
    listed = _run("events", "--db", postgres_url)
    assert listed.returncode == 0, listed.stderr
    events = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [e["position"] for e in events] == list(range(1, len(events) + 1))
    assert "OrderPlaced" in {e["type"] for e in events}

    cut = tmp_path / "cut.db"
    travelled = _run("time-travel", "--db", postgres_url, "--until", "3", "--out", str(cut))
    assert travelled.returncode == 0, travelled.stderr
    assert _run("verify", "--db", str(cut)).returncode == 0
    assert _run("verify", "--db", "postgresql://nobody@/nothing?host=/nonexistent").returncode == 2


def test_a_backtest_writes_its_database_on_postgresql(tmp_path: Path, postgres_url: str) -> None:
    def backtest(db: str) -> str:
        done = _run("backtest", "--flow", str(STOP_LOSS), "--deposit", "USD=60000", "--db", db)
        assert done.returncode == 0, done.stderr
        found = re.search(r"log (sha256:[0-9a-f]+)", done.stdout)
        assert found is not None, done.stdout
        return found.group(1)

    on_sqlite = backtest(str(tmp_path / "bt.db"))
    assert backtest(postgres_url) == on_sqlite
    assert log_hash(postgres_url) == on_sqlite
    assert _run("verify", "--db", postgres_url).returncode == 0
    again = _run(
        "backtest", "--flow", str(STOP_LOSS), "--deposit", "USD=60000", "--db", postgres_url
    )
    assert again.returncode != 0 and "holds events" in again.stderr


def test_copy_moves_a_whole_log_to_postgresql_and_back(
    tmp_path: Path, postgres_url: str, sandbox_factory: Any
) -> None:
    sb = sandbox_factory("source.db")
    sb.deposit("USD", "1000")
    headers, _ = sb.tenant()
    sb.deposit("BTC", "0.5", headers=headers)
    source = sb.db
    sb.close()
    there = _run("copy", "--from", str(source), "--to", postgres_url)
    assert there.returncode == 0, there.stderr
    assert log_hash(postgres_url) == log_hash(source)
    assert read_models(postgres_url) == read_models(source)
    back = tmp_path / "back.db"
    home = _run("copy", "--from", postgres_url, "--to", str(back))
    assert home.returncode == 0, home.stderr
    assert log_hash(back) == log_hash(source)
    assert read_models(back) == read_models(source)
    assert _run("verify", "--db", str(back)).returncode == 0
    again = _run("copy", "--from", str(source), "--to", postgres_url)
    assert again.returncode == 2 and "holds events already" in again.stderr
    # the copy opens with the source's keys: the bootstrap client's token still works
    reopened = type(sb)(back, sb.engine.settings)
    try:
        assert reopened.balance("USD")["available"] == "1000"
    finally:
        reopened.close()


class _Killed(BaseException):
    """The copying process dies here: nothing after it runs, no handler tidies up."""


def _copied_source(sandbox_factory: Any) -> Path:
    """A closed SQLite database with a tenant, funds and a sealed webhook secret."""
    sb = sandbox_factory("source.db")
    sb.deposit("USD", "1000")
    headers, _ = sb.tenant()
    sb.deposit("BTC", "0.5", headers=headers)
    assert sb.post("/v2/sandbox/webhooks", {"url": "https://hooks.example.com/a"}).is_success
    sb.close()
    return Path(sb.db)


def _die_at(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, call: int = 1) -> None:
    """The `call`-th call of `owner.name` kills the copy before it does anything."""
    real = getattr(owner, name)
    calls = [0]

    def dying(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == call:
            raise _Killed(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, dying)


@pytest.mark.parametrize(
    ("step", "call"),
    [
        ("load_events", 1),  # the metas are in; no event
        ("load_rows", 3),  # the log is in; two read-model tables of many
        ("set_checkpoint", 1),  # every row is in; the checkpoint still 0
        ("_copy_keys", 1),  # the log and read models whole; no key file
        ("erase_meta", 1),  # the key file written; the copy not yet marked whole
    ],
)
def test_a_copy_to_postgresql_stopped_at_any_step_is_refused_by_serve_and_fails_verify(
    postgres_url: str, sandbox_factory: Any, monkeypatch: pytest.MonkeyPatch, step: str, call: int
) -> None:
    """Before, the unfinished target was served (with new keys: the source's tokens 401
    and the webhook secret lost; or with half its read models), and a copy stopped
    before its key file passed verify."""
    import sandex.engine.tools.copy as copy_tool
    from sandex.engine.store.postgres import PostgresEventStore

    source = _copied_source(sandbox_factory)
    _die_at(monkeypatch, copy_tool if step == "_copy_keys" else PostgresEventStore, step, call)
    with pytest.raises(_Killed):
        copy_tool.copy(source, postgres_url)
    monkeypatch.undo()
    served = _run("serve", "--db", postgres_url, "--port", "0")
    assert served.returncode == 2, served.stdout
    assert served.stdout == ""
    lines = served.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sandex: "), served.stderr
    assert "unfinished copy" in lines[0] and "copy again" in lines[0]
    verified = _run("verify", "--db", postgres_url)
    assert verified.returncode != 0
    assert "unfinished copy" in verified.stdout + verified.stderr


def test_verify_checks_the_key_file_of_a_finished_copy(
    tmp_path: Path, postgres_url: str, sandbox_factory: Any
) -> None:
    """A finished copy carries the source's key file; verify fails the copy without it,
    or with another database's, which opens none of its webhook secrets."""
    from sandex.engine.runtime.key_file import path_for
    from sandex.engine.tools.verify import verify

    source = _copied_source(sandbox_factory)
    assert _run("copy", "--from", str(source), "--to", postgres_url).returncode == 0
    assert verify(postgres_url) == []
    keys = path_for(postgres_url)
    assert keys is not None and keys.read_bytes() == Path(f"{source}.key").read_bytes()
    kept = keys.read_bytes()
    keys.unlink()
    problems = verify(postgres_url)
    assert len(problems) == 1 and f"key file {keys} is missing" in problems[0]
    other = sandbox_factory("other.db")
    other.close()
    keys.write_bytes(Path(f"{other.db}.key").read_bytes())
    problems = verify(postgres_url)
    assert len(problems) == 1 and "does not open webhook" in problems[0], problems
    keys.write_bytes(kept)
    assert verify(postgres_url) == []


def test_a_copy_from_postgresql_to_sqlite_leaves_no_partial_file(
    tmp_path: Path, postgres_url: str, sandbox_factory: Any
) -> None:
    source = _copied_source(sandbox_factory)
    assert _run("copy", "--from", str(source), "--to", postgres_url).returncode == 0
    back = tmp_path / "back" / "back.db"
    back.parent.mkdir()
    home = _run("copy", "--from", postgres_url, "--to", str(back))
    assert home.returncode == 0, home.stderr
    left = sorted(p.name for p in back.parent.iterdir())
    assert "back.db" in left and "back.db.key" in left
    assert [name for name in left if ".partial" in name] == [], left
    assert _run("verify", "--db", str(back)).returncode == 0


@pytest.mark.parametrize("bad", ["postgresql://nobody@/nothing?host=/nonexistent"])
def test_an_unreachable_server_is_one_line(bad: str) -> None:
    done = _run("events", "--db", bad)
    assert done.returncode == 2
    assert done.stderr.startswith("sandex: ") and "Traceback" not in done.stderr


def test_one_writer_per_postgresql_database(postgres_url: str) -> None:
    """The writer lease is a session advisory lock: a second engine and a rebuild are
    refused while one runs, and the lease is free again once it stops."""
    from sandex.engine import open_engine
    from sandex.engine.store import LeaseHeld
    from sandex.engine.tools.verify import rebuild

    first = open_engine(postgres_url).start()
    try:
        with pytest.raises(LeaseHeld, match="in use by another sandex writer"):
            open_engine(postgres_url)
        with pytest.raises(LeaseHeld):
            rebuild(postgres_url)
    finally:
        first.stop()
    open_engine(postgres_url).stop()
