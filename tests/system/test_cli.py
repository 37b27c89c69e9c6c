"""The `sandex` command line as a user runs it: a real server process, restarts,
README examples, and the log tools (events, rebuild, verify)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from tests.support.server_helpers import ROOT, SANDEX, Server, free_port, readme_blocks


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SANDEX, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_serve_bootstraps_prints_credentials_restarts_with_everything_and_stops_cleanly(
    tmp_path: Path,
    servers: list[Server],
) -> None:
    db = tmp_path / "live.db"
    server = Server(db)
    servers.append(server)
    headers = server.token()
    r = httpx.post(
        f"{server.base}/v2/sandbox/profiles/default/deposit",
        json={"asset": "BTC", "amount": "0.25"},
        headers=headers,
    )
    assert r.status_code == 200
    assert r.headers["x-request-id"]
    code, out, err = server.stop()
    assert code == 0
    assert f"{server.base}/v2" in out and "sandex-secret" in out
    access = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any(
        line.get("path", "").endswith("/deposit") and line["status"] == 200 for line in access
    )
    assert all("request_id" in line for line in access if line.get("event") == "request")
    assert "sandex-secret" not in err and headers["Authorization"][7:] not in err

    again = Server(db)
    servers.append(again)
    balance = httpx.get(f"{again.base}/v2/profiles/default/balances/BTC", headers=headers)
    assert balance.json()["available"] == "0.25"  # the old token still works, and the data is there
    profiles = httpx.get(f"{again.base}/v2/profiles", headers=headers).json()["items"]
    assert len(profiles) == 1  # no second bootstrap
    assert again.stop()[0] == 0
    assert _run("verify", "--db", str(db)).returncode == 0


def test_bootstrap_credentials_come_from_the_environment(
    tmp_path: Path,
    servers: list[Server],
) -> None:
    server = Server(
        tmp_path / "env.db", env={"SANDEX_CLIENT_ID": "me", "SANDEX_CLIENT_SECRET": "pw"}
    )
    servers.append(server)
    assert (
        httpx.get(f"{server.base}/v2/profiles", headers=server.token("me", "pw")).status_code == 200
    )
    r = httpx.post(
        f"{server.base}/oauth2/token",
        data={
            "grant_type": "client_credentials",
            "client_id": "sandex",
            "client_secret": "sandex-secret",
        },
    )
    assert r.status_code == 401


def test_the_readme_curl_examples_work_as_written(
    tmp_path: Path,
    servers: list[Server],
) -> None:
    # With the default rate limits: each block logs in, back to back within a second,
    # which the real service's limit (1/s per address on average over five minutes)
    # allows. The wire example moves the clock, as the README starts that sandbox to.
    server = Server(tmp_path / "readme.db", "--clock", "manual")
    servers.append(server)
    blocks = readme_blocks()
    assert len(blocks) >= 2
    outputs = []
    for block in blocks:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            env={**os.environ, "BASE": server.base},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert '"available":"1.5"' in outputs[0]
    assert '"type":"WIRE_DEPOSIT"' in outputs[1] and '"status":"COMPLETED"' in outputs[1]
    for field in ('"amount":"150.33"', '"fee":"30"', '"total":"120.33"'):  # the real figures
        assert field in outputs[1]
    assert '"asset":"USD","available":"120.33"' in outputs[1]


def test_a_readme_block_whose_login_fails_says_why(
    tmp_path: Path,
    servers: list[Server],
) -> None:
    """A refused login (here a 401: the server's bootstrap secret is another) stops the
    block with curl's status and a message, not a Python traceback, and sends nothing
    more; also in a shell without -e."""
    server = Server(tmp_path / "other.db", env={"SANDEX_CLIENT_SECRET": "another-secret"})
    servers.append(server)
    done = subprocess.run(
        ["bash", "-c", readme_blocks()[0]],
        env={**os.environ, "BASE": server.base},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and done.stdout == ""
    assert "The requested URL returned error: 401" in done.stderr
    assert "no access token" in done.stderr and "Traceback" not in done.stderr


def _populated(sandbox_factory: Any) -> Path:
    sandbox = sandbox_factory("tools.db")
    sandbox.deposit("BTC", "1")
    sandbox.post("/v2/profiles", {"nickname": "desk"})
    sandbox.deposit("USD", "250.5")
    sandbox.close()
    copy = sandbox.db.with_name("copy.db")  # tests tamper with a copy, not the verified original
    shutil.copy(sandbox.db, copy)
    shutil.copy(f"{sandbox.db}.key", f"{copy}.key")  # a copy whole: verify checks its keys
    return copy  # type: ignore[no-any-return]


def test_events_prints_the_log_as_json_lines(sandbox_factory: Any) -> None:
    db = _populated(sandbox_factory)
    lines = [json.loads(x) for x in _run("events", "--db", str(db)).stdout.splitlines()]
    assert [e["position"] for e in lines] == list(range(1, len(lines) + 1))
    assert {
        "position",
        "stream",
        "version",
        "type",
        "schema",
        "data",
        "meta",
        "occurred_at",
    } <= set(lines[0])
    after = [
        json.loads(x) for x in _run("events", "--db", str(db), "--after", "3").stdout.splitlines()
    ]
    assert after[0]["position"] == 4
    stream = lines[-1]["stream"]
    only = [
        json.loads(x)
        for x in _run("events", "--db", str(db), "--stream", stream).stdout.splitlines()
    ]
    assert {e["stream"] for e in only} == {stream}


def _tables(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    from sandex.engine.runtime.composition import TABLES

    conn = sqlite3.connect(db)
    try:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in TABLES}
    finally:
        conn.close()


def test_rebuild_gives_the_live_tables_row_for_row(sandbox_factory: Any) -> None:
    db = _populated(sandbox_factory)
    live = _tables(db)
    assert any(live.values())
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM balances")
    conn.execute("UPDATE profiles SET nickname = 'tampered'")
    conn.commit()
    conn.close()
    done = _run("rebuild", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert _tables(db) == live


def test_verify_names_the_first_broken_invariant(sandbox_factory: Any) -> None:
    db = _populated(sandbox_factory)
    assert _run("verify", "--db", str(db)).returncode == 0
    conn = sqlite3.connect(db)
    conn.execute("UPDATE balances SET available = '1000000' WHERE asset = 'BTC'")
    conn.commit()
    done = _run("verify", "--db", str(db))
    assert done.returncode == 1
    assert "read model balances differs" in done.stdout
    _run("rebuild", "--db", str(db))
    # A posting that takes more than a profile holds: the ledger refuses it on replay.
    row = conn.execute(
        "SELECT position, data FROM events WHERE type = 'TransferCreated' LIMIT 1"
    ).fetchone()
    data = json.loads(row[1])
    source, target, asset, amount = data["postings"][0]
    data["postings"].append([target, source, asset, str(2 * Decimal(amount))])
    conn.execute("UPDATE events SET data = ? WHERE position = ?", (json.dumps(data), row[0]))
    conn.commit()
    conn.close()
    done = _run("verify", "--db", str(db))
    assert done.returncode == 1
    assert f"at position {row[0]}" in done.stdout and "negative" in done.stdout


def test_verify_finds_a_gap_in_the_log(sandbox_factory: Any) -> None:
    db = _populated(sandbox_factory)
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM events WHERE position = 2")
    conn.commit()
    conn.close()
    done = _run("verify", "--db", str(db))
    assert done.returncode == 1
    assert "log gap" in done.stdout


def test_a_corrupt_database_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    db = tmp_path / "corrupt.db"
    db.write_bytes(b"this is not a database" * 100)
    done = _run("serve", "--db", str(db), "--port", str(free_port()))
    assert done.returncode == 2
    assert "cannot open database" in done.stderr
    assert "Traceback" not in done.stderr
