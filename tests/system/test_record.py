"""`sandex serve --record`: a live session written as a scenario that replays green on a
fresh sandbox with the same seed and clock mode, in-process and against a server."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandex.api_adapter.scenarios.runner import run_in_process
from sandex.engine.tools.scenario_file import load_file

ROOT = Path(__file__).resolve().parents[2]
SANDEX = [sys.executable, "-m", "sandex.api_adapter.cli"]
BTC = "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    def __init__(self, db: Path, *args: str) -> None:
        self.base = f"http://127.0.0.1:{_port()}"
        port = self.base.rsplit(":", 1)[1]
        self.proc = subprocess.Popen(
            [*SANDEX, "serve", "--db", str(db), "--port", port, "--log-format", "json", *args],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        deadline = time.monotonic() + 20
        while True:
            assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
            try:
                httpx.get(f"{self.base}/docs", timeout=0.5)
                return
            except httpx.TransportError:
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.05)

    def token(self, client_id: str, secret: str, scope: str | None = None) -> dict[str, str]:
        form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
        if scope:
            form["scope"] = scope
        r = httpx.post(f"{self.base}/oauth2/token", data=form)
        assert r.status_code == 200, r.text
        return {"Authorization": f"Bearer {r.json()['access_token']}"}

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.communicate(timeout=20)


@pytest.fixture
def served() -> Iterator[list[Served]]:
    started: list[Served] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.communicate()


def _session(base: str, server: Served) -> None:
    """What an integration might do: tenants, funding, a withdrawal, a trade, refusals."""
    admin = server.token("sandex", "sandex-secret")
    c = httpx.Client(base_url=base)
    # with the permission self_match_prevention_id needs, and identity ids as labels: the
    # recording must keep both
    options = {"self_match_prevention": True, "identity_labels": True}
    made = c.post("/v2/sandbox/customers", json=options, headers=admin)
    made = made.json()
    alice = server.token(made["client_id"], made["client_secret"])
    pid = made["profile_id"]
    assert c.post(
        f"/v2/sandbox/profiles/{pid}/deposit",
        json={"asset": "BTC", "amount": "1", "crypto_network": "BITCOIN"},
        headers=alice,
    ).is_success
    c.post("/v2/sandbox/markets/BTCUSD/price", json={"price": "40000"}, headers=admin)
    fee = c.post(
        "/v2/transfer/fees/crypto-withdrawal",
        json={
            "asset": "BTC",
            "crypto_network": "BITCOIN",
            "destination_address": BTC,
            "amount": "0.001",
        },
        headers=alice,
    ).json()
    payout = c.post(
        "/v2/transfer/crypto-withdrawals",
        json={
            "profile_id": "default",
            "asset": "BTC",
            "crypto_network": "BITCOIN",
            "destination_address": BTC,
            "amount": "0.001",
            "fee_id": fee["id"],
            "metadata": {"why": "{braces} stay text"},
        },
        headers=alice,
    ).json()
    c.post("/v2/sandbox/clock", json={"advance_seconds": 10}, headers=admin)
    assert c.get(f"/v2/transfer/transfers/{payout['id']}", headers=alice).json()["status"] == (
        "COMPLETED"
    )
    order = c.post(
        f"/v2/profiles/{pid}/orders",
        json={
            "side": "SELL",
            "market": "BTCUSD",
            "type": "LIMIT",
            "price": "45000",
            "base_amount": "0.1",
            "self_match_prevention_id": "desk-a",
            "identity_id": "person-1",
            "identity_account_id": "account-1",
        },
        headers=alice,
    ).json()
    c.get(f"/v2/profiles/{pid}/orders/{order['id']}", headers=alice)
    c.delete(f"/v2/profiles/{pid}/orders/{order['id']}", headers=alice)
    narrow = server.token(made["client_id"], made["client_secret"], "funding:read_profile")
    assert (
        c.post(
            "/v2/transfer/crypto-withdrawals", json={"profile_id": "default"}, headers=narrow
        ).status_code
        == 403
    )
    assert c.get("/v2/events", headers=alice, params={"limit": 3}).is_success
    assert c.get("/v2/profiles").status_code == 401
    c.post("/v2/sandbox/clock", json={"set_to": "2024-01-01T01:00:00Z"}, headers=admin)
    c.get("/v2/transfer/transfers", headers=alice, params={"ids": [payout["id"]]})
    # a replay has cursors and execution ids of its own: the recording follows them
    first = c.get("/v2/transfer/transfers", headers=alice, params={"limit": 1}).json()
    cursor = first["next_page_cursor"]
    rest = c.get(
        "/v2/transfer/transfers", headers=alice, params={"limit": 1, "page_cursor": cursor}
    )
    assert rest.is_success
    for _ in range(2):
        c.post(
            f"/v2/profiles/{pid}/orders",
            json={"side": "SELL", "market": "BTCUSD", "type": "MARKET", "base_amount": "0.01"},
            headers=alice,
        )
    fills = c.get("/v2/executions", headers=alice).json()["items"]
    assert len(fills) == 2
    since = {"since_execution_id": fills[-1]["execution_id"]}
    assert c.get("/v2/executions", headers=alice, params=since).json()["items"] == fills[:1]
    c.close()


FLAGS = ("--clock", "manual", "--seed", "5", "--no-rate-limits")


def _record(tmp_path: Path, served: list[Served]) -> Path:
    recording = tmp_path / "session.yaml"
    live = Served(tmp_path / "live.db", *FLAGS, "--record", str(recording))
    served.append(live)
    _session(live.base, live)
    live.stop()
    return recording


def test_a_recorded_session_replays_green_on_a_fresh_sandbox(
    tmp_path: Path, served: list[Served]
) -> None:
    recording = _record(tmp_path, served)
    scenario = load_file(recording)  # a valid scenario
    assert scenario.settings["seed"] == 5
    text = recording.read_text()
    assert "create_actor: customer1" in text and "advance: 10s" in text
    assert "identity_labels: true" in text
    assert "{{braces}} stay text" in text and "oauth2" not in text
    # sealed cursors and keyed execution ids are followed by name, like ids
    assert "page_cursor: '{v" in text and "since_execution_id: '{v" in text
    result = run_in_process(scenario, check_invariants=True)
    assert result.ok, [(s.label, s.diffs) for s in result.failed]
    assert len(result.steps) == len(scenario.steps)


@pytest.mark.slow
def test_a_recorded_session_replays_green_against_a_fresh_server(
    tmp_path: Path, served: list[Served]
) -> None:
    recording = _record(tmp_path, served)
    fresh = Served(tmp_path / "fresh.db", *FLAGS)
    served.append(fresh)
    remote = subprocess.run(
        [*SANDEX, "replay", str(recording), "--url", fresh.base],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    fresh.stop()
    assert remote.returncode == 0, remote.stdout + remote.stderr


@pytest.mark.slow
def test_a_wall_clock_session_replays_on_virtual_time(tmp_path: Path, served: list[Served]) -> None:
    """On a wall clock the time between requests is recorded as clock moves and times
    are not compared; ids are followed by name, since a replay draws them elsewhere."""
    config = tmp_path / "fast.yaml"
    config.write_text("withdrawal_confirmation_seconds: {BITCOIN: '0.3'}\nseed: 9\n")
    recording = tmp_path / "wall.yaml"
    live = Served(
        tmp_path / "wall.db",
        "--config",
        str(config),
        "--no-rate-limits",
        "--record",
        str(recording),
    )
    served.append(live)
    admin = live.token("sandex", "sandex-secret")
    c = httpx.Client(base_url=live.base, headers=admin)
    c.post("/v2/sandbox/profiles/default/deposit", json={"asset": "BTC", "amount": "1"})
    payout: Any = c.post(
        "/v2/transfer/crypto-withdrawals",
        json={
            "profile_id": "default",
            "asset": "BTC",
            "crypto_network": "BITCOIN",
            "destination_address": BTC,
            "amount": "0.001",
        },
    ).json()
    time.sleep(0.6)
    assert c.get(f"/v2/transfer/transfers/{payout['id']}").json()["status"] == "COMPLETED"
    c.post(
        "/v2/transfer/fees/crypto-withdrawal",
        json={
            "asset": "BTC",
            "crypto_network": "BITCOIN",
            "destination_address": BTC,
            "amount": "0.001",
        },
    )
    c.close()
    live.stop()
    text = recording.read_text()
    assert "advance:" in text and "ignore:" in text
    replay = subprocess.run(
        [*SANDEX, "replay", str(recording)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr


def test_a_recorded_feed_session_replays_its_messages(tmp_path: Path, served: list[Served]) -> None:
    """A feed connection becomes a stream step, what it was sent expect_messages before
    the next step, and its end close_stream: the replay expects every message where the
    recording saw it."""
    from websockets.sync.client import connect

    recording = tmp_path / "feeds.yaml"
    live = Served(tmp_path / "feeds.db", *FLAGS, "--record", str(recording))
    served.append(live)
    admin = live.token("sandex", "sandex-secret")
    c = httpx.Client(base_url=live.base, headers=admin)
    ws_base = live.base.replace("http://", "ws://")
    deposit = {"asset": "USD", "amount": "100000"}
    assert c.post("/v2/sandbox/profiles/default/deposit", json=deposit).status_code == 200
    with (
        connect(f"{ws_base}/marketdata/BTCUSD", open_timeout=10) as book,
        connect(f"{ws_base}/executiondata/BTCUSD", open_timeout=10) as trades,
    ):
        assert book.recv(timeout=10)  # the snapshot
        for price in ("40000.00", "45000.00"):  # one rests, one crosses
            order = {"market": "BTCUSD", "side": "BUY", "type": "LIMIT", "price": price}
            r = c.post("/v2/profiles/default/orders", json={**order, "base_amount": "0.5"})
            assert r.status_code == 200, r.text
        assert trades.recv(timeout=10)
        assert c.post("/v2/sandbox/clock", json={"advance_seconds": 5}).status_code == 200
        assert book.recv(timeout=10)
        # The whole burst the clock's move published, before closing: a connection closed
        # midway is recorded with what it was sent, fewer than a replay delivers.
        with contextlib.suppress(TimeoutError):
            while True:
                book.recv(timeout=1)
    c.get("/v2/markets/BTCUSD/order-book")
    c.close()
    live.stop()
    scenario = load_file(recording)
    kinds = [next(iter(step.model_dump(exclude_none=True))) for step in scenario.steps]
    assert kinds.count("stream") == 2 and kinds.count("close_stream") == 2
    assert kinds.count("expect_messages") >= 4
    text = recording.read_text()
    assert "type: SNAPSHOT" in text and "match_number:" in text and "price: '40000.00'" in text
    result = run_in_process(scenario, check_invariants=True)
    assert result.ok, [(s.label, s.diffs) for s in result.failed]
