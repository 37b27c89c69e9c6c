"""Crash safety: `sandex serve` killed with SIGKILL under concurrent load loses nothing it
acknowledged and leaves nothing half-applied.

Several clients of several customers deposit, withdraw and trade at once; the server is
killed at a seeded random moment, restarted on the same database, killed again, and so
on. Then every request answered 200 must be in the event log and visible through the
API, no request answered with an error may have left an event, and `sandex verify`
must pass (gapless log, balanced ledger, no negative balance, read models equal to a
rebuild)."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.server_helpers import ROOT, Process

SANDEX = [sys.executable, "-m", "api_adapter.cli"]
ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
ROUNDS = 3
SEED = 20240601


@dataclass
class Tenant:
    client_id: str
    secret: str
    profile_id: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Outcome:
    request_id: str
    kind: str
    status: int | None  # None: no answer before the kill
    body: Any = None
    tenant: Tenant | None = None


def _token(base: str, tenant: Tenant) -> dict[str, str]:
    form = {
        "grant_type": "client_credentials",
        "client_id": tenant.client_id,
        "client_secret": tenant.secret,
    }
    r = httpx.post(f"{base}/oauth2/token", data=form, timeout=10)
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def _tenants(base: str, n: int) -> list[Tenant]:
    admin = _token(base, Tenant("sandex", "sandex-secret", ""))
    tenants = []
    for _ in range(n):
        made = httpx.post(f"{base}/v2/sandbox/customers", headers=admin, timeout=10).json()
        tenant = Tenant(made["client_id"], made["client_secret"], made["profile_id"])
        tenant.headers = _token(base, tenant)
        for asset, amount in (("BTC", "5"), ("USD", "1000000")):
            r = httpx.post(
                f"{base}/v2/sandbox/profiles/default/deposit",
                json={"asset": asset, "amount": amount},
                headers=tenant.headers,
                timeout=10,
            )
            assert r.status_code == 200, r.text
        tenants.append(tenant)
    return tenants


def _request(rng: random.Random, tenant: Tenant) -> tuple[str, str, dict[str, Any]]:
    kind = rng.choice(["deposit", "withdrawal", "order", "order"])
    if kind == "deposit":
        return kind, "/v2/sandbox/profiles/default/deposit", {"asset": "BTC", "amount": "0.001"}
    if kind == "withdrawal":
        body = {
            "profile_id": tenant.profile_id,
            "asset": "BTC",
            "destination_address": ADDRESS,
            "crypto_network": "BITCOIN",
            "amount": "0.0001",
        }
        return kind, "/v2/transfer/crypto-withdrawals", body
    side = rng.choice(["BUY", "SELL"])
    body = {"side": side, "market": "BTCUSD", "type": "MARKET"}
    body.update({"quote_amount": "50"} if side == "BUY" else {"base_amount": "0.0005"})
    return kind, f"/v2/profiles/{tenant.profile_id}/orders", body


def _worker(
    base: str, tenant: Tenant, name: str, seed: int, stop: threading.Event, out: list[Outcome]
) -> None:
    rng = random.Random(seed)
    with httpx.Client(base_url=base, timeout=10) as client:
        n = 0
        while not stop.is_set():
            kind, path, body = _request(rng, tenant)
            request_id = f"{name}-{n}"
            n += 1
            if kind != "deposit":
                body["ref_id"] = request_id
            headers = {**tenant.headers, "X-Request-ID": request_id}
            try:
                r = client.post(path, json=body, headers=headers)
            except httpx.TransportError:
                out.append(Outcome(request_id, kind, None, tenant=tenant))
                return
            answer = r.json() if r.content else None
            out.append(Outcome(request_id, kind, r.status_code, answer, tenant))


def _logged_request_ids(db: Path) -> dict[str, set[str]]:
    """Request id -> the streams its events wrote (`order-<id>`, `transfer-<id>`, ...)."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT stream, meta FROM events ORDER BY position").fetchall()
    finally:
        conn.close()
    found: dict[str, set[str]] = {}
    for stream, meta in rows:
        request_id = json.loads(meta).get("request_id")
        if request_id:
            found.setdefault(request_id, set()).add(stream)
    return found


def _visible(base: str, tenant: Tenant) -> dict[str, dict[str, Any]]:
    """Every order and transfer the tenant can list, by id, all pages."""
    seen: dict[str, dict[str, Any]] = {}
    for path in (f"/v2/profiles/{tenant.profile_id}/orders", "/v2/transfer/transfers"):
        cursor = None
        while True:
            params = {"limit": 1000, **({"page_cursor": cursor} if cursor else {})}
            r = httpx.get(f"{base}{path}", params=params, headers=tenant.headers, timeout=30)
            assert r.status_code == 200, r.text
            page = r.json()
            seen.update({item["id"]: item for item in page["items"]})
            cursor = page.get("next_page_cursor")
            if not cursor:
                break
    return seen


def test_sigkill_under_load_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    db = tmp_path / "crash.db"
    log = tmp_path / "server.log"
    outcomes: list[Outcome] = []
    tenants: list[Tenant] = []
    started = time.monotonic()
    for round_ in range(ROUNDS):
        server = Process(db, log)
        if not tenants:
            tenants = _tenants(server.base, 3)
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=_worker,
                args=(server.base, tenant, f"r{round_}t{i}w{w}", rng.random(), stop, outcomes),
            )
            for i, tenant in enumerate(tenants)
            for w in range(2)
        ]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.3, 1.0))  # the seeded moment of the kill
        server.kill()
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert time.monotonic() - started < 120

    answered = [o for o in outcomes if o.status is not None]
    acknowledged = [o for o in answered if o.status == 200]
    assert len(acknowledged) > 15, f"too little load: {len(acknowledged)} acknowledged"
    assert {o.status for o in answered} <= {200, 403}, {o.status for o in answered}
    assert any(o.status is None for o in outcomes)  # some requests were cut off by the kill

    logged = _logged_request_ids(db)
    missing = [o.request_id for o in acknowledged if o.request_id not in logged]
    assert not missing, f"acknowledged but not in the log: {missing[:10]}"
    refused_but_logged = [
        o.request_id for o in answered if o.status != 200 and o.request_id in logged
    ]
    assert not refused_but_logged, refused_but_logged[:10]

    server = Process(db, log)
    try:
        visible = {t.client_id: _visible(server.base, t) for t in tenants}
    finally:
        server.stop()
    for o in acknowledged:
        assert o.tenant is not None
        key = "activity_id" if o.kind == "deposit" else "id"
        item = visible[o.tenant.client_id].get(o.body[key])
        assert item is not None, f"{o.kind} {o.request_id} acknowledged but not visible"
        if o.kind == "order":
            assert item["ref_id"] == o.request_id
            assert item["status"] in ("FILLED", "CANCELLED", "OPEN", "SUBMITTED"), item
    # An unanswered request is wholly applied or not at all: what it wrote is visible.
    for o in outcomes:
        if o.status is None and o.request_id in logged:
            assert o.tenant is not None
            for stream in logged[o.request_id]:
                kind, _, ident = stream.partition("-")
                if kind in ("order", "transfer"):
                    assert ident in visible[o.tenant.client_id], (o.request_id, stream)
    done = subprocess.run(
        [*SANDEX, "verify", "--db", str(db)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
