"""The database private and without the signing key (issue 14, item 2): the database,
its companions and the key file beside it are 0600 whatever the umask, an old
database's signing key moves out of it, and `sandex keys rotate` refuses every token
signed before, in a running server too."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import httpx
import structlog
from fastapi.testclient import TestClient

from sandex.api_adapter import create_app
from sandex.api_adapter.auth import Tokens
from sandex.api_adapter.cli import main
from sandex.api_adapter.webhook_delivery import Deliverer
from sandex.engine import open_engine
from sandex.engine.kernel.commands import CreateCustomer
from sandex.engine.kernel.credentials import unseal
from sandex.engine.runtime.key_file import KeyFile
from sandex.engine.store import private_files
from sandex.engine.tools.time_travel import travel
from tests.conftest import make_settings
from tests.support.file_helpers import database_bytes, file_mode, usual_umask
from tests.support.server_helpers import SANDEX, Server

ROOT = Path(__file__).resolve().parents[2]


def test_the_database_its_companions_and_key_file_are_private_under_umask_022(
    tmp_path: Path,
) -> None:
    db = tmp_path / "private.db"
    with usual_umask(), open_engine(db, make_settings()) as engine:
        engine.execute(CreateCustomer(client_id="x", client_secret="y", bootstrap=True))
        reader = sqlite3.connect(db)  # a reader keeps the -wal and -shm in place
        reader.execute("SELECT count(*) FROM events").fetchone()
        for suffix in ("", "-wal", "-shm", ".key"):
            assert Path(f"{db}{suffix}").exists(), suffix
            assert file_mode(f"{db}{suffix}") == 0o600, suffix
        reader.close()
    out = tmp_path / "then.db"
    with usual_umask():
        travel(db, out, position=3)
    assert file_mode(out) == 0o600 and file_mode(f"{out}.key") == 0o600
    assert Path(f"{out}.key").read_bytes() == Path(f"{db}.key").read_bytes()
    progress = Deliverer(str(db))
    progress._dirty = True
    with usual_umask():
        progress._flush()
    assert file_mode(progress.progress_path) == 0o600


def test_a_database_readable_by_others_is_made_private_at_open(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    open_engine(db, make_settings()).stop()
    os.chmod(db, 0o644)
    with structlog.testing.capture_logs() as logs:
        open_engine(db, make_settings()).stop()
    assert file_mode(db) == 0o600
    warned = [e for e in logs if e["log_level"] == "warning" and "private" in e["event"]]
    assert [e["path"] for e in warned] == [str(db)]
    os.chmod(f"{db}.key", 0o640)
    open_engine(db, make_settings()).stop()
    assert file_mode(f"{db}.key") == 0o600
    os.chmod(db, 0o444)  # the owner's bits stay: a read-only file stays read-only
    private_files.tighten_database(db)
    assert file_mode(db) == 0o400


def test_the_database_holds_no_signing_key(sandbox: Any) -> None:
    sandbox.tenant()
    conn = sqlite3.connect(sandbox.db)
    try:
        meta = dict(conn.execute("SELECT key, value FROM sandex_meta").fetchall())
    finally:
        conn.close()
    assert "signing_secret" not in meta  # the seed stays: no secret derives from it
    key = json.loads(Path(f"{sandbox.db}.key").read_text())
    data = database_bytes(sandbox.db)
    for name in ("signing_key", "sealing_key"):
        assert key[name].encode() not in data and bytes.fromhex(key[name]) not in data


def test_an_old_database_has_its_signing_key_moved_out_and_tokens_keep_working(
    tmp_path: Path,
) -> None:
    db = tmp_path / "legacy.db"
    with open_engine(db, make_settings()) as engine:
        engine.execute(CreateCustomer(client_id="x", client_secret="y", bootstrap=True))
    legacy = os.urandom(32).hex()
    conn = sqlite3.connect(db)  # as an older sandex left it: the key in the database
    conn.execute("INSERT INTO sandex_meta (key, value) VALUES ('signing_secret', ?)", (legacy,))
    conn.commit()
    conn.close()
    Path(f"{db}.key").unlink()
    old = Tokens(KeyFile.open(":memory:", legacy_signing=legacy), 3600).issue(
        "x", ["funding:read_profile"]
    )
    engine = open_engine(db, make_settings()).start()
    try:
        app = create_app(engine)
        with TestClient(app) as http:
            r = http.get("/v2/profiles", headers={"Authorization": f"Bearer {old}"})
            assert r.status_code == 200, r.text
        app.state.queries.close()
    finally:
        engine.stop()
    assert json.loads(Path(f"{db}.key").read_text())["signing_key"] == legacy
    assert legacy.encode() not in database_bytes(db) and bytes.fromhex(
        legacy
    ) not in database_bytes(db)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute(
            "SELECT count(*) FROM sandex_meta WHERE key = 'signing_secret'"
        ).fetchone() == (0,)
    finally:
        conn.close()


def test_a_new_database_does_not_take_over_a_key_file_left_behind(tmp_path: Path) -> None:
    db = tmp_path / "again.db"
    open_engine(db, make_settings()).stop()
    left = Path(f"{db}.key").read_bytes()
    db.unlink()
    open_engine(db, make_settings()).stop()
    assert Path(f"{db}.key").read_bytes() != left


def test_rotating_the_key_refuses_old_tokens_and_new_ones_work(sandbox: Any) -> None:
    hook = sandbox.post("/v2/sandbox/webhooks", {"url": "https://receiver.example/"}).json()
    hook = hook["secret"]
    before_keys = json.loads(Path(f"{sandbox.db}.key").read_text())
    before = sandbox.headers
    assert sandbox.get("/v2/profiles", headers=before).status_code == 200
    assert main(["keys", "rotate", "--db", str(sandbox.db)]) == 0
    r = sandbox.get("/v2/profiles", headers=before)
    assert r.status_code == 401
    after = sandbox.login("sandex", "sandex-secret")
    assert sandbox.get("/v2/profiles", headers=after).status_code == 200
    assert file_mode(f"{sandbox.db}.key") == 0o600
    after_keys = json.loads(Path(f"{sandbox.db}.key").read_text())
    assert after_keys["signing_key"] != before_keys["signing_key"]
    # the sealing key stays: a webhook registered before still opens, and signs
    assert after_keys["sealing_key"] == before_keys["sealing_key"]
    conn = sqlite3.connect(sandbox.db)
    try:
        webhook_id, sealed = conn.execute("SELECT id, secret FROM webhooks").fetchone()
    finally:
        conn.close()
    assert unseal(KeyFile.existing(sandbox.db).current().sealing, sealed, webhook_id) == hook


def test_a_live_server_follows_a_rotation_and_never_prints_an_env_secret(
    tmp_path: Path,
    servers: list[Server],  # noqa: F811 - the fixture
) -> None:
    db = tmp_path / "live.db"
    server = Server(  # logs in twice in a second: more than the token endpoint's limit
        db,
        "--no-rate-limits",
        env={"SANDEX_CLIENT_ID": "ops", "SANDEX_CLIENT_SECRET": "env-given-secret-123"},
    )
    servers.append(server)
    assert server.proc.stdout is not None
    banner = "".join(server.proc.stdout.readline() for _ in range(5))  # printed at start
    assert "client_id:     ops" in banner and "(from SANDEX_CLIENT_SECRET)" in banner
    assert "env-given-secret-123" not in banner
    old = server.token("ops", "env-given-secret-123")
    assert httpx.get(f"{server.base}/v2/profiles", headers=old).status_code == 200
    rotated = subprocess.run(
        [*SANDEX, "keys", "rotate", "--db", str(db)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rotated.returncode == 0, rotated.stderr
    assert httpx.get(f"{server.base}/v2/profiles", headers=old).status_code == 401
    new = server.token("ops", "env-given-secret-123")
    assert httpx.get(f"{server.base}/v2/profiles", headers=new).status_code == 200
    code, out, err = server.stop()
    assert code == 0
    assert "env-given-secret-123" not in out + err
