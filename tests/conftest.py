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

import pytest

# Starlette's test client warns about its httpx dependency on import; it is not ours to fix.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from fastapi.testclient import TestClient

from api_adapter.bootstrap import fixed
from api_adapter.world import World
from engine import Settings
from engine.tools.verify import verify
from tests.support.conformance import Answer, Observe, conformance_problems

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


class Sandbox:
    """A started world (no background work: the test moves the clock), its app and a
    logged-in bootstrap client."""

    def __init__(self, db: Path, settings: Settings) -> None:
        self.db = db
        bootstrap = fixed("sandex", "sandex-secret")
        self.world = World.open(db, settings, bootstrap=bootstrap, background=False).start()
        self.engine = self.world.engine
        self.app = self.world.app
        # every answer, held to the app's own OpenAPI document when the test ends
        self.answers: list[Answer] = []
        self.app.add_middleware(Observe, answers=self.answers)
        self.http = TestClient(self.app, raise_server_exceptions=False)
        self.headers = self.login("sandex", "sandex-secret")

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

    def close(self) -> None:
        self.http.close()
        self.app.state.queries.close()  # a test may have served another app on the engine
        self.world.stop()

    def verify(self) -> list[str]:
        return verify(str(self.db))


# The store under every sandbox of a test run: `--backend postgresql` (or
# SANDEX_TEST_BACKEND=postgresql) runs the tests on a PostgreSQL-backed app, as `make test`'s
# second pass does with tests/api; SQLite by default.
BACKEND_ENV = "SANDEX_TEST_BACKEND"
BACKENDS = ("sqlite", "postgresql")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backend",
        choices=BACKENDS,
        default=os.environ.get(BACKEND_ENV) or "sqlite",
        help=f"the store under the tests' sandboxes (default: ${BACKEND_ENV}, else sqlite)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sqlite_only(why): a test about SQLite itself (its file, WAL, PRAGMAs); skipped,"
        " saying why, under --backend postgresql",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--backend") != "postgresql":
        return
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            why = marker.args[0] if marker.args else "a test of SQLite itself"
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {why}"))


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
def sandbox_factory(database: Any) -> Iterator[Any]:
    opened: list[Sandbox] = []

    def open_sandbox(name: str = "sandex.db", **overrides: Any) -> Sandbox:
        sb = Sandbox(database(name), make_settings(**overrides))
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


@pytest.fixture
def sandbox(sandbox_factory: Any) -> Sandbox:
    return sandbox_factory()  # type: ignore[no-any-return]


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
