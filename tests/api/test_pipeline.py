"""One request pipeline (api_adapter/pipeline.py): the gates run once for every request of
an operation, whoever serves it (the fast lane, a FastAPI route, or the route after the
lane handed the request on), with the operation's row and the caller the bearer gate
admitted; a gate's refusal is rendered as the app renders any refusal."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.exceptions import HTTPException

from sandex.api_adapter import create_app
from sandex.api_adapter.pipeline import Passage
from tests.conftest import Sandbox

ORDERS = "/v2/profiles/default/orders"
LIMIT = {"side": "BUY", "market": "BTCUSD", "type": "LIMIT", "price": "30000", "base_amount": "1"}


def _recorded(sb: Sandbox) -> list[tuple[str, str | None]]:
    """Have the app's pipeline record (operation, client) of each request it passes."""
    seen: list[tuple[str, str | None]] = []

    def record(scope: MutableMapping[str, Any], passage: Passage) -> None:
        who = passage.principal.client_id if passage.principal is not None else None
        seen.append((passage.operation.id, who))

    sb.app.state.gates = (record,)
    return seen


@pytest.mark.parametrize("lane", [True, False], ids=["fast lane", "routes only"])
def test_every_request_passes_the_gates_once_whoever_serves_it(
    sandbox_factory: Any, lane: bool
) -> None:
    sb = sandbox_factory()
    if not lane:
        sb.app = create_app(sb.engine, fast_lane=False)
        sb.http = TestClient(sb.app, raise_server_exceptions=False)
        sb.headers = sb.login("sandex", "sandex-secret")
    seen = _recorded(sb)
    sb.deposit("USD", "100000")
    assert sb.post(ORDERS, LIMIT).status_code == 200  # the lane's, where it runs
    assert sb.post(ORDERS, {**LIMIT, "await_fill_millis": 1}).status_code == 200  # handed on
    assert sb.post(ORDERS, {**LIMIT, "side": "UP"}).status_code == 400  # handed on
    assert sb.get(ORDERS).status_code == 200  # a route's
    assert sb.http.get("/v2/markets").status_code == 200  # no token asked
    assert seen == [
        ("CreateSandboxDeposit", "sandex"),
        ("CreateOrder", "sandex"),
        ("CreateOrder", "sandex"),
        ("CreateOrder", "sandex"),
        ("ListProfileOrders", "sandex"),
        ("ListMarkets", None),
    ]


def test_a_gates_refusal_is_the_same_problem_from_the_lane_and_the_routes(
    sandbox_factory: Any,
) -> None:
    def closed(scope: MutableMapping[str, Any], passage: Passage) -> None:
        raise HTTPException(503, f"{passage.operation.id} is closed", headers={"Retry-After": "7"})

    answers = []
    for lane in (True, False):
        sb = sandbox_factory(f"{lane}.db")
        sb.app = create_app(sb.engine, fast_lane=lane)
        sb.http = TestClient(sb.app, raise_server_exceptions=False)
        sb.headers = sb.login("sandex", "sandex-secret")
        sb.app.state.gates = (closed,)
        r = sb.post(ORDERS, LIMIT)
        assert r.status_code == 503
        assert r.headers["content-type"] == "application/problem+json"
        assert r.headers["retry-after"] == "7"
        answers.append(r.json())
    assert answers[0] == answers[1]
    assert answers[0]["detail"] == "CreateOrder is closed"
