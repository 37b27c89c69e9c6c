"""Load for the crash tests (test_crash, test_world_crash): tenants that deposit,
withdraw and trade from threads, every answer recorded, and the checks that nothing
acknowledged was lost after a SIGKILL. `base` is where a sandbox's paths start: the
server (the default world) or `<server>/w/<id>` (a world), so `/oauth2/token` and
`/v2/...` follow it in both."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import threading
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from tests.support.server_helpers import ROOT, SANDEX

ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
# What each tenant is funded with, and each request's amounts (the balance check's terms).
FUNDING = (("BTC", "5"), ("USD", "1000000"))
DEPOSIT_BTC = Decimal("0.001")


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


OPERATOR = Tenant("sandex", "sandex-secret", "")  # the default world's bootstrap client


def token(base: str, tenant: Tenant) -> dict[str, str]:
    form = {
        "grant_type": "client_credentials",
        "client_id": tenant.client_id,
        "client_secret": tenant.secret,
    }
    r = httpx.post(f"{base}/oauth2/token", data=form, timeout=10)
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def tenants(base: str, n: int, admin: Tenant = OPERATOR) -> list[Tenant]:
    """`n` new customers of the sandbox at `base` (made by its bootstrap client `admin`),
    each funded with FUNDING and logged in."""
    admin_headers = token(base, admin)
    made_tenants = []
    for _ in range(n):
        made = httpx.post(f"{base}/v2/sandbox/customers", headers=admin_headers, timeout=10)
        assert made.status_code == 200, made.text
        body = made.json()
        tenant = Tenant(body["client_id"], body["client_secret"], body["profile_id"])
        tenant.headers = token(base, tenant)
        for asset, amount in FUNDING:
            r = httpx.post(
                f"{base}/v2/sandbox/profiles/default/deposit",
                json={"asset": asset, "amount": amount},
                headers=tenant.headers,
                timeout=10,
            )
            assert r.status_code == 200, r.text
        made_tenants.append(tenant)
    return made_tenants


def request(rng: random.Random, tenant: Tenant) -> tuple[str, str, dict[str, Any]]:
    kind = rng.choice(["deposit", "withdrawal", "order", "order"])
    if kind == "deposit":
        body = {"asset": "BTC", "amount": str(DEPOSIT_BTC)}
        return kind, "/v2/sandbox/profiles/default/deposit", body
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


def worker(
    base: str, tenant: Tenant, name: str, seed: float, stop: threading.Event, out: list[Outcome]
) -> None:
    """Send the tenant's requests one after another until `stop` or the connection
    fails (the kill); each answer, or its absence, goes to `out`."""
    rng = random.Random(seed)
    with httpx.Client(base_url=base, timeout=10) as client:
        n = 0
        while not stop.is_set():
            kind, path, body = request(rng, tenant)
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


def logged_request_ids(db: Path) -> dict[str, set[str]]:
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


def listed(base: str, path: str, headers: dict[str, str]) -> list[dict[str, Any]]:
    """Every item of a list operation, all pages."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"limit": 500, **({"page_cursor": cursor} if cursor else {})}
        r = httpx.get(f"{base}{path}", params=params, headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        page = r.json()
        items.extend(page["items"])
        cursor = page.get("next_page_cursor")
        if not cursor:
            return items


def visible(base: str, tenant: Tenant) -> dict[str, dict[str, Any]]:
    """Every order and transfer the tenant can list, by id."""
    seen: dict[str, dict[str, Any]] = {}
    for path in (f"/v2/profiles/{tenant.profile_id}/orders", "/v2/transfer/transfers"):
        seen.update({item["id"]: item for item in listed(base, path, tenant.headers)})
    return seen


def check_outcomes(
    outcomes: list[Outcome], logged: dict[str, set[str]], seen: dict[str, dict[str, dict[str, Any]]]
) -> None:
    """Every 200 of `outcomes` is in the log (`logged`) and visible (`seen`: client id ->
    `visible`); no refused request left an event; an unanswered request is wholly
    applied or not at all."""
    answered = [o for o in outcomes if o.status is not None]
    acknowledged = [o for o in answered if o.status == 200]
    missing = [o.request_id for o in acknowledged if o.request_id not in logged]
    assert not missing, f"acknowledged but not in the log: {missing[:10]}"
    refused_but_logged = [
        o.request_id for o in answered if o.status != 200 and o.request_id in logged
    ]
    assert not refused_but_logged, refused_but_logged[:10]
    for o in acknowledged:
        assert o.tenant is not None
        key = "activity_id" if o.kind == "deposit" else "id"
        item = seen[o.tenant.client_id].get(o.body[key])
        assert item is not None, f"{o.kind} {o.request_id} acknowledged but not visible"
        if o.kind == "order":
            assert item["ref_id"] == o.request_id
            assert item["status"] in ("FILLED", "CANCELLED", "OPEN", "SUBMITTED"), item
    for o in outcomes:
        if o.status is None and o.request_id in logged:
            assert o.tenant is not None
            for stream in logged[o.request_id]:
                kind, _, ident = stream.partition("-")
                if kind in ("order", "transfer"):
                    assert ident in seen[o.tenant.client_id], (o.request_id, stream)


def verify(db: Path, world: str | None = None) -> None:
    """`sandex verify` passes on the database, or on its world `world`."""
    args = ["--world", world] if world else []
    done = subprocess.run(
        [*SANDEX, "verify", "--db", str(db), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
