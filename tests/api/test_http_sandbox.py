"""The `http_sandbox` fixture (tests/conftest.py): sandex's own black-box tests run in
worlds of the pytest plugin, as a user's suite does, and keep the suite's start, seed,
invariant checks and OpenAPI conformance check."""

from __future__ import annotations

from typing import Any

import pytest

from sandex.testing import SandexServer
from tests.conftest import START
from tests.support.conformance import Answer, served_problems

# Where an http_sandbox is, by backend: a plugin world, or the in-process sandbox.
IN_PROCESS = pytest.mark.sqlite_only("the plugin's server keeps its worlds in SQLite")


@IN_PROCESS
def test_an_http_sandbox_is_a_blank_world_of_the_plugins_server_at_the_suites_start(
    http_sandbox: Any, sandex_server: SandexServer
) -> None:
    world = sandex_server.api.request("GET", f"/sandbox/worlds/{http_sandbox.world_id}")
    assert world["id"] == http_sandbox.world_id
    assert (
        http_sandbox.get("/v2/sandbox/clock")
        .json()["now"]
        .startswith(START.strftime("%Y-%m-%dT%H:%M:%S"))
    )
    for asset in ("USD", "BTC"):
        assert http_sandbox.balance(asset)["available"] == "0"


@IN_PROCESS
def test_an_http_sandbox_walks_the_suites_seeded_prices(
    http_sandbox: Any, sandbox_factory: Any
) -> None:
    """The same seed as the in-process sandbox: the same market walk, hour by hour."""
    in_process = sandbox_factory()
    for sb in (http_sandbox, in_process):
        sb.advance(3600)
    walked = [
        sb.get("/v2/all-markets/prices", params={"markets": "BTCUSD"}).json()["items"][0]
        for sb in (http_sandbox, in_process)
    ]
    assert walked[0]["current_price"] == walked[1]["current_price"]


@IN_PROCESS
@pytest.mark.sandex(settings={"withdrawal_caps": {"BTC": "0.5"}})
def test_a_tests_marker_settings_join_the_suites(http_sandbox: Any) -> None:
    path = "/v2/transfer/limits/utilizations"
    limits = http_sandbox.get(path, params={"transfer_type": "CRYPTO_WITHDRAWAL"}).json()
    assert {i["limit_asset"]: i["limit"] for i in limits["items"]}["BTC"] == "0.5"


@IN_PROCESS
def test_an_http_sandbox_keeps_its_answers_for_the_documents_check(
    http_sandbox: Any, sandex_server: SandexServer
) -> None:
    http_sandbox.get("/v2/profiles/default/orders/nope")
    kept = {(a.method, a.path, a.status) for a in http_sandbox.answers}
    assert ("GET", "/v2/profiles/default/orders/nope", 404) in kept  # under /v2, not /w/…
    undocumented = Answer(
        "GET", "/v2/profiles/default/balances/USD", 200, "application/json", b'{"zzz": 1}'
    )
    found = served_problems(f"{sandex_server.url}/openapi.json", [undocumented])
    assert found and "GetProfileBalance" in found[0]
