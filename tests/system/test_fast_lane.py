"""The fast lane (api_adapter/middleware/fast_lane.py) answers exactly what FastAPI's routes answer.

Both read one table (api_adapter/operations.py): each FastAPI route serves its row's
path, operation, scope and body model, and the lane takes the paths the route takes, no
more and no fewer.

Two sandboxes on the same seed and manual clock, one served with the lane and one
without, take the same requests in the same order: every answer (status, headers but
the generated request id, body) and the event logs must be identical, for requests the
lane serves and for the ones it hands on (bad tokens, missing scopes, refused bodies,
domain errors, await_fill_millis)."""

from __future__ import annotations

import inspect
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.routing import Match

from sandex.api_adapter import create_app
from sandex.api_adapter.app import ROUTERS
from sandex.api_adapter.middleware.fast_lane import lane_of
from sandex.api_adapter.operations import LANE, Operation
from sandex.engine.tools.time_travel import log_hash
from tests.conftest import Sandbox, make_settings
from tests.support.server_helpers import ROOT, SANDEX, Server

ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
ORDERS = "/v2/profiles/default/orders"
WITHDRAWALS = "/v2/transfer/crypto-withdrawals"
DEPOSIT = "/v2/sandbox/profiles/default/deposit"
LIMIT = {
    "side": "BUY",
    "market": "BTCUSD",
    "type": "LIMIT",
    "price": "30000",
    "base_amount": "0.001",
}
WITHDRAWAL = {
    "profile_id": "default",
    "asset": "BTC",
    "crypto_network": "BITCOIN",
    "destination_address": ADDRESS,
    "amount": "0.001",
}


def _pair(tmp_path: Any, **settings: Any) -> tuple[Sandbox, Sandbox]:
    lane = Sandbox(tmp_path / "lane.db", make_settings(**settings))
    plain = Sandbox(tmp_path / "plain.db", make_settings(**settings))
    plain.app = create_app(plain.engine, fast_lane=False)
    plain.http = TestClient(plain.app, raise_server_exceptions=False)
    plain.headers = plain.login("sandex", "sandex-secret")
    return lane, plain


def _answer(r: Any) -> tuple[int, dict[str, str], bytes]:
    headers = {k: v for k, v in r.headers.items() if k != "x-request-id"}
    return r.status_code, headers, r.content


def _same(lane: Sandbox, plain: Sandbox, path: str, body: Any, auth: Any = "own") -> Any:
    """POST `body` to both; `auth` is "own" (each sandbox's own token), "scoped" (a
    token without trading scopes), or the headers to send as they are."""
    answers = []
    for sb in (lane, plain):
        if auth == "own":
            headers = sb.headers
        elif auth == "scoped":
            headers = sb.login("sandex", "sandex-secret", "funding:read_profile")
        elif auth == "scoped-out":  # a token without the deposit's scope
            headers = sb.login("sandex", "sandex-secret", "exchange:read_order")
        elif "X-Request-ID" in auth:
            headers = {**sb.headers, **auth}
        else:
            headers = auth
        if isinstance(body, str):
            answers.append(sb.http.post(path, content=body, headers=headers))
        else:
            answers.append(sb.http.post(path, json=body, headers=headers))
    assert _answer(answers[0]) == _answer(answers[1]), (path, body, auth)
    return answers[0]


REQUESTS: list[tuple[str, Any, Any]] = [
    (DEPOSIT, {"asset": "USD", "amount": "100000"}, "own"),
    (DEPOSIT, {"asset": "BTC", "amount": "10"}, "own"),
    (DEPOSIT, {"asset": "BTC", "amount": "1", "crypto_network": "BITCOIN"}, "own"),
    (DEPOSIT, {"asset": "BTC", "amount": 1}, "own"),  # a JSON number is not an amount
    (ORDERS, LIMIT, "own"),
    (ORDERS, {**LIMIT, "side": "SELL", "price": "29000", "time_in_force": "IOC"}, "own"),
    (ORDERS, {"side": "BUY", "market": "BTCUSD", "type": "MARKET", "quote_amount": "5.00"}, "own"),
    (ORDERS, {**LIMIT, "ref_id": "r-1", "metadata": {"a": "b"}}, "own"),
    (ORDERS, {**LIMIT, "ref_id": "r-1"}, "own"),  # already exists
    (ORDERS, {**LIMIT, "base_amount": "1000000"}, "own"),  # insufficient funds
    (ORDERS, {**LIMIT, "price": "30000.001"}, "own"),  # finer than the tick
    (ORDERS, {**LIMIT, "colour": "red"}, "own"),  # an unknown field: ignored
    (ORDERS, {**LIMIT, "side": "UP"}, "own"),
    (ORDERS, {**LIMIT, "await_fill_millis": 50}, "own"),
    (ORDERS, {**LIMIT, "expiration_date": 1893456000000, "time_in_force": "GTT"}, "own"),
    (ORDERS, [LIMIT], "own"),
    (ORDERS, "null", "own"),
    (ORDERS, "{", "own"),  # not JSON
    (ORDERS, "", "own"),  # no body
    (ORDERS, {"side": "BUY", "market": "BTCUSD", "type": "LIMIT"}, "own"),  # no amount
    (DEPOSIT, {"asset": "BTC"}, "own"),  # no amount
    (DEPOSIT, {"asset": "BTC", "amount": "-1"}, "own"),
    (DEPOSIT, {"asset": "BTC", "amount": "1", "crypto_network": "MOON"}, "own"),
    (DEPOSIT, {"asset": "BTC", "amount": "1", "colour": "red"}, "own"),
    (DEPOSIT, {"asset": "BTC", "amount": "1"}, "scoped-out"),
    (WITHDRAWALS, {**WITHDRAWAL, "amount": None}, "own"),
    (WITHDRAWALS, '{"profile_id": "default"', "own"),
    ("/v2/profiles/nobody/orders", LIMIT, "own"),
    ("/v2/profiles/default/orders/", LIMIT, "own"),
    (WITHDRAWALS, WITHDRAWAL, "own"),
    (WITHDRAWALS, {**WITHDRAWAL, "memo": "sandbox:fail", "ref_id": "w-1"}, "own"),
    (WITHDRAWALS, {**WITHDRAWAL, "ref_id": "w-1"}, "own"),
    (WITHDRAWALS, {**WITHDRAWAL, "amount": "500"}, "own"),
    (WITHDRAWALS, {**WITHDRAWAL, "crypto_network": "MOON"}, "own"),
    (WITHDRAWALS, {**WITHDRAWAL, "amount": "0.001", "total": "0.002"}, "own"),
    (WITHDRAWALS, {**WITHDRAWAL, "amount": "0.01"}, "own"),  # over the sandbox's limit
    (ORDERS, LIMIT, {"Authorization": "Bearer sdx1.forged.token"}),
    (ORDERS, LIMIT, {"Authorization": "Basic abc"}),
    (ORDERS, LIMIT, {}),
    (ORDERS, LIMIT, "scoped"),
    (WITHDRAWALS, WITHDRAWAL, "scoped"),
    (ORDERS, LIMIT, {"X-Request-ID": "client-given-1"}),
    (WITHDRAWALS, WITHDRAWAL, {"X-Request-ID": "client-given-2"}),
]


def test_the_lane_answers_as_the_routes_do(tmp_path: Any) -> None:
    lane, plain = _pair(tmp_path)
    try:
        seen = {
            (path, _same(lane, plain, path, body, auth).status_code)
            for path, body, auth in REQUESTS
        }
        assert {status for _, status in seen} == {200, 400, 401, 403, 404, 409}
        assert {(ORDERS, 200), (WITHDRAWALS, 200), (DEPOSIT, 200)} <= seen
        r = _same(lane, plain, ORDERS, LIMIT, {"X-Request-ID": "abc-1"})
        assert r.status_code == 200 and r.headers["x-request-id"] == "abc-1"
        assert log_hash(str(lane.db)) == log_hash(str(plain.db))
    finally:
        for sb in (lane, plain):
            sb.close()
    assert lane.verify() == [] and plain.verify() == []


# Unknown fields, which both ignore by default (REQUESTS), refused with `strict_fields`.
STRICT_REFUSALS: list[tuple[str, Any, str]] = [
    (ORDERS, {**LIMIT, "colour": "red"}, "colour"),
    (DEPOSIT, {"asset": "BTC", "amount": "1", "colour": "red"}, "colour"),
    (WITHDRAWALS, {**WITHDRAWAL, "beneficiary": {"name": "n"}}, "beneficiary.name"),
]


def test_the_lane_answers_as_the_routes_do_with_strict_fields(tmp_path: Any) -> None:
    lane, plain = _pair(tmp_path, strict_fields=True)
    try:
        for asset in ("BTC", "USD"):
            deposit = {"asset": asset, "amount": "100000"}
            assert _same(lane, plain, DEPOSIT, deposit).status_code == 200
        for path, body, field in STRICT_REFUSALS:
            r = _same(lane, plain, path, body)
            assert r.status_code == 400, r.text
            assert r.json()["meta"] == {"field": field}
            assert r.json()["detail"] == f"{field} invalid: unknown field"
        assert _same(lane, plain, ORDERS, LIMIT).status_code == 200
        assert log_hash(str(lane.db)) == log_hash(str(plain.db))
    finally:
        for sb in (lane, plain):
            sb.close()


def test_the_lane_keeps_the_rate_limits(tmp_path: Any) -> None:
    # a budget of 20 withdrawals in five minutes; answers and their limit headers are
    # held equal by _same
    lane, plain = _pair(tmp_path, rate_limits_enabled=True, rate_limits={"transfers": 20 / 300})
    try:
        for sb in (lane, plain):
            sb.app.state.limiter.clock = lambda: 1000.0
        _same(lane, plain, DEPOSIT, {"asset": "BTC", "amount": "10"})
        answers = [_same(lane, plain, WITHDRAWALS, WITHDRAWAL) for _ in range(21)]
        statuses = [r.status_code for r in answers]
        assert statuses.count(200) == 20 and statuses[-1] == 429, answers[0].text
        assert answers[0].headers["ratelimit-remaining"] == "19"
        assert answers[-1].headers["retry-after"] == "300"
    finally:
        for sb in (lane, plain):
            sb.close()


@pytest.mark.parametrize("path", [ORDERS, WITHDRAWALS])
def test_a_revoked_client_is_refused_by_the_lane_at_once(sandbox: Any, path: str) -> None:
    from sandex.engine.kernel.commands import RevokeClient

    headers, creds = sandbox.tenant()
    body = LIMIT if path == ORDERS else WITHDRAWAL
    assert sandbox.post(path, body, headers=headers).status_code in (200, 403)
    sandbox.engine.execute(RevokeClient(client_id=creds["client_id"]))
    r = sandbox.post(path, body, headers=headers)
    assert r.status_code == 401 and "revoked" in r.json()["detail"]


def test_a_client_revoked_by_another_process_is_refused_by_the_next_request(
    tmp_path: Path,
) -> None:
    """The bearer check reads the database once per loop iteration (sandex.api_adapter.auth.
    Clients): a request sent after `sandex clients revoke` returned is refused."""
    db = tmp_path / "live.db"
    server = Server(db, "--no-rate-limits")
    try:
        admin = server.token()
        created = httpx.post(f"{server.base}/v2/sandbox/customers", headers=admin).json()
        tenant = server.token(created["client_id"], created["client_secret"])
        url = f"{server.base}{ORDERS}"
        with httpx.Client() as http:  # one keep-alive connection, before and after
            for _ in range(20):
                assert http.post(url, json=LIMIT, headers=tenant).status_code == 403
            done = subprocess.run(
                [*SANDEX, "clients", "revoke", created["client_id"], "--db", str(db)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            r = http.post(url, json=LIMIT, headers=tenant)
        assert r.status_code == 401 and "revoked" in r.json()["detail"]
        assert httpx.post(url, json=LIMIT, headers=admin).status_code == 403  # no funds
    finally:
        code, _, err = server.stop()
    assert code == 0, err


def _route_of(write: Operation) -> APIRoute:
    """The FastAPI route of `write` among every router the app includes."""
    found = [
        r
        for router in ROUTERS
        for r in router.routes
        if isinstance(r, APIRoute) and r.path == write.path and write.method in r.methods
    ]
    assert len(found) == 1, write.path
    return found[0]


def _gated_as(route: APIRoute) -> Operation:
    """The row whose gates the route's pipeline dependency runs (pipeline.route)."""
    rows = [
        inspect.getclosurevars(d.call).nonlocals["op"]
        for d in route.dependant.dependencies
        if d.call is not None and d.call.__name__ == "gate"
    ]
    assert len(rows) == 1, route.path
    return rows[0]  # type: ignore[no-any-return]


@pytest.mark.parametrize("write", LANE, ids=lambda w: w.id)
def test_each_lane_route_is_the_fastapi_route_of_its_table_entry(write: Operation) -> None:
    route = _route_of(write)
    assert route.operation_id == write.id
    assert _gated_as(route) is write
    assert route.body_field is not None
    assert route.body_field.field_info.annotation is write.body
    # the route module serves the table's own row
    module = inspect.getmodule(route.endpoint)
    assert write in vars(module).values(), module


SAMPLE_PATHS = [
    ORDERS,
    WITHDRAWALS,
    DEPOSIT,
    "/v2/profiles/p-1/orders",
    "/v2/profiles//orders",
    "/v2/profiles/a/b/orders",
    "/v2/profiles/orders",
    "/v2/profiles/default/orders/",
    "/v2/profiles/default/orders/x",
    "/v2/transfer/crypto-withdrawals/",
    "/v2/transfer/crypto-withdrawals/x",
    "/v2/sandbox/profiles/default/deposit",
    "/v2/sandbox/profiles//deposit",
    "/v2/sandbox/profiles/deposit",
    "/v2/sandbox/profiles/a/b/deposit",
    "/v2/profiles/default/deposit",
    "/v2/sandbox/customers",
    "/v2/profiles",
]


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
def test_the_lane_takes_the_paths_its_routes_take(method: str) -> None:
    for path in SAMPLE_PATHS:
        scope = {"type": "http", "method": method, "path": path, "root_path": ""}
        expected = None
        for write in LANE:
            match, child = _route_of(write).matches(scope)
            if match == Match.FULL:
                params = child["path_params"]
                expected = (write, next(iter(params.values()), ""))
        assert lane_of(method, path) == expected, (method, path)
