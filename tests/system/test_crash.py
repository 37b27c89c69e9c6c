"""Crash safety: `sandex serve` killed with SIGKILL under concurrent load loses nothing it
acknowledged and leaves nothing half-applied.

Several clients of several customers deposit, withdraw and trade at once; the server is
killed at a seeded random moment, restarted on the same database, killed again, and so
on. Then every request answered 200 must be in the event log and visible through the
API, no request answered with an error may have left an event, and `sandex verify`
must pass (gapless log, balanced ledger, no negative balance, read models equal to a
rebuild). The load and the checks are tests/support/crash_helpers.py's, shared with the
worlds' crash test (test_world_crash)."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

from tests.support.crash_helpers import (
    Outcome,
    Tenant,
    check_outcomes,
    logged_request_ids,
    tenants,
    verify,
    visible,
    worker,
)
from tests.support.server_helpers import Process

ROUNDS = 3
SEED = 20240601


def test_sigkill_under_load_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    db = tmp_path / "crash.db"
    log = tmp_path / "server.log"
    outcomes: list[Outcome] = []
    made: list[Tenant] = []
    started = time.monotonic()
    for round_ in range(ROUNDS):
        server = Process(db, log)
        if not made:
            made = tenants(server.base, 3)
        stop = threading.Event()
        threads = [
            threading.Thread(
                target=worker,
                args=(server.base, tenant, f"r{round_}t{i}w{w}", rng.random(), stop, outcomes),
            )
            for i, tenant in enumerate(made)
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

    server = Process(db, log)
    try:
        seen = {t.client_id: visible(server.base, t) for t in made}
    finally:
        server.stop()
    check_outcomes(outcomes, logged_request_ids(db), seen)
    verify(db)
