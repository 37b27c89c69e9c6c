"""Shared fixtures: a fresh sandbox per test, on a manual clock, driven through the real
ASGI app in-process."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

# Starlette's test client warns about its httpx dependency on import; it is not ours to fix.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from fastapi.testclient import TestClient

from sandex.api_adapter.bootstrap import Bootstrap, fixed
from sandex.api_adapter.world import World
from sandex.api_adapter.worlds.manager import SERVER_SETTINGS, folder_for, records
from sandex.api_adapter.worlds.routes import router as worlds_router
from sandex.engine import Settings
from sandex.engine.store import private_files
from sandex.engine.tools.verify import verify
from sandex.testing import SandexServer, SandexWorld, Template
from tests.support.conformance import Answer, Kept, Observe, conformance_problems, served_problems
from tests.support.server_helpers import Server
from tests.support.trading_helpers import STILL, funded, still
from tests.support.webhook_receivers import Receiver, opened
from tests.support.world_helpers import Front

START = datetime(2024, 1, 1, tzinfo=UTC)


def make_settings(**overrides: Any) -> Settings:
    base: dict[str, Any] = {
        "clock": "manual",
        "clock_start": START,
        "seed": 7,
        "assert_invariants": True,
        # Tests log in and call far faster than any rate limit; tests/api/test_rate_limits.py
        # turns the limits on where they are the subject.
        "rate_limits_enabled": False,
    }
    base.update(overrides)
    return Settings(**base)


class FrontClient(TestClient):
    """A test client on a server's front with a path in its base URL (`/w/{world}`): a
    relative WebSocket path lands under it, as an HTTP one does (Starlette's own joins
    it onto the host alone)."""

    def websocket_connect(self, url: str, *args: Any, **kwargs: Any) -> Any:
        if url.startswith("/"):
            url = self.base_url.path.rstrip("/") + url
        return super().websocket_connect(url, *args, **kwargs)


def world_body(settings: Settings) -> dict[str, Any]:
    """`POST /v2/sandbox/worlds`'s body for a world with a test's `settings`: its clock,
    start time and seed, and every other setting a world may choose."""
    chosen = settings.model_dump(mode="json")
    body: dict[str, Any] = {"clock": chosen.pop("clock"), "seed": chosen.pop("seed")}
    start = chosen.pop("clock_start")
    if body["clock"] == "manual" and start is not None:
        body["start_time"] = start
    body["settings"] = {k: v for k, v in chosen.items() if k not in SERVER_SETTINGS}
    return body


class HttpCalls:
    """What a test says to a sandbox over HTTP, as its bootstrap client (`headers`):
    shared by the in-process `Sandbox` and a plugin world's `WorldSandbox`."""

    http: Any  # an httpx client (a TestClient in process) whose paths start at /v2
    headers: dict[str, str]
    client_id = "sandex"
    client_secret = "sandex-secret"

    def login(self, client_id: str, secret: str, scope: str | None = None) -> dict[str, str]:
        form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
        if scope is not None:
            form["scope"] = scope
        response = self.http.post("/oauth2/token", data=form)
        assert response.status_code == 200, response.text
        return {"Authorization": f"Bearer {response.json()['access_token']}"}

    def tenant(self, **options: Any) -> tuple[dict[str, str], dict[str, Any]]:
        """A new isolated customer (`options`: the creation's body, such as
        identity_labels=True): its auth headers and its credentials."""
        created = self.http.post(
            "/v2/sandbox/customers", json=options or None, headers=self.headers
        )
        assert created.status_code == 200, created.text
        body = created.json()
        return self.login(body["client_id"], body["client_secret"]), body

    def get(self, path: str, **kw: Any) -> Any:
        kw.setdefault("headers", self.headers)
        return self.http.get(path, **kw)

    def post(self, path: str, json: Any = None, **kw: Any) -> Any:
        kw.setdefault("headers", self.headers)
        return self.http.post(path, json=json, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        kw.setdefault("headers", self.headers)
        return self.http.delete(path, **kw)

    def websocket_connect(self, path: str, headers: dict[str, str] | None = None) -> Any:
        """A session with the feed at `path` (a context manager), read with
        `tests.support.stream_helpers`' `receive` and `close_of`."""
        return self.http.websocket_connect(
            path, **({} if headers is None else {"headers": headers})
        )

    def advance(self, seconds: float) -> Any:
        response = self.post("/v2/sandbox/clock", {"advance_seconds": seconds})
        assert response.status_code == 200, response.text
        return response.json()

    def deposit(self, asset: str, amount: str, profile: str = "default", **kw: Any) -> Any:
        response = self.post(
            f"/v2/sandbox/profiles/{profile}/deposit", {"asset": asset, "amount": amount}, **kw
        )
        assert response.status_code == 200, response.text
        return response.json()

    def balance(self, asset: str, profile: str = "default", **kw: Any) -> dict[str, str]:
        response = self.get(f"/v2/profiles/{profile}/balances/{asset}", **kw)
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]


class Sandbox(HttpCalls):
    """A started world (no background work: the test moves the clock), its app and a
    logged-in bootstrap client. With `world` (`--world fresh`) the sandbox is a fresh
    non-default world of that server instead, created through HTTP and driven through
    the server's front under its `/w/{id}` prefix; every attribute is then the world's."""

    def __init__(self, db: Path, settings: Settings, *, world: bool = False) -> None:
        bootstrap = fixed("sandex", "sandex-secret")
        if world:
            self._open_in_world(db, settings, bootstrap)
            return
        self.db = db
        self.server: World | None = None  # a world's server (its default world)
        self.world_id: str | None = None  # the world the sandbox is, under --world fresh
        self.world = World.open(db, settings, bootstrap=bootstrap, background=False).start()
        self.engine = self.world.engine
        self.app = self.world.app
        # every answer, held to the app's own OpenAPI document when the test ends
        self.answers: list[Answer] = []
        self.app.add_middleware(Observe, answers=self.answers)
        self.http = TestClient(self.app, raise_server_exceptions=False)
        self.headers = self.login("sandex", "sandex-secret")

    def _open_in_world(self, db: Path, settings: Settings, bootstrap: Bootstrap) -> None:
        """Open the default world on `db` with the server's settings only, then make (or,
        on a database that has one, open again) the world the test runs in, its settings
        sent through `POST /v2/sandbox/worlds`."""
        server_side = {k: v for k, v in settings.model_dump().items() if k in SERVER_SETTINGS}
        folder = folder_for(db)
        for record in records(db):
            # Opened again with the test's settings, as the default world is: a world's
            # settings are its manifest's, so the restarted server reads them from there.
            body = world_body(settings)
            record.clock, record.seed = body["clock"], body["seed"]
            record.start_time, record.settings = body.get("start_time"), body["settings"]
            private_files.write(folder / f"{record.id}.json", record.as_json(), sync=True)
        self.server = World.open(
            db, make_settings(**server_side), bootstrap=bootstrap, background=False
        ).start()
        manager = self.server.app.state.worlds
        assert manager is not None, f"no worlds beside {db}"
        manager.new_worlds_bootstrap = bootstrap  # the test's client, not a random secret
        front = TestClient(self.server.front, raise_server_exceptions=False)
        kept = manager.ids()
        if kept:
            (_, world_id), *more = kept
            assert not more, f"a sandbox's database holds one world, not {len(kept)}"
        else:
            form = {"grant_type": "client_credentials", "client_id": "sandex"}
            form["client_secret"] = "sandex-secret"
            token = front.post("/oauth2/token", data=form)
            assert token.status_code == 200, token.text
            made = front.post(
                "/v2/sandbox/worlds",
                json=world_body(settings),
                headers={"Authorization": f"Bearer {token.json()['access_token']}"},
            )
            assert made.status_code == 200, made.text
            world_id = made.json()["id"]
            assert made.json()["client_id"] == "sandex", made.text
        front.close()
        served = manager.enter(world_id)  # loaded, and the one the front serves from now
        manager.leave(world_id, served)
        # No background delivery, as in a default world's sandbox: a test that wants its
        # webhooks posted starts a deliverer itself (one per database: each event once).
        served.app.state.webhooks.stop()
        where = manager.db_of(world_id)  # a file, or a schema's URL on PostgreSQL
        self.db = where.text if where.on_server else Path(where.text)
        self.world_id = world_id
        self.world = served.world
        self.engine = served.engine
        self.app = served.app
        self.answers = []
        self.app.add_middleware(Observe, answers=self.answers)
        self.http = FrontClient(
            self.server.front,
            base_url=f"http://testserver/w/{world_id}",
            raise_server_exceptions=False,
        )
        self.headers = self.login("sandex", "sandex-secret")

    def serves(self, path: str) -> bool:
        """Whether this sandbox answers `path` (a template of the OpenAPI document): a
        world answers every path but the worlds' own, which its server's default world
        manages (in a world they are 404)."""
        return self.server is None or not path.startswith(worlds_router.prefix)

    def close(self) -> None:
        self.http.close()
        self.app.state.queries.close()  # a test may have served another app on the engine
        self.world.stop()
        if self.server is not None:
            self.server.stop()

    def verify(self) -> list[str]:
        return verify(str(self.db))


class WorldSandbox(HttpCalls):
    """A world of the pytest plugin (`sandex_world`) driven as a sandbox is: over HTTP to
    the session's server, its paths under the world's prefix; each answer kept for the
    conformance check (tests/support/conformance.py)."""

    def __init__(self, world: SandexWorld) -> None:
        self.world_id = world.id
        self.client_id, self.client_secret = world.client_id, world.client_secret
        root = world.base_url.removesuffix("/v2")
        self._prefix = httpx.URL(root).path
        self.answers: list[Answer] = []
        self._kept = Kept(self.answers)
        hooks = {"response": [self._keep]}
        self.http = httpx.Client(base_url=root, timeout=60, event_hooks=hooks)
        self.headers = self.login(self.client_id, self.client_secret)

    def _keep(self, response: httpx.Response) -> None:
        response.read()
        media = response.headers.get("content-type", "").split(";")[0].strip()
        path = response.request.url.path.removeprefix(self._prefix)
        method = response.request.method
        self._kept.keep(method, path, response.status_code, media, response.content)

    def websocket_connect(self, path: str, headers: dict[str, str] | None = None) -> Any:
        """A session with the world's feed at `path` over a real socket (`websockets`'
        client; the feeds need no token, so `headers` are sent as they are)."""
        from websockets.sync.client import connect

        url = self.http.base_url.copy_with(scheme="ws").join(path.lstrip("/"))
        # max_queue=None: the client goes on reading frames a test leaves unread, so that
        # its close sees the server's close frame instead of waiting out close_timeout
        return connect(str(url), additional_headers=headers, open_timeout=10, max_queue=None)

    def serves(self, path: str) -> bool:
        """Whether this world answers `path` (a template of the OpenAPI document): every
        path but the worlds' own, which the server's default world manages."""
        return not path.startswith(worlds_router.prefix)

    def close(self) -> None:
        self.http.close()


# The store under every sandbox of a test run: `--backend postgresql` (or
# SANDEX_TEST_BACKEND=postgresql) runs the tests on a PostgreSQL-backed app, as `make test`'s
# second pass does with tests/api; SQLite by default.
BACKEND_ENV = "SANDEX_TEST_BACKEND"
BACKENDS = ("sqlite", "postgresql")
# Where every sandbox of a test run lives: `--world fresh` (or SANDEX_TEST_WORLD=fresh)
# makes each one a fresh non-default world of its server, as `make test`'s world pass
# does with tests/api; the default world by default.
WORLD_ENV = "SANDEX_TEST_WORLD"
WORLDS = ("default", "fresh")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=BACKENDS,
        default=os.environ.get(BACKEND_ENV) or "sqlite",
        help=f"the store under the tests' sandboxes (default: ${BACKEND_ENV}, else sqlite)",
    )
    parser.addoption(
        "--world",
        choices=WORLDS,
        default=os.environ.get(WORLD_ENV) or "default",
        help="the world each sandbox is: the server's default world, or a fresh world made"
        f" through POST /v2/sandbox/worlds (default: ${WORLD_ENV}, else default)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqlite_only(why): a test about SQLite itself (its file, WAL, PRAGMAs); skipped,"
        " saying why, under --backend postgresql",
    )
    config.addinivalue_line(
        "markers",
        "default_world_only(why): a test about the default world itself (a server's worlds,"
        " its own settings); skipped, saying why, under --world fresh",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skipped = []
    if config.getoption("--backend") == "postgresql":
        skipped.append(("sqlite_only", "SQLite only", "a test of SQLite itself"))
    if config.getoption("--world") == "fresh":
        skipped.append(("default_world_only", "default world only", "a test of the server"))
    for name, label, unsaid in skipped:
        for item in items:
            marker = item.get_closest_marker(name)
            if marker is not None:
                why = marker.args[0] if marker.args else unsaid
                item.add_marker(pytest.mark.skip(reason=f"{label}: {why}"))


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The store under the sandboxes of a test (`--backend`)."""
    return str(request.config.getoption("--backend"))


@pytest.fixture
def database(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """`database(name)`: where a test's database called `name` lives on the test's store: a
    file in `tmp_path`, or a new database on the test server (the same name twice: the
    same database); the server's are dropped at the end."""
    server: Any = None
    urls: dict[str, str] = {}
    if backend == "postgresql":
        server = request.getfixturevalue("postgres_server")
        monkeypatch.setenv("SANDEX_STATE_DIR", str(tmp_path / "state"))

    def where(name: str = "sandex.db") -> Any:
        if server is None:
            return tmp_path / name
        if name not in urls:
            urls[name] = server.create("api")
        return urls[name]

    yield where
    for url in urls.values():
        server.drop(url)


@pytest.fixture
def in_world(request: pytest.FixtureRequest) -> bool:
    """Whether the test's sandboxes are fresh non-default worlds (`--world fresh`)."""
    return bool(request.config.getoption("--world") == "fresh")


@pytest.fixture
def sandbox_factory(database: Any, in_world: bool) -> Iterator[Any]:
    opened: list[Sandbox] = []

    def open_sandbox(name: str = "sandex.db", **overrides: Any) -> Sandbox:
        sb = Sandbox(database(name), make_settings(**overrides), world=in_world)
        opened.append(sb)
        return sb

    yield open_sandbox
    for sb in opened:
        with contextlib.suppress(Exception):  # a test may have closed it already
            sb.close()
    # Every test that drove a sandbox ends with the whole database verified, and every
    # answer it got described by the OpenAPI document (tests/support/conformance.py).
    for sb in opened:
        assert sb.verify() == [], f"sandex verify failed on {sb.db}"
    for sb in opened:
        undocumented = conformance_problems(sb.app, sb.answers)
        assert not undocumented, "answers /openapi.json does not describe:\n" + "\n".join(
            undocumented
        )


def marked(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The clock and settings of the test's `sandex` marker, as `sandbox_factory` takes them."""
    marker = request.node.get_closest_marker("sandex")
    chosen: dict[str, Any] = dict(marker.kwargs) if marker else {}
    given = {"clock": chosen["clock"]} if "clock" in chosen else {}
    return {**given, **chosen.get("settings", {})}


@pytest.fixture
def sandbox(request: pytest.FixtureRequest, sandbox_factory: Any) -> Sandbox:
    """The in-process sandbox, with the test's `sandex` marker as `http_sandbox` has it
    (a module's `pytestmark` sets its settings for both)."""
    return sandbox_factory(**marked(request))  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A PostgreSQL server for this test session (tests/support/postgres_server.py): the
    developer's own (SANDEX_TEST_POSTGRES) or a throwaway cluster; a skip with the precise
    reason when there is neither."""
    from tests.support.postgres_server import Unavailable, server

    try:
        context = server()
        found = context.__enter__()
    except Unavailable as exc:
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    try:
        yield found
    finally:
        context.__exit__(None, None, None)


@pytest.fixture
def postgres_url(
    postgres_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """A new, empty PostgreSQL database for one test; its local files (key file) in
    `tmp_path`; dropped at the end."""
    monkeypatch.setenv("SANDEX_STATE_DIR", str(tmp_path / "state"))
    url = postgres_server.create()
    yield url
    postgres_server.drop(url)


@pytest.fixture
def front(sandbox: Any) -> Iterator[Front]:
    """The default sandbox behind the worlds' dispatcher (tests of worlds)."""
    made = Front(sandbox)
    yield made
    made.http.close()
    sandbox.app.state.worlds.close()


def blank(world: SandexWorld) -> None:
    """The template of sandex's own plugin worlds: nothing but what a new world holds
    (the bootstrap customer, unfunded), as an in-process sandbox starts."""


@pytest.fixture(scope="session")
def sandex_template() -> Template:
    """sandex's own tests start from a blank world, not the plugin's funded default."""
    return blank


@pytest.fixture
def http_sandbox(request: pytest.FixtureRequest, backend: str) -> Iterator[HttpCalls]:
    """A sandbox for a test that only talks HTTP to it: a world of the pytest plugin
    (`sandex_world`, on its xdist worker's server) at the suite's start and seed, with the
    test's `sandex` marker; every answer held to the served OpenAPI document when the
    test ends. Under `--backend postgresql` it is the in-process `sandbox` on PostgreSQL
    (the plugin's server keeps its worlds in SQLite), with the marker's clock and settings."""
    marker = request.node.get_closest_marker("sandex")
    chosen: dict[str, Any] = dict(marker.kwargs) if marker else {}
    if backend == "postgresql":
        yield request.getfixturevalue("sandbox_factory")(**marked(request))
        return
    suite = make_settings()
    assert suite.clock_start is not None
    settings = {"assert_invariants": suite.assert_invariants, **chosen.get("settings", {})}
    start = suite.clock_start.isoformat().replace("+00:00", "Z")
    world = {"start": start, "seed": suite.seed, **chosen, "settings": settings}
    request.node.add_marker(pytest.mark.sandex(**world), append=False)  # the closest one
    made = WorldSandbox(request.getfixturevalue("sandex_world"))
    yield made
    made.close()
    server: SandexServer = request.getfixturevalue("sandex_server")
    undocumented = served_problems(f"{server.url}/openapi.json", made.answers)
    assert not undocumented, "answers /openapi.json does not describe:\n" + "\n".join(undocumented)


@pytest.fixture
def sb(sandbox_factory: Any) -> Any:
    """The trading tests' in-process sandbox (markets, order lifecycle, order matching):
    a still market, funded. A module with an `sb` of its own keeps it: pytest prefers
    the module's fixture to this one."""
    return funded(still(sandbox_factory))


@pytest.fixture
def http_sb(request: pytest.FixtureRequest) -> Any:
    """The trading tests' `http_sandbox` (markets, order lifecycle, order matching): a
    still market, funded as their in-process `sb` is; a test's own `sandex` marker,
    nearer, wins over the still one added here."""
    request.node.add_marker(pytest.mark.sandex(settings=STILL))
    return funded(request.getfixturevalue("http_sandbox"))


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """`sandex serve` processes a test started itself (append each): any still running at
    the end is killed."""
    started: list[Server] = []
    yield started
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.communicate()


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A `sandex serve` of the module's own, for the plugin's tests that run pytest against
    a server they did not start (`--sandex-url`)."""
    server = Server(tmp_path_factory.mktemp("serve") / "sandex.db", "--no-rate-limits")
    yield server
    server.stop()


@pytest.fixture
def receivers() -> Iterator[Any]:
    """`receivers(**kw)`: a local webhook receiver (tests/support/webhook_receivers.py),
    each closed at the end."""
    with opened() as make:
        yield lambda **kw: make(Receiver, **kw)
