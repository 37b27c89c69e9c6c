"""Worlds: independent sandboxes in one server, served under `/w/{world}/` by the
dispatcher in front of the default world's app (docs/worlds.md), driven through HTTP, on
the tests' store (`--backend`): a world is an SQLite file beside an SQLite default
database, a schema of the same database beside a PostgreSQL one."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from structlog.testing import capture_logs

from sandex.api_adapter.webhook_delivery import PROGRESS_SUFFIX
from sandex.api_adapter.worlds.manager import WorldManager, folder_for, location_of, records
from sandex.engine.kernel.clock import format_time
from sandex.engine.runtime import key_file
from sandex.engine.store import LeaseHeld, SqliteEventStore, locate, private_files, take_lease
from sandex.engine.tools.time_travel import log_hash
from sandex.engine.tools.verify import verify
from tests.conftest import Sandbox, make_settings
from tests.support.server_helpers import ROOT, SANDEX, Process, Server
from tests.support.stream_helpers import receive
from tests.support.trading_helpers import limit
from tests.support.webhook_receivers import LOCAL, Receiver, opened, wait
from tests.support.world_helpers import MANUAL, Front, World

pytestmark = pytest.mark.default_world_only(
    "the worlds of a server are managed from its default world"
)


def _schemas(db: Any) -> list[str]:
    """The schemas of the default database's server database (none beside a file)."""
    where = locate(db)
    if not where.on_server:
        return []
    import psycopg

    with psycopg.connect(where.conninfo()[0]) as conn:
        return [str(r[0]) for r in conn.execute("SELECT nspname FROM pg_namespace")]


def _traces(db: Any, world_id: str) -> list[str]:
    """What is left of a world: its files in the worlds folder, its schema on a server."""
    files = [p.name for p in folder_for(db).glob(f"{world_id}*")]
    return files + [s for s in _schemas(db) if s == world_id]


def _store(db: Any, world_id: str) -> str:
    """Where a world's log lives, as a tool's `--db` names it: its schema of a server's
    database, else its file in the worlds folder."""
    where = locate(db)
    if where.on_server:
        return where.with_schema(world_id).text
    return str(folder_for(db) / f"{world_id}.db")


def _status(front: Front, world: World) -> dict[str, Any]:
    r = front.http.get(f"/v2/sandbox/worlds/{world.id}", headers=front.headers)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_an_idle_world_is_unloaded_and_comes_back_as_it_was(front: Front, sandbox: Any) -> None:
    world = front.world()
    world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "12"})
    order = world.order(**limit("BUY", "20000", "0.0001"))
    world.ok("POST", "/v2/sandbox/clock", {"advance_seconds": 30})
    before = _status(front, world)
    manager = sandbox.app.state.worlds
    manager.sweep(time.time() + sandbox.engine.settings.world_idle_unload_seconds + 1)
    unloaded = _status(front, world)
    assert unloaded["loaded"] is False and unloaded["events"] == before["events"]
    assert verify(_store(sandbox.db, world.id)) == []
    # its next request loads it: the same clock, balances and orders, the same token
    assert world.ok("GET", "/v2/sandbox/clock")["now"] == before["clock"]["now"]
    assert world.balance("USD") == "10"
    assert world.ok("GET", f"/v2/profiles/default/orders/{order['id']}")["status"] == "OPEN"
    assert _status(front, world)["loaded"] is True


def test_at_most_max_loaded_worlds_are_loaded_the_least_recently_used_unloaded_first(
    sandbox_factory: Any,
) -> None:
    sandbox = sandbox_factory(max_loaded_worlds=2)
    front = Front(sandbox)
    first, second = front.world(), front.world()
    first.ok("GET", "/v2/profiles")  # second is now the least recently used
    third = front.world()
    loaded = {w.id: _status(front, w)["loaded"] for w in (first, second, third)}
    assert loaded == {first.id: True, second.id: False, third.id: True}
    assert second.ok("GET", "/v2/profiles")["items"][0]["id"] == second.made["profile_id"]
    assert _status(front, first)["loaded"] is False
    front.http.close()


def test_a_server_keeps_at_most_max_worlds(sandbox_factory: Any) -> None:
    sandbox = sandbox_factory(max_worlds=1)
    front = Front(sandbox)
    front.world()
    r = front.create(MANUAL)
    assert r.status_code == 403 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["meta"] == {"limit": "max_worlds", "max_worlds": 1}
    front.http.close()


def test_a_world_idle_past_its_expiry_is_deleted_on_its_own(front: Front, sandbox: Any) -> None:
    short = front.world({**MANUAL, "expires_after_idle_seconds": 60})
    kept = front.world()
    assert _status(front, short)["expires_after_idle_seconds"] == 60
    sandbox.app.state.worlds.sweep(time.time() + 61)
    assert short.get("/v2/profiles").status_code == 404
    assert _traces(sandbox.db, short.id) == []
    assert _status(front, kept)["loaded"] is True


def test_what_a_crash_cut_off_in_the_worlds_folder_goes_when_the_server_opens_again(
    sandbox_factory: Any,
) -> None:
    """A creation killed before its manifest (written last), or a deletion killed after
    removing it (first), leaves files no list shows and no delete reaches."""
    first = sandbox_factory()
    front = Front(first)
    kept = front.world()
    front.http.close()
    first.close()
    folder = folder_for(first.db)
    cut_off = f"w_{'c' * 24}"
    left = [folder / f"{cut_off}{tail}" for tail in (".db", ".db-wal", ".db.key", ".db.lock")]
    left.append(folder / f".{kept.id}.json.0a1b2c3d.tmp")
    for path in left:
        path.write_bytes(b"cut off")
    on_server = locate(first.db).on_server
    if on_server:  # its log too: a schema of the database, with its tables
        import psycopg

        with psycopg.connect(locate(first.db).conninfo()[0], autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {cut_off}")  # type: ignore[arg-type]
            conn.execute(f"CREATE TABLE {cut_off}.events (position bigint)")  # type: ignore[arg-type]
    again = sandbox_factory()
    assert [path.name for path in left if path.exists()] == []
    assert cut_off not in _schemas(first.db)
    front = Front(again)
    listed = front.http.get("/v2/sandbox/worlds", headers=front.headers).json()["items"]
    assert [w["id"] for w in listed] == [kept.id]
    world = World(front.http, kept.made)
    assert world.ok("GET", "/v2/profiles")["items"][0]["id"] == kept.made["profile_id"]
    front.http.close()


def test_a_world_is_made_with_its_own_bootstrap_client_and_answers_where_it_lives(
    front: Front, sandbox: Any
) -> None:
    r = front.create(MANUAL)
    assert r.status_code == 200, r.text
    made = r.json()
    assert made["id"].startswith("w_") and len(made["id"]) > 20
    assert made["base_url"] == f"http://testserver/w/{made['id']}/v2"
    assert made["token_url"] == f"http://testserver/w/{made['id']}/oauth2/token"
    assert made["clock"] == {"mode": "manual", "now": "2024-01-01T00:00:00.000000Z"}
    assert made["client_secret"] != "sandex-secret" and len(made["client_secret"]) >= 40
    world = World(front.http, made)
    assert world.ok("GET", "/v2/profiles")["items"][0]["id"] == made["profile_id"]
    assert world.ok("GET", "/healthz")["clock"]["mode"] == "manual"
    # its files: a private folder beside the default database, private files in it: its
    # manifest and key file (and its database, on SQLite)
    folder = folder_for(sandbox.db)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    files = list(folder.iterdir())
    keys = key_file.path_for(_store(sandbox.db, made["id"]))
    assert keys is not None and keys.parent == folder
    assert {keys.name, f"{made['id']}.json"} <= {f.name for f in files}
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    # the default world is as it was: its profile is not the world's
    assert sandbox.get("/v2/profiles").json()["items"][0]["id"] != made["profile_id"]


def test_a_world_is_a_schema_of_a_postgresql_default_database_else_a_file(
    front: Front, sandbox: Any
) -> None:
    template = front.world()
    template.ok("POST", "/v2/sandbox/snapshots", {"name": "ready"})
    fork = front.world({"from_world": template.id, "from_snapshot": "ready"})
    on_server = locate(sandbox.db).on_server
    for world in (template, fork):
        assert location_of(sandbox.db, world.id).text == _store(sandbox.db, world.id)
        assert (world.id in _schemas(sandbox.db)) is on_server
        assert (folder_for(sandbox.db) / f"{world.id}.db").exists() is not on_server
        assert _status(front, world)["size_bytes"] > 0
    if on_server:  # its tables in its schema, none added to the default one's
        import psycopg

        from sandex.engine.store.postgres_schema import SPARE_PREFIX

        url = locate(sandbox.db).conninfo()[0]
        with psycopg.connect(url) as conn:
            where = conn.execute(
                "SELECT table_schema FROM information_schema.tables WHERE table_name = 'events'"
            ).fetchall()
        worlds = [r[0] for r in where if not r[0].startswith(SPARE_PREFIX)]  # a next fork's
        assert sorted(worlds) == sorted(["public", template.id, fork.id])


def test_advancing_one_worlds_clock_expires_its_gtt_order_alone(front: Front) -> None:
    a, b = front.world(), front.world()
    expiry = "1704070800000"  # an hour after the worlds' start
    gtt = limit("BUY", "30000", "0.01", time_in_force="GTT", expiration_date=expiry)
    orders = []
    for world in (a, b):
        world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "1000"})
        orders.append(world.order(**gtt))
    a.ok("POST", "/v2/sandbox/clock", {"advance_seconds": 7200})
    assert b.ok("GET", "/v2/sandbox/clock")["now"] == "2024-01-01T00:00:00.000000Z"
    status = [
        w.ok("GET", f"/v2/profiles/default/orders/{o['id']}")["status"]
        for w, o in zip((a, b), orders, strict=True)
    ]
    assert status == ["CANCELLED", "OPEN"]
    assert a.balance("USD") == "1000" and b.balance("USD") == "700"


def test_a_servers_loaded_worlds_are_decided_on_one_writer_thread(
    front: Front, sandbox: Any
) -> None:
    """Driven at once, worlds with a writer and a committer thread each took turns on
    the GIL group by group: eight worlds served under half one world's orders a
    second. Their engines share the manager's writer thread; the default world keeps
    its own."""
    before = {t for t in threading.enumerate() if t.name == "sandex-writer"}
    worlds = [front.world() for _ in range(4)]
    for world in worlds:
        world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "5"})
    started = {t for t in threading.enumerate() if t.name == "sandex-writer"} - before
    assert len(started) == 1
    manager = sandbox.app.state.worlds
    threads = set()
    for world in worlds:
        served = manager.enter(world.id)
        threads.add(served.engine._thread)
        manager.leave(world.id, served)
    assert threads == started
    assert sandbox.engine._thread not in threads


def test_books_and_trades_of_two_worlds_are_separate(front: Front) -> None:
    a, b = front.world(), front.world()
    for world in (a, b):
        world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "5000"})
        world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "BTC", "amount": "1"})
    a.order(**limit("SELL", "48000", "0.01"))  # far above the ladder: rests in A's book
    b_book = b.ok("GET", "/v2/markets/BTCUSD/order-book")
    assert "48000" not in str(b_book["asks"]) and "48000" in str(
        a.ok("GET", "/v2/markets/BTCUSD/order-book")["asks"]
    )
    # B buying at that price trades against B's own ladder, never A's resting order
    bought = b.order(**limit("BUY", "48000", "0.01", time_in_force="IOC"))
    assert b.ok("GET", f"/v2/profiles/default/orders/{bought['id']}")["status"] == "FILLED"
    a_orders = a.ok("GET", "/v2/profiles/default/orders")["items"]
    assert [o["status"] for o in a_orders] == ["OPEN"]
    assert a.ok("GET", "/v2/profiles/default/executions")["items"] == []
    # the market data feed of a world is that world's
    with front.http.websocket_connect(f"{a.prefix}/marketdata/BTCUSD") as feed:
        first = feed.receive_json()
    assert "48000" in str(first)


def test_a_restore_or_a_reset_in_one_world_leaves_another_as_it_was(front: Front) -> None:
    a, b = front.world(), front.world()
    for world in (a, b):
        world.ok("POST", "/v2/sandbox/snapshots", {"name": "empty"})
        world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "10"})
    a.ok("POST", "/v2/sandbox/snapshots/empty/restore")
    assert (a.balance("USD"), b.balance("USD")) == ("0", "10")
    a.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "3"})
    a.ok("POST", "/v2/sandbox/reset")
    assert (a.balance("USD"), b.balance("USD")) == ("0", "10")


def test_a_token_of_one_world_is_refused_by_another_and_its_ids_unknown(
    front: Front, sandbox: Any
) -> None:
    a, b = front.world(), front.world()
    a.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "100"})
    order = a.order(**limit("BUY", "10000", "0.001"))
    assert b.get("/v2/profiles", headers=a.headers).status_code == 401
    assert front.http.get("/v2/profiles", headers=a.headers).status_code == 401
    assert a.get("/v2/profiles", headers=front.headers).status_code == 401
    r = b.get(f"/v2/profiles/default/orders/{order['id']}")
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    r = front.http.get(f"/w/w_{'x' * 24}/v2/profiles", headers=a.headers)
    assert r.status_code == 404 and r.json()["status"] == 404


def test_only_the_default_worlds_bootstrap_client_manages_worlds(
    front: Front, sandbox: Any
) -> None:
    tenant, _ = sandbox.tenant()
    world = front.world()
    some = f"/v2/sandbox/worlds/{world.id}"
    for method, path in (("POST", "/v2/sandbox/worlds"), ("GET", "/v2/sandbox/worlds")):
        assert front.http.request(method, path, headers=tenant).status_code == 403
    for method in ("GET", "DELETE"):
        assert front.http.request(method, some, headers=tenant).status_code == 403
    # a tenant named the scope by its maker is still no operator
    scoped, _ = sandbox.tenant(scopes=["sandbox:worlds", "sandbox:write_customer"])
    assert front.create(headers=scoped).status_code == 403
    # inside a world there are no worlds to manage
    assert world.get("/v2/sandbox/worlds").status_code == 404
    assert front.http.get(some, headers=front.headers).status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"clock": "sometimes"}, "clock"),
        ({"clock": "manual", "start_time": "yesterday"}, "start_time"),
        ({"start_time": "2024-01-01T00:00:00Z"}, "start_time"),
        ({"seed": -1}, "seed"),
        ({"settings": {"maker_fee_rate": "a lot"}}, "settings.maker_fee_rate"),
        ({"settings": {"no_such_setting": 1}}, "settings.no_such_setting"),
        ({"settings": {"max_connections": 5}}, "settings.max_connections"),
        ({"from_world": "w_nope", "from_snapshot": "s"}, "from_world"),
        ({"from_snapshot": "s"}, "from_world"),
        ({"expires_after_idle_seconds": 0}, "expires_after_idle_seconds"),
    ],
)
def test_a_bad_world_request_is_a_400_naming_the_field(
    front: Front, body: dict[str, Any], field: str
) -> None:
    r = front.create(body)
    assert r.status_code == 400, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["meta"]["field"] == field
    assert front.http.get("/v2/sandbox/worlds", headers=front.headers).json()["items"] == []


def test_the_worlds_are_listed_a_page_at_a_time_without_secrets(front: Front) -> None:
    made = [front.world() for _ in range(3)]
    first = front.http.get("/v2/sandbox/worlds", params={"limit": 2}, headers=front.headers)
    assert first.status_code == 200, first.text
    page = first.json()
    rest = front.http.get(
        "/v2/sandbox/worlds",
        params={"limit": 2, "page_cursor": page["next_page_cursor"]},
        headers=front.headers,
    ).json()
    assert [w["id"] for w in page["items"] + rest["items"]] == [w.id for w in made]
    assert "next_page_cursor" not in rest
    one = page["items"][0]
    assert one["loaded"] is True and one["events"] > 0 and one["size_bytes"] > 0
    assert one["status"] == "ACTIVE" and one["clock"]["mode"] == "manual"
    assert "client_secret" not in str(page)
    r = front.http.get("/v2/sandbox/worlds", params={"page_cursor": "junk"}, headers=front.headers)
    assert r.status_code == 400 and r.json()["meta"]["field"] == "page_cursor"


# What the two tests below count is SQLite's: a world's database file and its opening.
SQLITE_FILES = "a world on PostgreSQL is a schema: no database file to sync or to open"


@pytest.mark.parametrize("durability", ["FULL", "NORMAL"])
def test_a_worlds_files_are_synced_to_the_disk_under_full_durability_only(
    sandbox_factory: Any, durability: str, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """NORMAL durability survives a process crash, not a power cut (its commits are not
    synced): the files of a new world (its blank database, key file) and of a fork
    (database copy, key file, manifest) are renamed into place but not synced either,
    as on the pytest plugin's throwaway server; FULL syncs them."""
    if backend == "postgresql":
        pytest.skip(SQLITE_FILES)
    front = Front(sandbox_factory(durability=durability))
    try:
        synced: list[int] = []
        real_fsync = os.fsync
        monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
        template = front.world()
        made = len(synced)
        template.ok("POST", "/v2/sandbox/snapshots", {"name": "ready"})
        fork = front.world({"from_world": template.id, "from_snapshot": "ready"})
        monkeypatch.undo()
        assert (made > 0, len(synced) > made) == (durability == "FULL",) * 2
        fork.login(template.made["client_id"], template.made["client_secret"])
    finally:
        front.http.close()
        front.sandbox.app.state.worlds.close()


def test_a_forks_database_is_opened_once_and_its_key_file_written_once(
    front: Front, sandbox: Any, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """A fork's store, as its template's store made it, is the one its world serves
    (holding the writer lease), and its key file is written once, its signing key new."""
    if backend == "postgresql":
        pytest.skip(SQLITE_FILES)
    template = front.world()
    template.ok("POST", "/v2/sandbox/snapshots", {"name": "ready"})
    opened: list[str] = []
    written: list[str] = []
    real_init = SqliteEventStore.__init__
    real_write, real_copy = private_files.write, private_files.copy

    def init(self: SqliteEventStore, path: Any, **options: Any) -> None:
        opened.append(str(path))
        real_init(self, path, **options)

    def write(path: Any, data: bytes, **options: Any) -> None:
        written.append(str(path))
        real_write(path, data, **options)

    def copy(source: Any, destination: Any) -> None:
        written.append(str(destination))
        real_copy(source, destination)

    monkeypatch.setattr(SqliteEventStore, "__init__", init)
    monkeypatch.setattr(private_files, "write", write)
    monkeypatch.setattr(private_files, "copy", copy)
    fork = front.world({"from_world": template.id, "from_snapshot": "ready"})
    monkeypatch.undo()
    fork_db = _store(sandbox.db, fork.id)
    fork_keys = str(key_file.path_for(fork_db))
    assert opened.count(fork_db) == 1
    assert written.count(fork_keys) == 1
    with pytest.raises(LeaseHeld):  # its world writes to it
        take_lease(fork_db)
    template_keys = key_file.KeyFile.existing(_store(sandbox.db, template.id)).current()
    keys = key_file.KeyFile.existing(fork_db).current()
    assert (keys.sealing, keys.ids) == (template_keys.sealing, template_keys.ids)
    assert keys.signing != template_keys.signing
    fork.login(template.made["client_id"], template.made["client_secret"])


def test_a_fork_is_its_template_at_the_snapshot_then_diverges_alone(
    front: Front, sandbox: Any
) -> None:
    template = front.world()
    template.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "500"})
    tenant = template.ok("POST", "/v2/sandbox/customers")
    resting = template.order(**limit("BUY", "20000", "0.01"))
    taken = template.ok("POST", "/v2/sandbox/snapshots", {"name": "ready"})
    template_db = _store(sandbox.db, template.id)
    at_snapshot = log_hash(template_db, up_to=taken["position"])
    # nothing since the snapshot: a copy of the files
    copy = front.world({"from_world": template.id, "from_snapshot": "ready"})
    # the template moves on: a fork from the same snapshot is the log's prefix
    template.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "7"})
    prefix = front.world({"from_world": template.id, "from_snapshot": "ready"})
    for fork in (copy, prefix):
        assert "client_secret" not in fork.made
        assert fork.made["client_id"] == template.made["client_id"]
        assert fork.made["profile_id"] == template.made["profile_id"]
        assert fork.made["clock"] == template.made["clock"]
        assert fork.get("/v2/profiles", headers=template.headers).status_code == 401
        fork.headers = fork.login(template.made["client_id"], template.made["client_secret"])
        fork_db = _store(sandbox.db, fork.id)
        assert log_hash(fork_db, up_to=taken["position"]) == at_snapshot
        assert verify(fork_db) == []
        assert fork.balance("USD") == "300"  # 500 less the resting order's hold
        order = fork.ok("GET", f"/v2/profiles/default/orders/{resting['id']}")
        assert order["status"] == "OPEN"
        fork.login(tenant["client_id"], tenant["client_secret"])  # the same clients
    assert template.balance("USD") == "307"
    # and then each goes its own way
    copy.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "1"})
    assert (copy.balance("USD"), prefix.balance("USD"), template.balance("USD")) == (
        "301",
        "300",
        "307",
    )
    r = front.create({"from_world": template.id, "from_snapshot": "nope"})
    assert r.status_code == 400 and r.json()["meta"]["field"] == "from_snapshot"


def test_a_deleted_world_is_gone(front: Front, sandbox: Any) -> None:
    world, other = front.world(), front.world()
    world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "1"})
    # on a server its log is a schema of the database, dropped with it
    assert (world.id in _traces(sandbox.db, world.id)) is locate(sandbox.db).on_server
    r = front.http.delete(f"/v2/sandbox/worlds/{world.id}", headers=front.headers)
    assert r.status_code == 200, r.text
    assert _traces(sandbox.db, world.id) == []
    for path in ("/v2/profiles", "/healthz"):
        r = world.get(path)
        assert r.status_code == 404 and r.json()["detail"].startswith("world not found")
    r = front.http.get(f"/v2/sandbox/worlds/{world.id}", headers=front.headers)
    assert r.status_code == 404
    assert (
        front.http.delete(f"/v2/sandbox/worlds/{world.id}", headers=front.headers).status_code
        == 404
    )
    assert other.ok("GET", "/v2/sandbox/clock")["mode"] == "manual"


ON_SERVER = "a test of a PostgreSQL database's connections and schemas"


def _backends(db: Any) -> int:
    """How many sessions other than this one are connected to the database of `db`."""
    import psycopg

    with psycopg.connect(locate(db).conninfo()[0]) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_loaded_world_holds_one_connection_of_its_own(
    front: Front, sandbox: Any, backend: str
) -> None:
    """A server's worlds are schemas of one database: their reads share one pool and
    their writer leases one session, so each loaded world adds its writer's connection
    alone (the shared pool may grow to its bound meanwhile) and a hundred worlds fit a
    server's `max_connections`."""
    if backend != "postgresql":
        pytest.skip(ON_SERVER)
    from sandex.engine.store.postgres_reads import POOL_SIZE

    first = front.world()
    first.ok("GET", "/v2/profiles/default/balances")
    before = _backends(sandbox.db)
    more = [front.world() for _ in range(6)]
    for world in more:
        world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "1"})
        world.ok("GET", "/v2/profiles/default/balances")
    assert _backends(sandbox.db) - before <= len(more) + POOL_SIZE


def test_a_world_its_database_refuses_to_open_is_a_503_naming_the_limit(
    front: Front, sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database server out of connections (PostgreSQL's own words) refuses a world
    made or loaded with a 503 naming the limit, never a 500."""
    from sandex.api_adapter.world import World as Assembled
    from sandex.engine.store import StoreUnavailable

    world = front.world()
    sandbox.app.state.worlds.sweep(
        time.time() + sandbox.engine.settings.world_idle_unload_seconds + 1
    )
    assert _status(front, world)["loaded"] is False

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise StoreUnavailable("connection failed: FATAL:  sorry, too many clients already")

    with monkeypatch.context() as patched:
        patched.setattr(Assembled, "open", refused)
        answers = [front.create(MANUAL), world.get("/v2/profiles")]
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.headers["retry-after"] == "1"
        assert answer.json()["meta"] == {"limit": "database_connections"}
        assert "too many clients" in answer.json()["detail"]
    assert world.ok("GET", "/v2/profiles")["items"]
    listed = front.http.get("/v2/sandbox/worlds", headers=front.headers).json()["items"]
    assert [w["id"] for w in listed] == [world.id]


def test_a_servers_spare_schemas_go_when_it_stops(sandbox_factory: Any, backend: str) -> None:
    """A fork on PostgreSQL makes the next fork's schema ahead (a spare); the server
    that made it drops it when it stops, leaving only its worlds' schemas."""
    if backend != "postgresql":
        pytest.skip(ON_SERVER)
    from sandex.engine.store.postgres_schema import SPARE_PREFIX

    sandbox = sandbox_factory()
    front = Front(sandbox)
    template = front.world()
    template.ok("POST", "/v2/sandbox/snapshots", {"name": "ready"})
    fork = front.world({"from_world": template.id, "from_snapshot": "ready"})
    front.http.close()
    sandbox.close()
    left = {s for s in _schemas(sandbox.db) if not s.startswith("pg_")}
    assert left == {"public", "information_schema", template.id, fork.id}
    assert not [s for s in left if s.startswith(SPARE_PREFIX)]


def test_a_world_that_delivered_webhooks_is_deleted_with_its_delivery_progress(
    front: Front, sandbox: Any
) -> None:
    """A world's deliverer keeps its progress in a file beside the world's database: it
    goes with the world, and it is no manifest of another world."""
    folder = folder_for(sandbox.db)
    world, other = (
        front.world(hooked := {**MANUAL, "settings": {"webhook_allowed_hosts": LOCAL}}),
        front.world(hooked),
    )
    with opened() as make:
        receiver = make(Receiver)
        for each in (world, other):
            each.ok("POST", "/v2/sandbox/webhooks", {"url": receiver.url})
            each.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "1"})
        wait(lambda: len(receiver.received) >= 2)
        progress = [
            Path(f"{location_of(sandbox.db, w.id).local_base()}{PROGRESS_SUFFIX}")
            for w in (world, other)
        ]
        wait(lambda: all(path.exists() for path in progress))
    with capture_logs() as logs:
        assert front.http.delete(f"/v2/sandbox/worlds/{world.id}", headers=front.headers).is_success
        again = WorldManager(sandbox.db, sandbox.engine.settings)  # a restarted server's
        again.close()
    assert not list(folder.glob(f"{world.id}*"))
    assert [r.id for r in records(sandbox.db)] == [other.id]
    assert not [e for e in logs if e["event"] == "world manifest unreadable"], logs


def test_a_sandbox_in_a_world_is_that_world_behind_its_servers_front(database: Any) -> None:
    """`--world fresh` (tests/conftest.py): the sandbox is a world made through HTTP with
    the test's settings, driven under `/w/{id}` (its WebSocket feeds too), and a sandbox
    opened again on its database is the same world with the settings it is given."""
    sb = Sandbox(database("s.db"), make_settings(maker_fee_rate="0.002"), world=True)
    try:
        assert sb.server is not None and sb.engine is not sb.server.engine
        world_id = sb.world_id
        assert sb.db == location_of(database("s.db"), world_id).text or (
            sb.db == folder_for(database("s.db")) / f"{world_id}.db"
        )
        assert sb.http.base_url.path == f"/w/{world_id}/"
        assert sb.engine.settings.maker_fee_rate == Decimal("0.002")  # sent in the body
        assert sb.server.engine.settings.maker_fee_rate != Decimal("0.002")
        sb.deposit("USD", "1000")
        order = {"market": "BTCUSD", "side": "BUY", "type": "MARKET", "quote_amount": "100"}
        assert sb.post("/v2/profiles/default/orders", order).status_code == 200
        last = sb.get("/v2/markets/BTCUSD/recent-executions").json()["items"][0]
        with sb.http.websocket_connect("/executiondata/BTCUSD") as ws:
            assert receive(ws) == {"market": "BTCUSD", **last}  # the world's trade
        assert len(sb.server.engine.state.customers) == 1  # the default world: untouched
        assert {a.path for a in sb.answers} >= {"/v2/profiles/default/orders"}
        left = sb.balance("USD")
    finally:
        sb.close()
    assert sb.verify() == []
    again = Sandbox(database("s.db"), make_settings(maker_fee_rate="0.003"), world=True)
    try:
        assert again.db == sb.db and again.balance("USD") == left
        assert again.engine.settings.maker_fee_rate == Decimal("0.003")
    finally:
        again.close()


def test_a_world_deleted_under_its_requests_answers_them_and_ends_its_feeds(
    database: Any,
    servers: list[Server],
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    db = database()
    server = Server(db, "--clock", "manual")
    servers.append(server)
    admin = server.token()
    world = httpx.post(f"{server.base}/v2/sandbox/worlds", json=MANUAL, headers=admin).json()
    form = {
        "grant_type": "client_credentials",
        "client_id": world["client_id"],
        "client_secret": world["client_secret"],
    }
    auth = {
        "Authorization": f"Bearer {httpx.post(world['token_url'], data=form).json()['access_token']}"
    }
    base = world["base_url"]
    deposit = {"asset": "USD", "amount": "100"}
    assert httpx.post(
        f"{base}/sandbox/profiles/default/deposit", json=deposit, headers=auth
    ).is_success
    feed_url = f"ws://127.0.0.1:{server.port}/w/{world['id']}/marketdata/BTCUSD"
    # an order that waits for a fill that never comes (a manual clock, far below the market)
    waiting = {"market": "BTCUSD", **limit("BUY", "20000", "0.001"), "await_fill_millis": 1000}
    with connect(feed_url) as feed, ThreadPoolExecutor(4) as pool:
        assert feed.recv(timeout=5)
        pending = [
            pool.submit(httpx.post, f"{base}/profiles/default/orders", json=waiting, headers=auth)
            for _ in range(3)
        ]
        reads = [
            pool.submit(httpx.get, f"{base}/profiles/default/orders", headers=auth, timeout=10)
            for _ in range(3)
        ]
        gone = httpx.delete(
            f"{server.base}/v2/sandbox/worlds/{world['id']}", headers=admin, timeout=20
        )
        assert gone.status_code == 200, gone.text
        answers = [f.result(timeout=20) for f in pending + reads]
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                feed.recv(timeout=5)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    for answer in answers:
        assert answer.status_code in (200, 404, 503), answer.text
        if answer.status_code != 200:
            assert answer.headers["content-type"] == "application/problem+json"
    after = httpx.get(f"{base}/profiles", headers=auth)
    assert after.status_code == 404
    assert _traces(db, world["id"]) == []
    assert server.stop()[0] == 0


def _drive(server: str, admin: dict[str, str], n: int) -> dict[str, Any]:
    """World `n` made and driven with amounts, prices, a fee rate and a clock move of its
    own, and everything it then shows: balances, orders, executions, book, clock."""
    with httpx.Client(timeout=60) as http:
        body = {**MANUAL, "settings": {**MANUAL["settings"], "taker_fee_rate": f"0.{n:04d}"}}
        made = http.post(f"{server}/v2/sandbox/worlds", json=body, headers=admin)
        assert made.status_code == 200, made.text
        world = made.json()
        form = {
            "grant_type": "client_credentials",
            "client_id": world["client_id"],
            "client_secret": world["client_secret"],
        }
        token = http.post(world["token_url"], data=form).json()["access_token"]
        auth = {"Authorization": f"Bearer {token}"}
        api = world["base_url"]

        def ok(method: str, path: str, json: Any = None) -> Any:
            r = http.request(method, f"{api}{path}", json=json, headers=auth)
            assert r.status_code == 200, r.text
            return r.json()

        for _ in range(3):
            ok(
                "POST",
                "/sandbox/profiles/default/deposit",
                {"asset": "USD", "amount": str(1000 + n)},
            )
        resting = ok(
            "POST",
            "/profiles/default/orders",
            {"market": "BTCUSD", **limit("BUY", str(20000 + n), "0.01")},
        )
        bought = ok(
            "POST",
            "/profiles/default/orders",
            {"market": "BTCUSD", "side": "BUY", "type": "MARKET", "quote_amount": str(10 + n)},
        )
        ok("POST", "/sandbox/clock", {"advance_seconds": n})
        return {
            "n": n,
            "id": world["id"],
            "placed": [resting["id"], bought["id"]],
            "balances": ok("GET", "/profiles/default/balances")["items"],
            "orders": ok("GET", "/profiles/default/orders")["items"],
            "executions": ok("GET", "/profiles/default/executions")["items"],
            "book": ok("GET", "/markets/BTCUSD/order-book"),
            "clock": ok("GET", "/sandbox/clock"),
        }


@pytest.mark.parametrize("count", [24, pytest.param(100, marks=pytest.mark.slow)])
def test_worlds_driven_at_once_share_no_state(tmp_path: Path, database: Any, count: int) -> None:
    """The two-engine isolation test, scaled up: worlds driven in parallel through one
    server, each with amounts, prices, a fee rate and a clock of its own, each show
    exactly their own deposits, orders, trades, book, clock and log, and nothing of
    another's; then all deleted, they leave no file or schema behind."""
    from concurrent.futures import ThreadPoolExecutor
    from datetime import timedelta

    from sandex.engine.kernel.clock import parse_time

    # its log in a file: a pipe nobody reads would fill and stop the server
    db = database()
    server = Process(db, tmp_path / "server.log")
    try:
        token = httpx.post(
            f"{server.base}/oauth2/token",
            data={"grant_type": "client_credentials", "client_id": "sandex"}
            | {"client_secret": "sandex-secret"},
        )
        admin = {"Authorization": f"Bearer {token.json()['access_token']}"}
        with ThreadPoolExecutor(8) as pool:
            seen = list(pool.map(lambda n: _drive(server.base, admin, n), range(count)))
        listed = httpx.get(
            f"{server.base}/v2/sandbox/worlds", params={"limit": count}, headers=admin
        ).json()["items"]

        def delete(world: dict[str, Any]) -> int:
            url = f"{server.base}/v2/sandbox/worlds/{world['id']}"
            return httpx.delete(url, headers=admin, timeout=60).status_code

        with ThreadPoolExecutor(8) as pool:
            deleted = list(pool.map(delete, seen))
        left = httpx.get(f"{server.base}/v2/sandbox/worlds", headers=admin).json()["items"]
    except BaseException:
        server.kill()
        raise
    server.stop()
    # every one deleted leaves nothing behind: no file, no schema, no spare schema
    assert deleted == [200] * count and left == []
    assert [trace for world in seen for trace in _traces(db, world["id"])] == []
    if locate(db).on_server:
        from sandex.engine.store.postgres_schema import SPARE_PREFIX

        assert [s for s in _schemas(db) if s.startswith(SPARE_PREFIX)] == []
    # all of them alive at once, none unloaded meanwhile (max_loaded_worlds allows it)
    assert sorted(w["id"] for w in listed) == sorted(world["id"] for world in seen)
    assert all(w["loaded"] for w in listed)
    # the same commands in each: the same number of events in each log, no more
    assert len({w["events"] for w in listed}) == 1, {w["events"] for w in listed}
    start = parse_time(MANUAL["start_time"])
    prices = {Decimal(20000 + n) for n in range(count)}
    for world in seen:
        n = world["n"]
        resting, bought = world["placed"]
        assert {o["id"] for o in world["orders"]} == {resting, bought}
        orders = {o["id"]: o for o in world["orders"]}
        assert (orders[resting]["status"], Decimal(orders[resting]["price"])) == (
            "OPEN",
            20000 + n,
        )
        assert orders[bought]["status"] == "FILLED"
        assert Decimal(orders[bought]["quote_amount"]) == 10 + n
        [fill] = world["executions"]
        assert (fill["order_id"], fill["side"]) == (bought, "BUY")
        gross, commission = Decimal(fill["gross_trade_amount"]), Decimal(fill["commission"])
        rate = Decimal(f"0.{n:04d}")  # its own taker fee
        assert abs(commission - gross * rate) < Decimal("0.01")
        balances = {
            b["asset"]: (Decimal(b["available"]), Decimal(b["trading"])) for b in world["balances"]
        }
        held = Decimal(20000 + n) / 100 * (1 + rate)  # its price and the fee at most
        assert balances.pop("USD") == (3 * (1000 + n) - held - gross - commission, held)
        assert balances.pop("BTC") == (Decimal(fill["amount"]), 0)
        assert set(balances.values()) == {(0, 0)}
        # its book holds its own resting bid, and no other world's
        bids = {Decimal(level["price"]) for level in world["book"]["bids"]}
        assert bids & prices == {20000 + n}
        expected = format_time(start + timedelta(seconds=n))
        assert world["clock"]["now"] == expected
    placed = [i for world in seen for i in world["placed"]]
    assert len(set(placed)) == len(placed)


@pytest.mark.slow
def test_a_restarted_server_serves_the_same_worlds(
    database: Any,
    servers: list[Server],
) -> None:
    db = database()
    server = Server(db, "--clock", "manual")
    servers.append(server)
    made = httpx.post(f"{server.base}/v2/sandbox/worlds", json=MANUAL, headers=server.token())
    assert made.status_code == 200, made.text
    world = made.json()
    assert world["base_url"] == f"{server.base}/w/{world['id']}/v2"
    form = {
        "grant_type": "client_credentials",
        "client_id": world["client_id"],
        "client_secret": world["client_secret"],
    }
    token = httpx.post(world["token_url"], data=form).json()["access_token"]
    auth = {"Authorization": f"Bearer {token}"}
    deposit = {"asset": "USD", "amount": "42"}
    r = httpx.post(
        f"{world['base_url']}/sandbox/profiles/default/deposit", json=deposit, headers=auth
    )
    assert r.status_code == 200, r.text
    assert server.stop()[0] == 0
    again = Server(db, "--clock", "manual")
    servers.append(again)
    base = f"{again.base}/w/{world['id']}/v2"
    r = httpx.get(f"{base}/profiles/default/balances/USD", headers=auth)
    assert r.status_code == 200 and r.json()["available"] == "42"
    listed = httpx.get(f"{again.base}/v2/sandbox/worlds", headers=again.token()).json()
    assert [w["id"] for w in listed["items"]] == [world["id"]]
    assert again.stop()[0] == 0


def test_a_worlds_busiest_writes_take_the_fast_lane(
    front: Front, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sandex.api_adapter.middleware import fast_lane

    looked_up: list[str] = []

    def lane_of(method: str, path: str) -> Any:
        looked_up.append(path)
        return fast_lane_of(method, path)

    fast_lane_of = fast_lane.lane_of
    monkeypatch.setattr(fast_lane, "lane_of", lane_of)
    world = front.world()
    world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "100"})
    world.order(**limit("BUY", "20000", "0.001"))
    assert looked_up[-2:] == ["/v2/sandbox/profiles/default/deposit", "/v2/profiles/default/orders"]


def test_a_worlds_requests_are_logged_with_its_prefix(front: Front) -> None:
    from structlog.testing import capture_logs

    world = front.world()
    with capture_logs() as logs:
        world.ok("GET", "/v2/profiles")
        front.http.get("/v2/sandbox/clock")
    paths = [entry["path"] for entry in logs if entry.get("event") == "request"]
    assert paths == [f"{world.prefix}/v2/profiles", "/v2/sandbox/clock"]


def _sandex(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SANDEX, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_the_command_line_lists_verifies_shows_and_deletes_a_world(
    front: Front, sandbox: Any, tmp_path: Path
) -> None:
    world = front.world({**MANUAL, "name": "ci-1"})
    world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "5"})
    db = str(sandbox.db)
    listed = _sandex("worlds", "list", "--db", db)
    assert listed.returncode == 0, listed.stderr
    assert f"{world.id}\tci-1\tmanual\t" in listed.stdout
    verified = _sandex("verify", "--db", db, "--world", world.id)
    assert verified.returncode == 0 and verified.stdout.startswith("OK"), verified.stdout
    shown = _sandex("events", "--db", db, "--world", world.id)
    profile = world.made["profile_id"]
    assert shown.returncode == 0 and profile in shown.stdout, shown.stdout[-300:]
    assert profile not in _sandex("events", "--db", db).stdout
    for verb, out in (("time-travel", "past.db"), ("copy", "copied.db")):
        source = ["--db", db] if verb == "time-travel" else ["--from", db]
        rest = ["--until", "3", "--out"] if verb == "time-travel" else ["--to"]
        done = _sandex(verb, *source, "--world", world.id, *rest, str(tmp_path / out))
        assert done.returncode == 0, done.stderr
        copied = _sandex("events", "--db", str(tmp_path / out))
        assert profile in copied.stdout
    unknown = _sandex("verify", "--db", db, "--world", "w_none")
    assert unknown.returncode == 2 and f"no world w_none beside {db}" in unknown.stderr
    assert (world.id in _schemas(db)) is locate(db).on_server  # a schema on a server
    # the sandbox's engine holds the database's writer lease, as a server does
    refused = _sandex("worlds", "delete", world.id, "--db", db)
    assert refused.returncode == 2 and "DELETE /v2/sandbox/worlds/" in refused.stderr
    assert world.get("/v2/profiles").status_code == 200
    sandbox.close()
    gone = _sandex("worlds", "delete", world.id, "--db", db)
    assert gone.returncode == 0, gone.stderr
    assert _traces(sandbox.db, world.id) == []
    assert _sandex("worlds", "list", "--db", db).stdout.startswith("no worlds")


def test_the_worlds_guide_runs_as_written(
    database: Any,
    servers: list[Server],
) -> None:
    """docs/worlds.md's curl session, against a real server with its default limits."""
    text = (ROOT / "docs" / "worlds.md").read_text()
    blocks = [b for b in re.findall(r"```sh\n(.*?)```", text, flags=re.S) if "curl" in b]
    assert len(blocks) == 1
    server = Server(database("guide.db"))
    servers.append(server)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", blocks[0]],
        env={**os.environ, "BASE": server.base},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert '"asset":"USD","available":"1000"' in out  # the fork holds the template's funds
    # the fork's clock moved two hours; the template's did not
    moved = out.index('"now":"2024-01-01T02:00:00')
    assert out.index('"now":"2024-01-01T00:00:00', moved) > moved
    assert '"deleted":true' in out
    listed = orjson.loads(out[out.rindex('{"items":') :])
    assert [w["name"] for w in listed["items"]] == ["template"]
    assert server.stop()[0] == 0
