"""Secrets (issue 14, items 1 and 4): drawn from the OS, never from the seeded ids;
hashed or sealed before the log; a scenario replayed twice to one log hash though its
secrets differ; the bootstrap secret shown only when sandex chose it; and no secret in
any output. The database and its keys: tests/system/test_keys.py."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sandex.api_adapter import create_app
from sandex.api_adapter.bootstrap import bootstrap
from sandex.api_adapter.scenarios.recorder import Recorder
from sandex.api_adapter.scenarios.runner import Runner, run_in_process
from sandex.api_adapter.scenarios.targets import InProcess
from sandex.engine import open_engine
from sandex.engine.domain.customers import secret_matches
from sandex.engine.kernel.clock import EPOCH
from sandex.engine.kernel.commands import Actor, CreateCustomer, SandboxDeposit
from sandex.engine.kernel.credentials import REDACTED, SealError, Secrets, seal, unseal
from sandex.engine.kernel.ids import IdSource
from sandex.engine.tools.scenario_file import load, load_file
from sandex.engine.tools.time_travel import log_hash
from tests.conftest import make_settings
from tests.support.file_helpers import database_bytes, file_mode, usual_umask
from tests.support.server_helpers import SANDEX
from tests.support.webhook_receivers import LOCAL, Receiver, opened, start_deliverer, wait

ROOT = Path(__file__).resolve().parents[2]
HOOK = "https://receiver.example/hook"  # never reached: no test delivers to it


def _seeded_tokens(seed: int, position: int, length: int) -> set[str]:
    """Every token the seeded id source would have drawn (the old derivation of client
    and webhook secrets) around `position`, at any rank a command reaches."""
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
    made = set()
    for pos in range(max(1, position - 5), position + 5):
        for rank in range(0, 12):
            ids = IdSource(seed)
            ids.start(pos, EPOCH)  # the time sets only a uuid's prefix
            ids._rank = rank
            raw = ids._digest("token") + ids._digest("token")
            made.add("".join(alphabet[b % len(alphabet)] for b in raw[:length]))
    return made


def _log(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT position, type, data, meta FROM events").fetchall()
    finally:
        conn.close()


def _values(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for value in node.values():
            yield from _values(value)
    elif isinstance(node, list):
        for value in node:
            yield from _values(value)
    elif isinstance(node, str):
        yield node


# -- item 1: client and webhook secrets come from the OS ------------------------------


def test_two_databases_on_one_seed_give_the_same_ids_but_different_secrets(
    sandbox_factory: Any,
) -> None:
    one, two = sandbox_factory("one.db"), sandbox_factory("two.db")
    _, first = one.tenant()
    _, second = two.tenant()
    assert first["client_id"] == second["client_id"]  # ids stay seeded: reproducible
    assert first["profile_id"] == second["profile_id"]
    assert first["client_secret"] != second["client_secret"]
    hook_one = one.post("/v2/sandbox/webhooks", {"url": HOOK}).json()["secret"]
    hook_two = two.post("/v2/sandbox/webhooks", {"url": HOOK}).json()["secret"]
    assert hook_one != hook_two
    salts = [
        json.loads(data)["salt"]
        for sb in (one, two)
        for _, kind, data, _ in _log(sb.db)
        if kind == "ClientCreated"
    ]
    assert len(set(salts)) == len(salts) == 4  # the bootstrap's and the tenant's, twice


def test_a_tenant_secret_is_not_derivable_from_the_seed_and_not_in_the_log(
    sandbox: Any,
) -> None:
    _, made = sandbox.tenant()
    secret = made["client_secret"]
    assert len(secret) == 40
    position = next(p for p, kind, _, _ in _log(sandbox.db) if kind == "ClientCreated" and p > 3)
    assert secret not in _seeded_tokens(7, position, 40)
    hook = sandbox.post("/v2/sandbox/webhooks", {"url": HOOK}).json()["secret"]
    position = next(p for p, kind, _, _ in _log(sandbox.db) if kind == "WebhookRegistered")
    assert hook not in _seeded_tokens(7, position, 32)
    for _, _, data, meta in _log(sandbox.db):
        for value in _values([json.loads(data), json.loads(meta)]):
            assert secret not in value and hook not in value
    # the log holds the client's salted hash, which the secret matches
    created = [json.loads(d) for _, kind, d, _ in _log(sandbox.db) if kind == "ClientCreated"]
    mine = next(c for c in created if c["client_id"] == made["client_id"])
    assert secret_matches(secret, mine["salt"], mine["secret_hash"])
    assert secret.encode() not in database_bytes(sandbox.db)


def test_a_webhook_secret_is_sealed_in_the_log_and_table_and_still_signs(
    sandbox_factory: Any,
) -> None:
    sandbox = sandbox_factory(webhook_allowed_hosts=LOCAL)  # the receiver runs here
    with opened() as make:
        receiver = make(Receiver)
        secret = _register_and_deliver(sandbox, receiver)
    headers, body = receiver.received[0]
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Sandex-Signature"] == f"sha256={expected}"


def _register_and_deliver(sandbox: Any, receiver: Any) -> str:
    """Register `receiver`, check where its secret is kept, deliver one event to it."""
    r = sandbox.post("/v2/sandbox/webhooks", {"url": receiver.url})
    assert r.status_code == 200, r.text
    secret = r.json()["secret"]
    assert secret.encode() not in database_bytes(sandbox.db)
    conn = sqlite3.connect(sandbox.db)
    try:
        (stored,) = conn.execute("SELECT secret FROM webhooks").fetchone()
    finally:
        conn.close()
    assert stored.startswith("sealed1:") and secret not in stored
    assert "secret" not in sandbox.get("/v2/sandbox/webhooks").json()
    sandbox.deposit("BTC", "1")
    deliverer = start_deliverer(sandbox)
    try:
        wait(lambda: len(receiver.received) == 1)
    finally:
        deliverer.stop()
    return str(secret)


def test_a_webhook_whose_secret_no_longer_opens_is_not_signed_nor_sent(sandbox: Any) -> None:
    """A key file replaced since the registration: the deliverer says so, sends nothing."""
    assert sandbox.post("/v2/sandbox/webhooks", {"url": HOOK}).status_code == 200
    sandbox.deposit("BTC", "1")
    key_file = Path(f"{sandbox.db}.key")
    keys = json.loads(key_file.read_text())
    key_file.write_text(json.dumps({**keys, "sealing_key": os.urandom(32).hex()}))
    deliverer = start_deliverer(sandbox)
    try:
        wait(lambda: sandbox.get("/v2/sandbox/webhooks").json().get("last_error") is not None)
    finally:
        deliverer.stop()
    status = sandbox.get("/v2/sandbox/webhooks").json()
    assert "register the webhook again" in status["last_error"]
    assert status["undelivered_webhooks"] == 1
    assert any("does not open webhook" in p for p in sandbox.verify())  # verify says so too
    key_file.write_text(json.dumps(keys))


def test_a_sealed_secret_opens_only_with_its_key_and_for_its_webhook() -> None:
    key, other = os.urandom(32), os.urandom(32)
    sealed = seal(key, "s3cret", "hook-1")
    assert "s3cret" not in sealed and sealed != seal(key, "s3cret", "hook-1")  # a new nonce
    assert unseal(key, sealed, "hook-1") == "s3cret"
    with pytest.raises(SealError):
        unseal(other, sealed, "hook-1")
    with pytest.raises(SealError):
        unseal(key, sealed, "hook-2")
    with pytest.raises(SealError):
        unseal(key, sealed[:-4] + "AAAA", "hook-1")
    # a registration an older sandex wrote holds its secret in clear: it still signs
    assert unseal(key, "clearSecretOfOld", "hook-1") == "clearSecretOfOld"
    assert len(Secrets(key).token(40)) == 40 and len(Secrets(key).salt()) == 32


def test_a_command_never_shows_its_secret_in_a_log_line() -> None:
    assert "pw-123" not in repr(CreateCustomer(client_id="me", client_secret="pw-123"))


# -- item 1: reproducibility without reproducible secrets ----------------------------

SCENARIO = """
version: 1
purpose: a tenant registers a webhook and is funded; its secrets differ on every run
settings: {seed: 31, clock_start: "2024-03-01T10:00:00Z"}
actors:
  alice: {}
steps:
  - request:
      method: POST
      path: /v2/sandbox/webhooks
      body: {url: "https://receiver.example/hook"}
    save: {hook_secret: secret, hook_id: id}
    expect:
      match: exact
      ignore: [secret]
      body:
        id: "{hook_id}"
        url: "https://receiver.example/hook"
        created_at: "2024-03-01T10:00:00.000000Z"
  - request:
      method: POST
      path: /v2/sandbox/profiles/default/deposit
      body: {asset: BTC, amount: "0.5"}
  - create_actor: bob
  - advance: 30s
"""
# The credential fields of the log, named here independently of engine.credentials.
CREDENTIALS = {"ClientCreated": {"salt", "secret_hash"}, "WebhookRegistered": {"secret"}}


def _masked(log: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    masked = []
    for position, kind, data, meta in log:
        fields = CREDENTIALS.get(kind, set())
        values = {k: "*" if k in fields else v for k, v in json.loads(data).items()}
        masked.append((position, kind, values, meta))
    return masked


def _run_twice() -> list[tuple[str | None, dict[str, Any], list[tuple[Any, ...]]]]:
    scenario = load(SCENARIO)
    runs = []
    for _ in range(2):
        settings = scenario.settings_model().model_copy(update={"durability": "NORMAL"})
        target = InProcess(settings)
        try:
            runner = Runner(scenario, target)
            result = runner.run()
            assert result.ok, [(s.label, s.diffs) for s in result.failed]
            log = _log(target.db)
        finally:
            target.close()
        runs.append((target.log_hash(), runner.variables, log))
    return runs


def test_the_same_scenario_twice_gives_one_log_hash_though_its_secrets_differ() -> None:
    (hash_a, vars_a, log_a), (hash_b, vars_b, log_b) = _run_twice()
    assert hash_a is not None and hash_a == hash_b
    for name in ("alice.client_secret", "bob.client_secret", "hook_secret"):
        assert vars_a[name] != vars_b[name]
    for name in ("alice.client_id", "alice.profile_id", "bob.customer_id", "hook_id"):
        assert vars_a[name] == vars_b[name]
    assert log_a != log_b  # the raw logs differ, in their credential fields only
    assert _masked(log_a) == _masked(log_b)


def test_the_log_hash_still_sees_every_other_change(tmp_path: Path) -> None:
    settings = make_settings(durability="NORMAL")
    hashes = []
    for name, amount in (("a.db", "1"), ("b.db", "1"), ("c.db", "2")):
        with open_engine(tmp_path / name, settings) as engine:
            engine.execute(CreateCustomer(client_id="x", client_secret="y", bootstrap=True))
            customer = next(iter(engine.state.customers))
            engine.execute(
                SandboxDeposit(
                    actor=Actor(customer, "x"), profile_id="default", asset="BTC", amount=amount
                )
            )
        hashes.append(log_hash(tmp_path / name))
    assert hashes[0] == hashes[1] != hashes[2]


def test_a_recording_keeps_no_secret_and_replays_green(tmp_path: Path) -> None:
    recording = tmp_path / "session.yaml"
    engine = open_engine(tmp_path / "live.db", make_settings(seed=5)).start()
    try:
        engine.execute(
            CreateCustomer(client_id="sandex", client_secret="sandex-secret", bootstrap=True)
        )
        app = create_app(engine)
        with usual_umask():  # the header is written at once
            recorded = Recorder(app, path=recording, engine=engine)
        http = TestClient(recorded)
        form = {"grant_type": "client_credentials", "client_secret": "sandex-secret"}
        admin = http.post("/oauth2/token", data={**form, "client_id": "sandex"}).json()
        admin_headers = {"Authorization": f"Bearer {admin['access_token']}"}
        made = http.post("/v2/sandbox/customers", headers=admin_headers).json()
        token = http.post(
            "/oauth2/token",
            data={**form, "client_id": made["client_id"], "client_secret": made["client_secret"]},
        ).json()["access_token"]
        tenant = {"Authorization": f"Bearer {token}"}
        hook = http.post("/v2/sandbox/webhooks", json={"url": HOOK}, headers=tenant).json()
        assert http.get("/v2/sandbox/webhooks", headers=tenant).status_code == 200
        http.close()
        app.state.queries.close()
    finally:
        engine.stop()
    text = recording.read_text()
    assert file_mode(recording) == 0o600
    assert hook["secret"] not in text and made["client_secret"] not in text
    assert "sandex-secret" not in text
    result = run_in_process(load_file(recording), check_invariants=True)
    assert result.ok, [(s.label, s.diffs) for s in result.failed]


# -- item 4: the bootstrap client, and what the banner shows of its secret -----------


def test_the_bootstrap_secret_is_the_default_on_loopback_and_random_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SANDEX_CLIENT_SECRET", raising=False)
    monkeypatch.delenv("SANDEX_CLIENT_ID", raising=False)
    with open_engine(tmp_path / "local.db", make_settings()) as engine:
        made = bootstrap(engine, "127.0.0.1")
        assert (made.client_id, made.shown, made.client_secret) == (
            "sandex",
            *["sandex-secret"] * 2,
        )
        assert bootstrap(engine, "127.0.0.1") == made  # a restart
    with open_engine(tmp_path / "open.db", make_settings()) as engine:
        made = bootstrap(engine, "0.0.0.0")
        secret = made.shown.split()[0]
        assert secret != "sandex-secret" and len(secret) >= 40 and "once" in made.shown
        assert made.client_secret == secret
        client = engine.state.clients[made.client_id]
        assert secret_matches(secret, client["salt"], client["secret_hash"])
        again = bootstrap(engine, "0.0.0.0")  # a restart cannot show it again
        assert secret not in again.shown and "not shown" in again.shown
        assert again.client_secret is None
    with open_engine(tmp_path / "v6.db", make_settings()) as engine:
        assert bootstrap(engine, "::1").shown == "sandex-secret"
        warned = bootstrap(engine, "192.0.2.7").shown  # the default, served beyond loopback
        assert warned.startswith("sandex-secret") and "anyone" in warned
    monkeypatch.setenv("SANDEX_CLIENT_SECRET", "from-env-456")
    with open_engine(tmp_path / "env.db", make_settings()) as engine:
        made = bootstrap(engine, "0.0.0.0")
        assert "from-env-456" not in made.shown and made.client_secret == "from-env-456"
        client = engine.state.clients[made.client_id]
        assert secret_matches("from-env-456", client["salt"], client["secret_hash"])


# -- item 4: no secret in any output ---------------------------------------------------


def test_sandex_events_prints_no_salt_hash_or_webhook_secret(sandbox: Any) -> None:
    _, made = sandbox.tenant()
    with_credentials = HOOK.replace("://", "://hook-user:hook-pass@", 1) + "?token=hook-token"
    hook = sandbox.post("/v2/sandbox/webhooks", {"url": with_credentials}).json()["secret"]
    conn = sqlite3.connect(sandbox.db)
    try:
        hidden = [
            value for row in conn.execute("SELECT salt, secret_hash FROM clients") for value in row
        ]
        hidden += [row[0] for row in conn.execute("SELECT secret FROM webhooks")]
    finally:
        conn.close()
    hidden += [made["client_secret"], hook, "hook-user", "hook-pass", "hook-token"]
    done = subprocess.run(
        [*SANDEX, "events", "--db", str(sandbox.db)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for value in hidden:
        assert value not in done.stdout
    events = [json.loads(line) for line in done.stdout.splitlines()]
    clients = [e["data"] for e in events if e["type"] == "ClientCreated"]
    assert len(clients) == 2
    assert all(c["salt"] == REDACTED and c["secret_hash"] == REDACTED for c in clients)
    assert [e["data"]["secret"] for e in events if e["type"] == "WebhookRegistered"] == [REDACTED]
