"""Faults recorded and replayed (issue 31): a seeded rule fails the same calls on a
replay of the recording; a fault that fires after a commit is logged after it and a
SIGKILL right after the answer loses neither; a dropped answer's retry finds the one
withdrawal. Each against a real `sandex serve`."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandex.api_adapter.scenarios.runner import run_in_process, run_remote
from sandex.engine.tools.scenario_file import load, load_file
from tests.support.crash_helpers import verify
from tests.support.server_helpers import ROOT, SANDEX, Process, Server
from tests.support.transfer_helpers import withdrawal_body

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


def test_a_dropped_withdrawal_answer_is_found_by_its_retry_held_once_and_replayed(
    tmp_path: Path,
) -> None:
    """The Done-means drop: the client never hears of the withdrawal it made; its retry
    with the same ref_id is told it exists (the real service's already-exists) and the
    ledger holds it once. The recording writes the lost answer as `expect: {wire: drop}`,
    keeps a fault's 429 and the Prefer header that asked for it, and replays green."""
    db, recording = tmp_path / "drop.db", tmp_path / "drop.yaml"
    server = Process(db, tmp_path / "server.log", "--clock", "manual", "--record", str(recording))
    try:
        admin = _token(server.base)
        with httpx.Client(base_url=server.base, headers=admin, timeout=30) as c:
            deposit = {"asset": "BTC", "amount": "1", "crypto_network": "BITCOIN"}
            assert c.post("/v2/sandbox/profiles/default/deposit", json=deposit).status_code == 200
            rule = {
                "match": {"operation": "CreateCryptoWithdrawal"},
                "when": "after",
                "action": {"drop": True},
                "times": 1,
            }
            _arm(server.base, admin, rule)
            body = withdrawal_body(ref_id="payout-1")
            with pytest.raises(httpx.RemoteProtocolError):  # no answer at all
                c.post("/v2/transfer/crypto-withdrawals", json=body)
            retry = c.post("/v2/transfer/crypto-withdrawals", json=body)
            assert retry.status_code == 409, retry.text
            assert retry.json()["type"].endswith("/already-exists")
            existing = retry.json()["meta"]["existing"]
            listed = c.get("/v2/transfer/transfers").json()["items"]
            withdrawals = [t["id"] for t in listed if t["type"] == "CRYPTO_WITHDRAWAL"]
            assert withdrawals == [existing["id"]]
            balance = c.get("/v2/profiles/default/balances/BTC").json()
            limited = c.get("/v2/profiles", headers={"Prefer": "sandbox-fault=rate-limited"})
            assert limited.status_code == 429 and limited.headers["Retry-After"] == "1"
    finally:
        server.stop()
    # debited once: the deposit less one withdrawal and its fee
    spent = Decimal(existing["amount"]) + Decimal(existing["fee"])
    assert Decimal(balance["available"]) == Decimal(1) - spent
    verify(db)
    scenario = load_file(recording)
    text = recording.read_text()
    assert "wire: drop" in text
    # a fault's 429 is kept, with the header that asked for it (a rate limit's is left out)
    assert "Prefer: sandbox-fault=rate-limited" in text and "status: 429" in text
    result = run_in_process(scenario, check_invariants=True)
    assert result.ok, [(r.label, r.diffs) for r in result.failed]


WIRE_SCENARIO = """
version: 1
purpose: each wire fault as a client sees it, and a wrong expectation reported
steps:
  - fault:
      match: {operation: ListProfiles}
      when: after
      action: {drop: true}
      times: 1
    save: {rule: id}
  - request: {method: GET, path: /v2/profiles}
    expect: {wire: drop}
  - request: {method: GET, path: /v2/profiles, headers: {Prefer: sandbox-fault=reset}}
    expect: {wire: reset}
  - request: {method: GET, path: /v2/profiles, headers: {Prefer: sandbox-fault=empty}}
    expect: {wire: empty}
  - request: {method: GET, path: /v2/profiles, headers: {Prefer: sandbox-fault=truncate}}
    expect: {wire: truncate}
  - request: {method: GET, path: "/v2/sandbox/faults/{rule}"}
    expect: {body: {id: "{rule}"}}
  - request: {method: GET, path: /v2/profiles, headers: {Prefer: sandbox-fault=empty}}
    expect: {wire: drop}
  - request: {method: GET, path: /v2/profiles}
    expect: {wire: empty}
"""


def test_a_scenario_expects_each_wire_fault_in_process_and_against_a_server(
    tmp_path: Path,
    servers: list[Server],  # noqa: F811
) -> None:
    scenario = load(WIRE_SCENARIO)
    server = Server(tmp_path / "wire.db", "--clock", "manual", "--no-rate-limits")
    servers.append(server)
    for result in (run_in_process(scenario), run_remote(scenario, server.base)):
        assert [(r.index, r.diffs) for r in result.failed] == [
            (7, ["wire: expected drop, got empty"]),
            (8, ["wire: expected empty, got an answer 200"]),
        ]
    server.stop()


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
