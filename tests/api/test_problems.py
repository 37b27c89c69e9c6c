"""Bad input of every kind is a clear problem+json 4xx; nothing is a 500."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import APIRouter

from tests.support.reference import document, problem_titles, problem_types

PROBLEM = "application/problem+json"


def _is_problem(r: Any, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == PROBLEM
    body = r.json()
    assert set(body) >= {"type", "title", "status", "detail"}
    assert body["status"] == status
    return body  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"{not json", "not valid JSON"),
        (b"", "body"),
        (b"[]", "body"),
        (b'"a string"', "body"),
        (b'{"nickname": 5}', "nickname"),
        (b'{"nickname": null}', "nickname"),
        (b'{"nickname": "' + b"x" * 300 + b'"}', "nickname"),
    ],
)
def test_malformed_bodies_are_400_problems_naming_the_field(
    http_sandbox: Any, content: bytes, needle: str
) -> None:
    r = http_sandbox.post(
        "/v2/profiles",
        content=content,
        headers={**http_sandbox.headers, "Content-Type": "application/json"},
    )
    body = _is_problem(r, 400)
    assert body["type"] == "about:blank"
    assert needle in body["detail"]


def test_unknown_body_fields_are_ignored_by_default(http_sandbox: Any) -> None:
    """As the service does: its own examples carry fields beyond its schemas."""
    r = http_sandbox.post("/v2/profiles", {"nickname": "x", "surprise": 1, "profile_id": "p"})
    assert r.status_code == 200, r.text
    assert r.json()["nickname"] == "x" and "surprise" not in r.json()


WIRE = {
    "account_number": "12345678",
    "fiat_account_owner_address": {"country": "USA", "address1": "1 Main St"},
    "routing_details": {
        "routing_number_type": "ABA",
        "routing_number": "123456789",
        "bank_name": "Customers Bank",
        "bank_address": {"country": "USA"},
    },
}


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v2/profiles", {"nickname": "x", "surprise": 1}, "surprise"),
        ("/v2/profiles", {"surprise": None, "nickname": "x"}, "surprise"),
        (
            "/v2/sandbox/fiat-deposits",
            {
                "amount": "10.00",
                "asset": "USD",
                "memo_id": "M",
                "fiat_network_instructions": {
                    "wire": {**WIRE, "fiat_account_owner_address": {"country": "USA", "x": "1"}}
                },
            },
            "fiat_network_instructions.wire.fiat_account_owner_address.x",
        ),
        (
            "/v2/identity/identities",
            {"person_details": {"first_name": "J", "last_name": "D", "metadata": {"k": "v"}}},
            "person_details.metadata",
        ),
    ],
)
@pytest.mark.sandex(settings={"strict_fields": True})
def test_strict_fields_refuses_an_unknown_field_naming_it(
    http_sandbox: Any, path: str, body: dict[str, Any], field: str
) -> None:
    strict = http_sandbox
    problem = _is_problem(strict.post(path, body), 400)
    assert problem["detail"] == f"{field} invalid: unknown field"
    assert problem["meta"] == {"field": field}


def test_an_unknown_enum_value_is_a_400_listing_the_allowed_ones(http_sandbox: Any) -> None:
    r = http_sandbox.post(
        "/v2/transfer/fiat-deposit-instructions", {"profile_id": "default", "fiat_network": "ACH"}
    )
    body = _is_problem(r, 400)
    assert "fiat_network" in body["detail"]
    assert "WIRE" in body["detail"]


def test_unknown_paths_and_methods_are_problems(http_sandbox: Any) -> None:
    assert _is_problem(http_sandbox.get("/v2/nothing-here"), 404)["type"] == "about:blank"
    _is_problem(http_sandbox.http.put("/v2/profiles", headers=http_sandbox.headers), 405)


def test_an_unknown_id_is_a_404_problem(http_sandbox: Any) -> None:
    assert (
        "transfer not found"
        in _is_problem(http_sandbox.get("/v2/transfer/transfers/nope"), 404)["detail"]
    )
    _is_problem(http_sandbox.get("/v2/profiles/nope"), 404)
    _is_problem(http_sandbox.get("/v2/transfer/fiat-deposit-instructions/nope"), 404)


def test_a_bad_time_filter_is_a_400_naming_it(http_sandbox: Any) -> None:
    r = http_sandbox.get("/v2/transfer/transfers", params={"created_at.gte": "yesterday"})
    assert "created_at.gte" in _is_problem(r, 400)["detail"]


def test_clock_moves_need_exactly_one_of_advance_and_set_to(http_sandbox: Any) -> None:
    _is_problem(http_sandbox.post("/v2/sandbox/clock", {}), 400)
    _is_problem(
        http_sandbox.post(
            "/v2/sandbox/clock", {"advance_seconds": 1, "set_to": "2024-01-02T00:00:00Z"}
        ),
        400,
    )
    _is_problem(http_sandbox.post("/v2/sandbox/clock", {"set_to": "not a time"}), 400)
    r = http_sandbox.post("/v2/sandbox/clock", {"set_to": "2023-01-01T00:00:00Z"})
    assert "backwards" in _is_problem(r, 400)["detail"]
    moved = http_sandbox.post("/v2/sandbox/clock", {"set_to": "2024-03-01T12:00:00Z"}).json()
    assert moved == {"now": "2024-03-01T12:00:00.000000Z", "mode": "manual"}
    assert http_sandbox.get("/v2/sandbox/clock").json() == moved


@pytest.mark.sandex(clock="wall")
def test_a_wall_clock_cannot_be_moved(http_sandbox: Any) -> None:
    assert http_sandbox.get("/v2/sandbox/clock").json()["mode"] == "wall"
    _is_problem(http_sandbox.post("/v2/sandbox/clock", {"advance_seconds": 5}), 409)


def test_a_bug_is_a_500_problem_that_leaks_nothing(sandbox: Any) -> None:
    router = APIRouter()

    @router.get("/v2/explode")
    async def explode() -> None:
        raise RuntimeError("secret internals /etc/passwd")

    sandbox.app.include_router(router)
    r = sandbox.get("/v2/explode", headers={"X-Request-ID": "req-123"})
    body = _is_problem(r, 500)
    assert "secret" not in r.text and "Traceback" not in r.text
    assert "req-123" in body["detail"]
    assert r.headers["x-request-id"] == "req-123"


ORDER = {"side": "BUY", "market": "BTCUSD", "type": "LIMIT", "price": "1", "base_amount": "1"}
# (method, path, query or body, the detail): the API's own words, naming what was sent.
WORDED = [
    ("GET", "/v2/profiles", {"limit": "-1"}, "limit invalid: must be at least 1"),
    ("GET", "/v2/profiles", {"limit": "5000"}, "limit invalid: must be at most 1000"),
    ("GET", "/v2/profiles", {"limit": "ten"}, "limit invalid: must be an integer"),
    ("GET", "/v2/events", {"limit": "-1"}, "limit invalid: must be at least 1"),
    (
        "GET",
        "/v2/profiles/default/executions",
        {"limit": "501"},
        "limit invalid: must be at most 500",
    ),
    ("GET", "/v2/transfer/transfers", {"order": "UP"}, "order invalid: must be one of ASC, DESC"),
    (
        "GET",
        "/v2/orders",
        {"status": "DONE"},
        "status invalid: must be one of PENDING_SUBMISSION, SUBMITTED, OPEN, FILLED,"
        " CANCELLED, REJECTED",
    ),
    (
        "POST",
        "/v2/sandbox/profiles/default/deposit",
        {"asset": "BTC", "amount": 1},
        "amount invalid: must be a string",
    ),
    (
        "POST",
        "/v2/sandbox/profiles/default/deposit",
        {"asset": "BTC", "amount": "-1"},
        "amount invalid: invalid amount '-1': must be positive decimal",
    ),
    (
        "POST",
        "/v2/sandbox/clock",
        {"advance_seconds": -1},
        "advance_seconds invalid: must be at least 0",
    ),
    ("POST", "/v2/sandbox/customers", {"scopes": [5]}, "scopes[0] invalid: must be a string"),
    (
        "POST",
        "/v2/profiles",
        {"nickname": "x" * 201},
        "nickname invalid: must be at most 200 characters",
    ),
    ("POST", "/v2/profiles", {"nickname": ["x"]}, "nickname invalid: must be a string"),
    (
        "POST",
        "/v2/profiles/default/orders",
        {**ORDER, "expiration_date": [1]},
        "expiration_date invalid: must be a string",
    ),
    (
        "POST",
        "/v2/profiles/default/orders",
        {**ORDER, "await_fill_millis": "soon"},
        "await_fill_millis invalid: must be an integer",
    ),
]


@pytest.mark.parametrize(("method", "path", "sent", "detail"), WORDED)
def test_validation_errors_speak_the_apis_words(
    http_sandbox: Any, method: str, path: str, sent: dict[str, Any], detail: str
) -> None:
    r = http_sandbox.get(path, params=sent) if method == "GET" else http_sandbox.post(path, sent)
    body = _is_problem(r, 400)
    assert body["detail"] == detail
    assert body["meta"]["field"] == detail.split(" ")[0]


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/v2/orders", "order_time.begin"),
        ("/v2/orders", "order_time.end"),
        ("/v2/profiles/default/orders", "order_time.begin"),
        ("/v2/executions", "range.begin"),
        ("/v2/profiles/default/executions", "range.end"),
        ("/v2/transfer/transfers", "updated_at.gt"),
        ("/v2/events", "created_at.lte"),
    ],
)
def test_a_bad_time_names_the_parameter_the_client_sent(
    http_sandbox: Any, path: str, name: str
) -> None:
    body = _is_problem(http_sandbox.get(path, params={name: "yesterday"}), 400)
    assert body["detail"] == f"{name} invalid: not an RFC 3339 time"
    assert body["meta"] == {"field": name}


def test_a_null_fee_total_is_a_400_not_an_absent_total(http_sandbox: Any) -> None:
    body = {
        "asset": "BTC",
        "crypto_network": "BITCOIN",
        "destination_address": "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2",
        "amount": "0.001",
    }
    assert http_sandbox.post("/v2/transfer/fees/crypto-withdrawal", body).status_code == 200
    r = http_sandbox.post("/v2/transfer/fees/crypto-withdrawal", {**body, "total": None})
    problem = _is_problem(r, 400)
    assert problem["detail"] == "total invalid: must not be null"
    assert problem["meta"] == {"field": "total"}


def _body_operations(doc: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(path, method, operation id, the resolved properties of its JSON body) of every
    operation."""
    schemas = doc["components"]["schemas"]
    found = []
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            media = op.get("requestBody", {}).get("content", {}).get("application/json")
            if media is None:
                continue
            schema = media["schema"]
            for option in schema.get("anyOf", [schema]):
                if "$ref" in option:
                    properties = schemas[option["$ref"].rsplit("/", 1)[-1]]["properties"]
                    found.append((path, method.upper(), op["operationId"], properties))
    return found


def test_null_for_any_declared_field_of_any_body_is_a_400_naming_it(http_sandbox: Any) -> None:
    doc = http_sandbox.get("/openapi.json").json()
    checked = 0
    for path, method, operation, properties in _body_operations(doc):
        if not http_sandbox.serves(path):
            continue
        path = path.replace("{profile_id}", "default").replace("{market}", "BTCUSD")
        for field, schema in properties.items():
            assert "null" not in str(schema.get("anyOf", "")), f"{operation}.{field} is nullable"
            r = http_sandbox.http.request(
                method, path, json={field: None}, headers=http_sandbox.headers
            )
            body = _is_problem(r, 400)
            assert body["detail"] == f"{field} invalid: must not be null", (operation, body)
            assert body["meta"] == {"field": field}
            checked += 1
    assert checked >= 60  # every field of the 14 bodies


def test_null_inside_a_nested_object_names_its_path(http_sandbox: Any) -> None:
    wire = {"account_number": "1", "fiat_account_owner_address": {"country": "US", "city": None}}
    body = {
        "amount": "1",
        "asset": "USD",
        "memo_id": "M",
        "fiat_network_instructions": {"wire": wire},
    }
    problem = _is_problem(http_sandbox.post("/v2/sandbox/fiat-deposits", body), 400)
    name = "fiat_network_instructions.wire.fiat_account_owner_address.city"
    assert problem["detail"] == f"{name} invalid: must not be null"
    assert problem["meta"] == {"field": name}


def test_no_field_of_the_references_bodies_takes_null(http_sandbox: Any) -> None:
    doc = document()  # skips where the reference is absent
    checked = 0
    for path, method, operation, properties in _body_operations(doc):
        path = "/v2" + path.replace("{profile_id}", "default")
        for field, schema in properties.items():
            assert not schema.get("nullable"), f"the reference makes {operation}.{field} nullable"
            r = http_sandbox.http.request(
                method, path, json={field: None}, headers=http_sandbox.headers
            )
            body = _is_problem(r, 400)
            assert body["meta"] == {"field": field}, (operation, body)
            checked += 1
    assert checked >= 60


def _domain_errors() -> list[type[Any]]:
    import sandex.engine.runtime.writer  # noqa: F401 - its errors (EngineStopped, NotDecided) too
    from sandex.engine.kernel.errors import DomainError

    found, todo = [], [DomainError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_domain_error_code_has_its_http_status_title_and_type() -> None:
    from sandex.api_adapter.problem_types import DOMAIN_PROBLEMS

    assert {cls.code for cls in _domain_errors()} == set(DOMAIN_PROBLEMS)


def test_every_typed_problem_is_the_references_with_its_status() -> None:
    """A refusal of a kind the reference types carries its type URI and status (the
    taker band answered about:blank); sandex invents no type of its own."""
    from sandex.api_adapter.problem_types import DOMAIN_PROBLEMS, PROBLEM_BASE

    reference = problem_types()  # skips where the reference is absent
    typed = {PROBLEM_BASE + slug: status for status, slug, _ in DOMAIN_PROBLEMS.values() if slug}
    assert {uri: reference.get(uri) for uri in typed} == typed
    assert "market-conditions-prevented-execution" in {uri.rsplit("/", 1)[1] for uri in typed}


def test_every_typed_problems_title_is_the_references() -> None:
    """A problem type the reference titles carries that title, word for word."""
    from sandex.api_adapter.problem_types import DOMAIN_PROBLEMS, PROBLEM_BASE

    reference = problem_titles()  # skips where the reference is absent
    titled = {
        PROBLEM_BASE + slug: title
        for _, slug, title in DOMAIN_PROBLEMS.values()
        if slug and PROBLEM_BASE + slug in reference
    }
    assert titled == {uri: reference[uri] for uri in titled}
    assert "exceed-precision" in {uri.rsplit("/", 1)[1] for uri in titled}


def test_a_domain_error_renders_as_the_same_problem_as_before() -> None:
    from sandex.api_adapter.problems import domain_problem_body, domain_status
    from sandex.engine.kernel.errors import AlreadyExists, ExceedPrecision, Invalid, Unavailable

    assert domain_problem_body(AlreadyExists("exists", {"id": "x"})) == {
        "type": "https://developer.paxos.com/docs/v2/problems/already-exists",
        "title": "Already Exists",
        "status": 409,
        "detail": "exists",
        "meta": {"existing": {"id": "x"}},
    }
    assert domain_problem_body(Invalid("bad", field="nickname")) == {
        "type": "about:blank",
        "title": "Bad Request",
        "status": 400,
        "detail": "bad",
        "meta": {"field": "nickname"},
    }
    assert domain_problem_body(ExceedPrecision("BTC", 8, "amount"))["meta"] == {
        "asset": "BTC",
        "max_precision": 8,
        "field": "amount",
    }
    assert domain_status(Unavailable("later")) == 503


def test_the_engine_knows_no_http_words() -> None:
    """Status codes, titles and problem types are the adapter's (api_adapter/problems.py):
    no module of engine/ names them."""
    import re
    from pathlib import Path

    http = re.compile(
        r"developer\.paxos\.com/docs/v2/problems|about:blank|problem\+json|title_for"
        r'|"(Bad Request|Not Found|Forbidden|Conflict|Service Unavailable)"'
        r"|^\s+status = \d{3}$",
        re.MULTILINE,
    )
    engine = Path(__file__).resolve().parents[2] / "engine"
    # A fault rule's action is an HTTP answer a client asked to be given: its module
    # checks the problem type the rule carries (a URI or about:blank), and names nothing else.
    rules = engine / "domain" / "sandbox_faults.py"
    found = [
        f"{path.relative_to(engine.parent)}: {match.group()}"
        for path in sorted(engine.rglob("*.py"))
        for match in http.finditer(path.read_text())
        if not (path == rules and match.group() == "about:blank")
    ]
    assert len(list(engine.rglob("*.py"))) > 50  # the engine's modules, found
    assert found == []
