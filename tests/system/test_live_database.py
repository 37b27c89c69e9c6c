"""A database a server is writing: what the other tools may do to it.

- The running writer holds the database's lease (engine/store/lease.py): `sandex rebuild`
  and a second `sandex serve` refuse with one line while it runs, and work once it stops;
  no acknowledged row is lost either way.
- `sandex verify` beside a writer that commits all the time is right: it reads the log
  and the read models in one snapshot. It and `sandex events` only read.
- A rewrite of the read models by a writer without the lease (an engine's start-up
  rewrite beside `sandex clients revoke`) keeps what the other writer appended meanwhile."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import sandex.engine.tools.verify as verify_module
from sandex.engine import Engine, open_engine
from sandex.engine.kernel.commands import Actor, CreateCustomer, CreateOrder, SandboxDeposit
from sandex.engine.runtime.projection import Projection
from sandex.engine.store import LeaseHeld
from sandex.engine.store.lease import lock_path
from sandex.engine.tools.verify import rebuild, verify
from tests.conftest import make_settings
from tests.support.server_helpers import ROOT, SANDEX, Server, free_port
from tests.support.store_helpers import OLD_FEED_DDL, indexes

DEPOSIT = "/v2/sandbox/profiles/default/deposit"


def _sandex(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SANDEX, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def _deposit(server: Server, headers: dict[str, str]) -> str:
    r = httpx.post(f"{server.base}{DEPOSIT}", json={"asset": "BTC", "amount": "1"}, headers=headers)
    assert r.status_code == 200, r.text
    return str(r.json()["activity_id"])


def test_rebuild_and_a_second_server_refuse_while_a_server_writes_and_nothing_acknowledged_is_lost(
    tmp_path: Path, servers: list[Server]
) -> None:
    db = tmp_path / "live.db"
    server = Server(db, "--no-rate-limits")
    servers.append(server)
    headers = server.token()
    acked = [_deposit(server, headers) for _ in range(20)]

    # Deposits go on while the tools are tried.
    stop = threading.Event()

    def deposit_on() -> None:
        while not stop.is_set():
            acked.append(_deposit(server, headers))

    writer = threading.Thread(target=deposit_on)
    writer.start()
    try:
        refused = _sandex("rebuild", "--db", str(db))
        second = _sandex("serve", "--db", str(db), "--port", str(free_port()))
    finally:
        stop.set()
        writer.join()
    for done in (refused, second):
        assert done.returncode == 2, done.stdout + done.stderr
        line = f"sandex: database {db} is in use by another sandex writer (pid {server.proc.pid})"
        assert done.stderr.splitlines() == [f"{line}; stop it first"]
        assert "Traceback" not in done.stderr
    assert refused.stdout == ""
    assert oct(os.stat(lock_path(str(db))).st_mode & 0o777) == "0o600"

    code, _, err = server.stop()
    assert code == 0, err
    done = _sandex("rebuild", "--db", str(db))  # the lease died with the server
    assert done.returncode == 0 and "rebuilt" in done.stdout, done.stderr
    assert _sandex("verify", "--db", str(db)).returncode == 0

    again = Server(db, "--no-rate-limits")
    servers.append(again)
    for transfer in acked:
        r = httpx.get(f"{again.base}/v2/transfer/transfers/{transfer}", headers=headers)
        assert r.status_code == 200, r.text
    balance = httpx.get(f"{again.base}/v2/profiles/default/balances/BTC", headers=headers)
    assert balance.json()["available"] == str(len(acked))
    assert again.stop()[0] == 0


def test_an_engine_holds_the_lease_from_opening_to_stop(tmp_path: Path) -> None:
    db = tmp_path / "lease.db"
    first = open_engine(db, make_settings()).start()
    try:
        with pytest.raises(LeaseHeld, match="in use by another sandex writer"):
            open_engine(db, make_settings())
        with pytest.raises(LeaseHeld):
            rebuild(str(db))
        # A writer without the lease (`sandex clients revoke`) may open it beside.
        guest = open_engine(db, make_settings(), lease=False)
        guest.stop()
    finally:
        first.stop()
    with open_engine(db, make_settings()):
        pass
    assert rebuild(str(db)) == 0  # an empty log; the lease was free again


def test_a_read_model_rewrite_keeps_what_a_writer_without_the_lease_appended_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "guest.db"
    with open_engine(db, make_settings()) as owner:
        made = owner.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
        actor = Actor(made["customer_id"], "c")
        for _ in range(3):
            owner.execute(
                SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="1")
            )
    guest = open_engine(db, make_settings(), lease=False).start()
    rows_of = Projection.all_rows
    appended: list[Any] = []

    def a_write_lands_after_the_replay(self: Projection, state: Any) -> Any:
        if not appended:  # between the rewrite's replay and its write, once
            appended.append(
                guest.execute(
                    SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="5")
                )
            )
        return rows_of(self, state)

    monkeypatch.setattr(Projection, "all_rows", a_write_lands_after_the_replay)
    try:
        position = rebuild(str(db))
    finally:
        guest.stop()
    assert appended
    assert verify(str(db)) == []  # before: the guest's rows were gone, checkpoint behind
    assert position == guest.state.position


def _customer(engine: Engine) -> Actor:
    made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
    return Actor(made["customer_id"], "c")


def _trade(engine: Engine, actor: Actor) -> None:
    engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="USD", amount="10"))
    engine.execute(
        CreateOrder(
            actor=actor,
            profile_id="default",
            side="BUY",
            market="BTCUSD",
            type="LIMIT",
            price="30000",
            base_amount="0.0001",
        )
    )


def test_verify_reads_the_log_and_the_read_models_in_one_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "snapshot.db"
    with open_engine(db, make_settings()) as engine:
        actor = _customer(engine)
        _trade(engine, actor)
        checks = verify_module.check_state
        landed: list[Any] = []

        def a_commit_lands_between_the_log_and_the_read_models(state: Any, rules: Any) -> Any:
            if not landed:
                landed.append(_trade(engine, actor))
            return checks(state, rules)

        monkeypatch.setattr(
            verify_module, "check_state", a_commit_lands_between_the_log_and_the_read_models
        )
        assert verify(str(db)) == []  # before: balances, orders and checkpoint "differ"
        assert landed
    assert verify(str(db)) == []


def test_verify_beside_a_writer_that_commits_all_the_time_is_always_ok(tmp_path: Path) -> None:
    db = tmp_path / "busy.db"
    with open_engine(db, make_settings()) as engine:
        actor = _customer(engine)
        stop = threading.Event()

        def trade_on() -> None:
            while not stop.is_set():
                _trade(engine, actor)

        writer = threading.Thread(target=trade_on)
        writer.start()
        try:
            while engine.state.position < 60:
                time.sleep(0.001)
            start = engine.state.position
            found: list[list[str]] = []
            while len(found) < 6 or (engine.state.position - start < 20 and len(found) < 100):
                found.append(verify(str(db)))
            during = engine.state.position - start
        finally:
            stop.set()
            writer.join()
    assert during >= 20  # the writer committed while verify read
    assert all(problems == [] for problems in found), found


def test_events_and_verify_only_read_the_database(tmp_path: Path) -> None:
    """Tools that read never write: not even the index migration a writer's open does,
    which beside a running server would be a second writer."""
    db = tmp_path / "read.db"
    with open_engine(db, make_settings()) as engine:
        _trade(engine, _customer(engine))
    conn = sqlite3.connect(db)
    for statement in OLD_FEED_DDL:
        conn.execute(statement)
    conn.commit()
    conn.close()
    before = indexes(db, "event_feed")
    assert _sandex("events", "--db", str(db)).stdout.count("\n") == engine.state.position
    assert verify(str(db)) == []
    assert indexes(db, "event_feed") == before
