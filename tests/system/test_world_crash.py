"""Crash safety across worlds: `sandex serve` killed with SIGKILL while eight worlds and
the default one are driven at once loses nothing any of them acknowledged.

The worlds are of every kind: wall clock and manual, made empty and forked from a
template's snapshot (a copy of its files, and its log's prefix once the template has
moved on). In each, a tenant's clients deposit, withdraw and trade from threads (the
load of test_crash, tests/support/crash_helpers.py), while another thread keeps making
worlds; the server is killed at a seeded moment, restarted on the same database, driven
and killed again. Then in every world each 200 is in that world's log and visible
through its API, its BTC balance is what the acknowledged requests add up to, and
`sandex verify --world` passes; and the worlds list holds every world whose creation was
answered, each of which answers."""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandex.api_adapter.worlds.manager import folder_for
from tests.support.crash_helpers import (
    DEPOSIT_BTC,
    FUNDING,
    OPERATOR,
    Outcome,
    Tenant,
    check_outcomes,
    listed,
    logged_request_ids,
    tenants,
    token,
    verify,
    visible,
    worker,
)
from tests.support.server_helpers import Process

ROUNDS = 2
SEED = 20261129
MANUAL = {"clock": "manual", "start_time": "2024-01-01T00:00:00Z"}

pytestmark = pytest.mark.slow


@dataclass
class Place:
    """A world under load (`world_id` None: the default world), its tenants and every
    answer they got."""

    name: str
    world_id: str | None
    tenants: list[Tenant] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)

    def base(self, server: str) -> str:
        return server if self.world_id is None else f"{server}/w/{self.world_id}"

    def db(self, default_db: Path) -> Path:
        if self.world_id is None:
            return default_db
        return folder_for(default_db) / f"{self.world_id}.db"


@dataclass
class Creation:
    """A world made during the load: its id once answered (None: no answer, the kill)."""

    body: dict[str, Any]
    status: int | None = None
    world_id: str | None = None


def _create(server: str, admin: dict[str, str], body: dict[str, Any]) -> dict[str, Any]:
    r = httpx.post(f"{server}/v2/sandbox/worlds", json=body, headers=admin, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _places(server: str) -> tuple[list[Place], str]:
    """The default world and eight others, each with a funded tenant; and the template's
    id (its snapshot `funded` is what the forks start from)."""
    admin = token(server, OPERATOR)
    places = [Place("default", None, tenants(server, 1))]
    bodies = [
        ("wall-1", {}),
        ("wall-2", {"seed": 7}),
        ("wall-3", {"settings": {"maker_fee_rate": "0.001"}}),
        ("manual-1", MANUAL),
        ("manual-2", {**MANUAL, "start_time": "2030-06-01T12:00:00Z"}),
    ]
    for name, body in bodies:
        made = _create(server, admin, {**body, "name": name})
        boot = Tenant(made["client_id"], made["client_secret"], made["profile_id"])
        place = Place(name, made["id"])
        place.tenants = tenants(place.base(server), 1, admin=boot)
        places.append(place)
    made = _create(server, admin, {**MANUAL, "name": "template"})
    template = Place("template", made["id"])
    boot = Tenant(made["client_id"], made["client_secret"], made["profile_id"])
    base = template.base(server)
    template.tenants = tenants(base, 1, admin=boot)
    boot.headers = token(base, boot)
    r = httpx.post(f"{base}/v2/sandbox/snapshots", json={"name": "funded"}, headers=boot.headers)
    assert r.status_code == 200, r.text
    places.append(template)
    fork = {"from_world": template.world_id, "from_snapshot": "funded"}
    for name in ("fork-copy", "fork-prefix"):
        if name == "fork-prefix":  # the template moves on: this fork is its log's prefix
            r = httpx.post(
                f"{base}/v2/sandbox/profiles/default/deposit",
                json={"asset": "USD", "amount": "1"},
                headers=boot.headers,
            )
            assert r.status_code == 200, r.text
        made = _create(server, admin, {**fork, "name": name})
        assert "client_secret" not in made  # the template's clients, with their secrets
        place = Place(name, made["id"])
        # the template's funded tenant, with a token of the fork's own key
        for kept in template.tenants:
            tenant = Tenant(kept.client_id, kept.secret, kept.profile_id)
            tenant.headers = token(place.base(server), tenant)
            place.tenants.append(tenant)
        places.append(place)
    return places, str(template.world_id)


def _creator(
    server: str, template: str, stop: threading.Event, out: list[Creation], seed: float
) -> None:
    """Make worlds one after another (empty ones and forks of the template) until `stop`
    or the kill."""
    rng = random.Random(seed)
    try:
        admin = token(server, OPERATOR)
    except httpx.TransportError:
        return  # killed already
    with httpx.Client(timeout=30) as http:
        while not stop.is_set():
            if rng.random() < 0.5:
                body: dict[str, Any] = {"from_world": template, "from_snapshot": "funded"}
            else:
                body = {**MANUAL}
            creation = Creation({**body, "name": f"made-{len(out)}"})
            out.append(creation)
            try:
                r = http.post(f"{server}/v2/sandbox/worlds", json=creation.body, headers=admin)
            except httpx.TransportError:
                return
            creation.status = r.status_code
            if r.status_code == 200:
                creation.world_id = r.json()["id"]


def _btc_expected(place: Place, base: str, tenant: Tenant, logged: dict[str, set[str]]) -> Decimal:
    """The tenant's BTC from what it did: its funding, every deposit that happened (the
    acknowledged ones and those cut off after their commit), less its withdrawals
    (amount and fee, held or sent), plus what its orders bought, less what they sold."""
    mine = [o for o in place.outcomes if o.tenant is tenant and o.kind == "deposit"]
    deposits = [o for o in mine if o.status == 200 or (o.status is None and o.request_id in logged)]
    total = Decimal(dict(FUNDING)["BTC"]) + DEPOSIT_BTC * len(deposits)
    for item in listed(base, "/v2/transfer/transfers", tenant.headers):
        if item["type"] == "CRYPTO_WITHDRAWAL" and item["status"] not in ("FAILED", "CANCELLED"):
            total -= Decimal(item["total"])
    executions = f"/v2/profiles/{tenant.profile_id}/executions"
    for fill in listed(base, executions, tenant.headers):
        total += Decimal(fill["amount"]) * (1 if fill["side"] == "BUY" else -1)
    return total


def test_sigkill_under_load_across_eight_worlds_loses_nothing_acknowledged(
    tmp_path: Path,
) -> None:
    rng = random.Random(SEED)
    db = tmp_path / "crash.db"
    log = tmp_path / "server.log"
    creations: list[Creation] = []
    started = time.monotonic()
    server = Process(db, log)
    try:
        places, template = _places(server.base)
    except BaseException:
        server.kill()
        raise
    assert len(places) == 9 and len({p.world_id for p in places}) == 9
    for round_ in range(ROUNDS):
        if round_:
            server = Process(db, log)
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=worker,
                args=(
                    place.base(server.base),
                    tenant,
                    f"{place.name}-r{round_}w{w}",
                    rng.random(),
                    stop,
                    place.outcomes,
                ),
            )
            for place in places
            for tenant in place.tenants
            for w in range(2)
        ]
        threads.append(
            threading.Thread(
                target=_creator, args=(server.base, template, stop, creations, rng.random())
            )
        )
        for t in threads:
            t.start()
        time.sleep(rng.uniform(1.0, 2.0))  # the seeded moment of the kill
        server.kill()
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert time.monotonic() - started < 180

    for place in places:
        answered = [o for o in place.outcomes if o.status is not None]
        acknowledged = [o for o in answered if o.status == 200]
        assert len(acknowledged) >= 4, f"too little load in {place.name}: {len(acknowledged)}"
        assert {o.status for o in answered} <= {200, 403}, (place.name, answered)
    outcomes = [o for place in places for o in place.outcomes]
    assert any(o.status is None for o in outcomes)  # some requests were cut off by the kill
    assert {c.status for c in creations} <= {200, None}, [c.status for c in creations]
    made = [c.world_id for c in creations if c.world_id is not None]
    assert made, "no world was made during the load"

    server = Process(db, log)
    try:
        admin = token(server.base, OPERATOR)
        for place in places:
            base = place.base(server.base)
            logged = logged_request_ids(place.db(db))
            check_outcomes(
                place.outcomes, logged, {t.client_id: visible(base, t) for t in place.tenants}
            )
            for tenant in place.tenants:
                r = httpx.get(f"{base}/v2/profiles/default/balances/BTC", headers=tenant.headers)
                assert r.status_code == 200, r.text
                balance = Decimal(r.json()["available"]) + Decimal(r.json()["trading"])
                assert balance == _btc_expected(place, base, tenant, logged), place.name
        # the worlds list: the eight, every world made during the load whose creation was
        # answered, and at most the one creation each kill cut off; each of them answers
        worlds = {w["id"]: w for w in listed(server.base, "/v2/sandbox/worlds", admin)}
        named = {p.world_id: p.name for p in places if p.world_id is not None}
        assert {i: worlds[i]["name"] for i in named if i in worlds} == named
        assert set(made) <= set(worlds)
        unanswered = [c for c in creations if c.status is None]
        assert len(set(worlds) - set(named) - set(made)) <= len(unanswered)
        for world_id in worlds:
            r = httpx.get(f"{server.base}/w/{world_id}/healthz", timeout=30)
            assert r.status_code == 200, (world_id, r.text)
        # and what the kills cut off (a world half made) left no file behind
        strays = [p.name for p in folder_for(db).iterdir() if p.name.split(".")[0] not in worlds]
        assert strays == []
    finally:
        server.stop()
    with ThreadPoolExecutor(2) as pool:
        checks = [pool.submit(verify, db)]
        checks += [pool.submit(verify, db, world_id) for world_id in worlds]
        for check in checks:
            check.result()
