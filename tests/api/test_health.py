"""`GET /healthz`: 200 while the sandbox takes writes, 503 when its writer is stopped or
its store fails; no token needed, and nothing of any tenant in the answer."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.database import query, read_only_connection
from tests.support.server_helpers import Server

DEPOSIT = "/v2/sandbox/profiles/default/deposit"


def _events(sandbox: Any) -> int:
    return int(query(sandbox.db, "SELECT count(*) FROM events")[0][0])


def test_a_healthy_sandbox_answers_200_with_the_writer_the_clock_and_the_position(
    sandbox: Any,
) -> None:
    sandbox.deposit("BTC", "1")
    sandbox.advance(90)
    r = sandbox.http.get("/healthz")  # no token
    assert r.status_code == 200, r.text
    expected = {
        "status": "ok",
        "role": "writer",
        "writer": "running",
        "last_commit": "ok",
        "store": "ok",
        "position": _events(sandbox),
        "clock": {"now": "2024-01-01T00:01:30.000000Z", "mode": "manual"},
    }
    if sandbox.world_id is None:
        # the server's other worlds, counted (tests/api/test_world_limits.py); a world's
        # own health names none (`--world fresh`)
        counts = {"total": 0, "loaded": 0, "max_worlds": 1000, "max_loaded_worlds": 200}
        expected["worlds"] = counts
    assert r.json() == expected
    # nothing of a tenant: no customer, client, profile or transfer id, no balance
    customer = sandbox.get("/v2/profiles/default").json()
    transfer = sandbox.get("/v2/transfer/transfers").json()["items"][0]
    for secret in (customer["id"], transfer["id"], transfer["customer_id"], "sandex"):
        assert secret not in r.text


def test_a_failed_commit_answers_503_until_a_commit_succeeds(sandbox: Any) -> None:
    store = sandbox.engine.store
    writable = store.conn
    store.conn = read_only_connection(sandbox.db)
    try:
        assert sandbox.post(DEPOSIT, {"asset": "BTC", "amount": "1"}).status_code == 503
        r = sandbox.http.get("/healthz")
        assert r.status_code == 503, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.headers["retry-after"] == "1"
        body = r.json()
        assert body["detail"] == "the last commit failed"
        assert body["meta"]["status"] == "unavailable"
        assert (body["meta"]["writer"], body["meta"]["last_commit"]) == ("running", "failed")
    finally:
        store.conn.close()
        store.conn = writable
    sandbox.deposit("BTC", "1")
    assert sandbox.http.get("/healthz").status_code == 200


def test_a_stopped_writer_answers_503(sandbox: Any) -> None:
    position = sandbox.http.get("/healthz").json()["position"]
    sandbox.engine.stop()
    r = sandbox.http.get("/healthz")
    assert r.status_code == 503, r.text
    assert r.json()["detail"] == "the writer is stopped"
    assert r.json()["meta"]["writer"] == "stopped"
    assert r.json()["meta"]["position"] == position


def test_a_served_sandbox_answers_its_health_on_a_wall_clock(database: Any) -> None:
    server = Server(database("health.db"))
    try:
        body = httpx.get(f"{server.base}/healthz").json()
    finally:
        server.stop()
    assert (body["status"], body["clock"]["mode"]) == ("ok", "wall")
    assert body["position"] > 0  # the bootstrap customer's events
