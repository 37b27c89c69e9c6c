"""The operation table (api_adapter/operations.py) is the one list of what sandex serves:
every route of the app is one row and every row one route, with the row's method, path,
body model and answer; the rate limiter's families, the fast lane and the OpenAPI
examples read it; and its ids are the reference document's where the reference has the
operation."""

from __future__ import annotations

import inspect
import typing
from typing import Any

from fastapi.routing import APIRoute

from sandex.api_adapter import openapi, rate_limits
from sandex.api_adapter.app import ROUTERS
from sandex.api_adapter.middleware import fast_lane
from sandex.api_adapter.operations import BY_ID, LANE, OPERATIONS, READS, WRITES, Operation
from sandex.api_adapter.pipeline import ANSWER_MODELS
from tests.support import reference

ROUTES = [route for router in ROUTERS for route in router.routes if isinstance(route, APIRoute)]


def _row_gated(route: APIRoute) -> Operation:
    """The row whose gates the route's pipeline dependency runs (pipeline.route)."""
    rows = [
        inspect.getclosurevars(d.call).nonlocals["op"]
        for d in route.dependant.dependencies
        if d.call is not None and d.call.__name__ in ("gate", "open_gate")
    ]
    assert len(rows) == 1, f"{route.path}: {len(rows)} gate dependencies"
    return rows[0]  # type: ignore[no-any-return]


def _body_model(route: APIRoute) -> Any:
    if route.body_field is None:
        return None
    annotation = route.body_field.field_info.annotation
    given = [a for a in typing.get_args(annotation) if a is not type(None)]
    return given[0] if given else annotation


def test_every_route_is_one_row_and_every_row_one_route() -> None:
    assert len(BY_ID) == len(OPERATIONS), "an operation id is in the table twice"
    served = {}
    for route in ROUTES:
        assert len(route.methods) == 1, route.path
        (method,) = route.methods
        assert route.operation_id not in served, f"{route.operation_id} is served twice"
        served[route.operation_id] = (method, route.path)
    assert served == {op.id: (op.method, op.path) for op in OPERATIONS}


def test_each_route_runs_the_gates_of_its_row_and_takes_its_body_and_answer() -> None:
    for route in ROUTES:
        row = BY_ID[route.operation_id or ""]
        assert _row_gated(route) is row, route.operation_id
        assert _body_model(route) is row.body, route.operation_id
        answer = ANSWER_MODELS.get((route.operation_id or "", 200))
        assert answer is row.answer, route.operation_id


def test_operation_ids_are_the_reference_documents_where_it_has_the_operation() -> None:
    ids = reference.operation_ids()
    theirs = {op.id: ids[op.method, op.path] for op in OPERATIONS if (op.method, op.path) in ids}
    assert theirs, "no operation of the table is in the reference"
    assert theirs == {op_id: op_id for op_id in theirs}
    # sandbox-only ids are of the same style: UpperCamelCase, a verb first
    for op in OPERATIONS:
        assert op.id[0].isupper() and op.id.isalnum(), op.id


def test_the_rate_limiter_reads_each_operations_family_from_its_row() -> None:
    limiter = rate_limits.RateLimiter()
    for op in OPERATIONS:
        assert limiter.family_of(op.id, op.method).name == op.family, op.id
        assert op.family in rate_limits._WHAT, f"{op.id}: family {op.family} is undescribed"
    # the real service's rows of limits: operations that share a budget
    shared = {
        "token": {"IssueToken"},
        "orders": {"CreateOrder", "CancelOrder"},
        "transfers": {"CreateCryptoWithdrawal", "CreateInternalTransfer"},
        "market-data": {"GetOrderBook", "ListRecentExecutions"},
    }
    for family, ids in shared.items():
        assert {op.id for op in OPERATIONS if op.family == family} == ids, family
    assert limiter.family("transfers").rate == 20.0
    for op in OPERATIONS:
        if op.family in (READS, WRITES):
            assert op.family == (READS if op.method == "GET" else WRITES), op.id


def test_the_fast_lane_serves_the_rows_that_build_a_command() -> None:
    assert {op.id for op in LANE} == {
        "CreateOrder",
        "CreateCryptoWithdrawal",
        "CreateSandboxDeposit",
    }
    for op in LANE:
        assert op.scope is not None and op.body is not None, op.id
        path = op.path.replace("{profile_id}", "p-1")
        assert fast_lane.lane_of(op.method, path) == (op, "p-1" if op.has_param else "")


def test_the_openapi_examples_name_operations_of_the_table() -> None:
    assert set(openapi.REQUEST_EXAMPLES) <= {op.id for op in OPERATIONS if op.body is not None}
    assert {op for op, _ in openapi.NO_EXAMPLE} <= set(BY_ID)
