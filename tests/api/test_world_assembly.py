"""One world: the assembly around one engine (sandex.api_adapter.world.World).

A world started and stopped leaves nothing behind in the process (no thread, no open
file of its database), and two worlds in one process share nothing: the seed of the
isolation the world manager builds on."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sandex.api_adapter.bootstrap import Credentials, fixed
from sandex.api_adapter.world import World
from sandex.engine.store import LeaseHeld, locate
from tests.conftest import make_settings

HOOKS = {"webhook_allowed_hosts": ["127.0.0.1"]}  # a receiver on this machine (none listens)
ORDER = {
    "side": "BUY",
    "market": "BTCUSD",
    "type": "LIMIT",
    "price": "30000",
    "base_amount": "0.001",
}


def _open_files(under: Path) -> list[str]:
    """The files under `under` this process holds open."""
    fds = Path("/proc/self/fd")
    found = []
    for fd in fds.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed since the listing
            continue
        if target.startswith(str(under)):
            found.append(target)
    return found


def _headers(http: TestClient, credentials: Credentials) -> dict[str, str]:
    form = {
        "grant_type": "client_credentials",
        "client_id": credentials.client_id,
        "client_secret": credentials.client_secret,
    }
    answer = http.post("/oauth2/token", data=form)
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['access_token']}"}


def _drive(world: World) -> tuple[dict[str, str], str]:
    """Log in, fund, place a resting order, read it back, register a webhook: every
    part of the world has worked. The headers and the order's id."""
    http = TestClient(world.app, raise_server_exceptions=False)
    headers = _headers(http, world.credentials)
    deposit = {"asset": "USD", "amount": "1000"}
    assert http.post("/v2/sandbox/profiles/default/deposit", json=deposit, headers=headers)
    placed = http.post("/v2/profiles/default/orders", json=ORDER, headers=headers)
    assert placed.status_code == 200, placed.text
    order = placed.json()["id"]
    assert http.get(f"/v2/profiles/default/orders/{order}", headers=headers).status_code == 200
    hook = {"url": "http://127.0.0.1:9/hook"}
    assert http.post("/v2/sandbox/webhooks", json=hook, headers=headers).status_code == 200
    http.close()
    return headers, order


def _sessions(db: Any, *, ended: bool = False) -> int:
    """The sessions other than this one that a server database has open (none for a
    file). `ended`: the sessions were all closed, so wait (up to 10 s) for the server to
    end their backends, which it does after a client's close has returned."""
    where = locate(db)
    if not where.on_server:
        return 0
    import psycopg

    deadline = time.monotonic() + 10
    with psycopg.connect(where.conninfo()[0], autocommit=True) as conn:
        while True:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
            count = int(row[0]) if row else 0
            if not ended or count == 0 or time.monotonic() > deadline:
                return count
            time.sleep(0.05)


def test_a_world_started_and_stopped_leaves_no_thread_and_no_open_file(
    tmp_path: Path, database: Any
) -> None:
    """On a server, no open session either; beside a file, no open file of it."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc/self/fd to list the open files")
    db = database("w.db")
    before = set(threading.enumerate())
    world = World.open(
        db, make_settings(clock="wall", **HOOKS), bootstrap=fixed("sandex", "sandex-secret")
    ).start()
    assert world.start() is world  # a second start does nothing
    _drive(world)
    started = {t.name for t in set(threading.enumerate()) - before}
    # the engine's writer among others; the deliverer and the wall clock's scheduler are
    # the process's, already running when a plugin world's server runs in this process
    assert "sandex-writer" in started
    assert {"sandex-webhooks", "APScheduler"} <= {t.name for t in threading.enumerate()}
    if locate(db).on_server:
        assert _sessions(db) > 0
    else:
        assert _open_files(tmp_path)
    world.stop()
    world.stop()  # a second stop does nothing
    assert [t.name for t in set(threading.enumerate()) - before if t.is_alive()] == []
    assert _open_files(tmp_path) == []  # the database, or its key file and such
    assert _sessions(db, ended=True) == 0


def test_a_world_that_fails_to_start_gives_its_database_back(database: Any) -> None:
    db = database("w.db")

    def refused(engine: Any) -> Credentials:
        raise RuntimeError("no bootstrap client")

    world = World.open(db, make_settings(), bootstrap=refused)
    with pytest.raises(RuntimeError, match="no bootstrap client"):
        world.start()
    with pytest.raises(RuntimeError, match="stopped"):
        world.start()
    again = World.open(db, make_settings(), bootstrap=fixed("sandex", "sandex-secret"))
    with again.start():  # the writer lease was given back: no LeaseHeld
        assert again.credentials.client_id == "sandex"


def test_a_second_world_on_a_database_in_use_is_refused(database: Any) -> None:
    db = database("w.db")
    bootstrap = fixed("sandex", "sandex-secret")
    with World.open(db, make_settings(), bootstrap=bootstrap).start(), pytest.raises(LeaseHeld):
        World.open(db, make_settings(), bootstrap=bootstrap)


@pytest.fixture
def two_worlds(database: Any) -> Iterator[tuple[World, World]]:
    bootstrap = fixed("sandex", "sandex-secret")
    a = World.open(database("a.db"), make_settings(seed=1, **HOOKS), bootstrap=bootstrap).start()
    b = World.open(database("b.db"), make_settings(seed=2, **HOOKS), bootstrap=bootstrap).start()
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


def test_two_worlds_in_one_process_share_nothing(two_worlds: tuple[World, World]) -> None:
    a, b = two_worlds
    assert a.app is not b.app and a.engine is not b.engine
    a_headers, a_order = _drive(a)
    b_headers, b_order = _drive(b)
    assert a_order != b_order
    http_b = TestClient(b.app, raise_server_exceptions=False)
    # The same client id in both, but a token is signed with its own world's key.
    assert http_b.get("/v2/profiles", headers=a_headers).status_code == 401
    missing = http_b.get(f"/v2/profiles/default/orders/{a_order}", headers=b_headers)
    assert missing.status_code == 404, missing.text
    listed = http_b.get("/v2/profiles/default/orders", headers=b_headers).json()["items"]
    assert [o["id"] for o in listed] == [b_order]
    # Each world has its own clock: moving A's leaves B's where it was.
    http_a = TestClient(a.app, raise_server_exceptions=False)
    before = http_b.get("/v2/sandbox/clock", headers=b_headers).json()
    moved = http_a.post("/v2/sandbox/clock", json={"advance_seconds": 3600}, headers=a_headers)
    assert moved.status_code == 200, moved.text
    assert http_b.get("/v2/sandbox/clock", headers=b_headers).json() == before
    assert a.clock_mode == b.clock_mode == "manual"


def _route_analyses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths FastAPI analyses a route for (`get_dependant`) from now on."""
    import fastapi.routing

    analysed: list[str] = []
    real = fastapi.routing.get_dependant

    def counted(*args: Any, **kwargs: Any) -> Any:
        analysed.append(kwargs.get("path", "?"))
        return real(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "get_dependant", counted)
    return analysed


def test_a_worlds_first_requests_analyse_no_route_another_world_has(
    two_worlds: tuple[World, World], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FastAPI analyses an operation (its dependencies, parameters, body) when its
    router's inclusion first matches a request; every world's app serves the same
    inclusions, so that a world forked per test does not pay it again."""
    a, b = two_worlds
    _drive(a)
    analysed = _route_analyses(monkeypatch)
    _drive(b)
    assert analysed == []


def test_a_worlds_app_makes_no_route_but_its_openapi_documents(
    two_worlds: tuple[World, World], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The docs pages (/docs, its OAuth2 redirect, their static files) are built once
    for every world's app, as the API's routes are; each app serves its own OpenAPI
    document, and the page points at its world's own document."""
    from sandex.api_adapter.app import create_app

    a, b = two_worlds
    made = _route_analyses(monkeypatch)
    app = create_app(b.engine, webhooks_on_lifespan=False)
    monkeypatch.undo()
    assert made == []
    for served in (a.app, app):
        page = TestClient(served, root_path="/w/w_1").get("/docs")
        assert page.status_code == 200 and "/w/w_1/openapi.json" in page.text
        http = TestClient(served)
        assert http.get("/static-offline-docs/swagger-ui.css").status_code == 200
        assert http.get("/docs/oauth2-redirect").status_code == 200
        assert http.get("/openapi.json").json()["info"]["title"] == "sandex"


def _until(done: Any, seconds: float = 10.0) -> bool:
    """Whether `done()` came true within `seconds` (polled)."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_loaded_idle_world_holds_no_read_connection_for_its_background_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server keeps many idle worlds loaded: loading the fault rules and looking for
    webhook registrations (none) keep no read connection open between their reads; a
    commit made without a nudge is still looked at."""
    from sandex.api_adapter import webhook_delivery

    looks: list[int] = []
    real = webhook_delivery.webhook_status.deliveries

    def deliveries(reads: Any) -> Any:
        found = real(reads)
        looks.append(len(found))
        return found

    monkeypatch.setattr(webhook_delivery.webhook_status, "deliveries", deliveries)
    world = World.open(
        tmp_path / "w.db",
        make_settings(clock="wall", **HOOKS),
        bootstrap=fixed("sandex", "sandex-secret"),
    )
    with world.start():
        app_reads = world.app.state.queries
        assert app_reads.held() == 0  # the fault rules were read by the thread that built it
        deliverer_reads = world.app.state.webhooks._reads
        assert _until(lambda: looks and deliverer_reads.held() == 0), (
            "the idle deliverer kept its read connection"
        )
        seen = len(looks)
        http = TestClient(world.app)
        headers = _headers(http, world.credentials)
        deposit = {"asset": "USD", "amount": "1000"}
        assert http.post("/v2/sandbox/profiles/default/deposit", json=deposit, headers=headers)
        http.close()
        # the deposit's commit changed the database: the registrations are read again
        assert _until(lambda: len(looks) > seen), "a commit went unnoticed"
        assert _until(lambda: deliverer_reads.held() == 0)
