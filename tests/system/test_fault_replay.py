"""Faults recorded and replayed (issue 31): a seeded rule fails the same calls on a
replay of the recording; a fault that fires after a commit is logged after it and a
SIGKILL right after the answer loses neither; a dropped answer's retry finds the one
withdrawal. Each against a real `sandex serve`."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import httpx

from tests.support.crash_helpers import verify
from tests.support.server_helpers import ROOT, SANDEX, Process, Server, servers  # noqa: F401

CALLS = 200
ORDER = {"side": "BUY", "market": "BTCUSD", "type": "MARKET", "quote_amount": "10"}
# A replayed step's line: `  ok    12  POST /v2/profiles/default/orders -> 503`.
STEP = re.compile(r"^\s+(?:ok|FAIL)\s+\d+\s+(\S+) (\S+).* -> (\d+)$")


def _events(db: Path) -> list[tuple[int, str, dict[str, Any], dict[str, Any]]]:
    """(position, type, data, meta) of every event, in log order."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT position, type, data, meta FROM events ORDER BY position")
        return [(p, t, json.loads(d), json.loads(m)) for p, t, d, m in rows.fetchall()]
    finally:
        conn.close()


def _arm(base: str, auth: dict[str, str], rule: dict[str, Any]) -> dict[str, Any]:
    r = httpx.post(f"{base}/v2/sandbox/faults", json=rule, headers=auth)
    assert r.status_code == 200, r.text
    armed: dict[str, Any] = r.json()
    return armed


def test_a_seeded_rule_fails_the_same_calls_on_a_replay_of_the_recording(
    tmp_path: Path,
    servers: list[Server],  # noqa: F811
) -> None:
    recording = tmp_path / "session.yaml"
    live = Server(
        tmp_path / "live.db",
        *("--clock", "manual", "--seed", "31", "--no-rate-limits"),
        *("--record", str(recording)),
    )
    servers.append(live)
    admin = live.token()
    with httpx.Client(base_url=live.base, headers=admin, timeout=30) as c:
        deposit = {"asset": "USD", "amount": "100000"}
        assert c.post("/v2/sandbox/profiles/default/deposit", json=deposit).status_code == 200
        rule = {
            "match": {"operation": "CreateOrder"},
            "when": "before",
            "action": {"problem": {"status": 503}},
            "probability": "0.3",
        }
        _arm(live.base, admin, rule)
        statuses = [c.post("/v2/profiles/default/orders", json=ORDER).status_code for _ in range(CALLS)]  # fmt: skip
    live.stop()
    assert set(statuses) == {200, 503}
    failed = [i for i, status in enumerate(statuses) if status == 503]
    assert 0 < len(failed) < CALLS

    text = recording.read_text()
    assert text.count("- fault:") == 1 and "probability: '0.3'" in text
    replay = subprocess.run(
        [*SANDEX, "replay", str(recording), "--out", str(tmp_path / "replay.db")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert replay.returncode == 0, replay.stdout[-3000:] + replay.stderr
    replayed = [
        int(m.group(3))
        for m in map(STEP.match, replay.stdout.splitlines())
        if m and m.group(1) == "POST" and m.group(2).endswith("/orders")
    ]
    assert len(replayed) == CALLS
    assert [i for i, status in enumerate(replayed) if status == 503] == failed
    # and in the logs: the same decisions, fired and passed, in the same order
    decided = [
        [(t, d.get("match"), d.get("draw")) for _, t, d, _ in _events(db) if "SandboxFault" in t]
        for db in (tmp_path / "live.db", tmp_path / "replay.db")
    ]
    assert decided[0] == decided[1]
    assert sum(t == "SandboxFaultFired" for t, _, _ in decided[0]) == len(failed)


def _token(base: str) -> dict[str, str]:
    form = {"grant_type": "client_credentials", "client_id": "sandex"}
    r = httpx.post(f"{base}/oauth2/token", data={**form, "client_secret": "sandex-secret"})
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def test_a_fault_after_commit_is_logged_after_it_and_a_kill_loses_neither(
    tmp_path: Path,
) -> None:
    db, log = tmp_path / "after.db", tmp_path / "server.log"
    server = Process(db, log)
    try:
        admin = _token(server.base)
        deposit = {"asset": "USD", "amount": "1000"}
        r = httpx.post(f"{server.base}/v2/sandbox/profiles/default/deposit", json=deposit, headers=admin)  # fmt: skip
        assert r.status_code == 200, r.text
        rule = {
            "match": {"operation": "CreateOrder"},
            "when": "after",
            "action": {"problem": {"status": 500}},
            "times": 1,
        }
        _arm(server.base, admin, rule)
        sent = {**admin, "X-Request-ID": "after-commit-1"}
        r = httpx.post(f"{server.base}/v2/profiles/default/orders", json=ORDER, headers=sent)
        assert r.status_code == 500 and r.headers["content-type"] == "application/problem+json"
    finally:
        server.kill()  # right after the answer: nothing had time to settle

    def logged() -> tuple[list[int], list[int]]:
        events = _events(db)
        placed = [p for p, t, _, m in events if m.get("request_id") == "after-commit-1" and not t.startswith("SandboxFault")]  # fmt: skip
        fired = [p for p, t, d, _ in events if t == "SandboxFaultFired" and d["when"] == "after"]
        return placed, fired

    placed, fired = logged()
    assert placed and len(fired) == 1
    assert max(placed) < fired[0]  # the decision follows the commit it spoiled
    server = Process(db, log)  # a restart on the same database
    try:
        orders = httpx.get(f"{server.base}/v2/profiles/default/orders", headers=_token(server.base))
        assert [o["status"] for o in orders.json()["items"]] == ["FILLED"]
    finally:
        server.stop()
    assert logged() == (placed, fired)
    verify(db)


def test_the_benchmarks_baseline_server_runs_without_the_fault_gate(
    tmp_path: Path,
    servers: list[Server],  # noqa: F811
) -> None:
    """bench_faults's baseline: `SANDEX_NO_FAULT_GATE=1` starts a server whose rules are
    kept but never fire (with the gate such a rule fires, as in the tests above)."""
    server = Server(tmp_path / "bare.db", "--no-rate-limits", env={"SANDEX_NO_FAULT_GATE": "1"})
    servers.append(server)
    admin = server.token()
    rule = {"match": {"operation": "ListProfiles"}, "action": {"problem": {"status": 503}}}
    _arm(server.base, admin, rule)
    assert httpx.get(f"{server.base}/v2/profiles", headers=admin).status_code == 200
    listed = httpx.get(f"{server.base}/v2/sandbox/faults", headers=admin).json()["items"]
    assert len(listed) == 1
    server.stop()
