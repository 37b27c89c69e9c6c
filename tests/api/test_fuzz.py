"""Bounded schemathesis runs: every operation, positive and negative examples, from
sandex's own /openapi.json in-process and from the reference document against a running
sandbox. `make fuzz` runs the same for longer (bench/fuzz.py). The runs over every
operation or every query parameter are long: `slow`, run by `make test`'s slow tier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis

from tests.support.fuzzing import (
    HOSTILE_INTEGERS,
    OWN_CHECKS,
    REFERENCE_CHECKS,
    funded_headers,
    fuzz,
    query_parameters,
)
from tests.support.reference import document
from tests.support.server_helpers import Process

EXAMPLES = 6


def _funded(sb: Any) -> None:
    for asset, amount in (("BTC", "10"), ("ETH", "100"), ("USD", "1000000")):
        sb.deposit(asset, amount)


@pytest.mark.slow
def test_every_operation_of_sandexs_own_document(http_sandbox: Any) -> None:
    _funded(http_sandbox)
    app = getattr(http_sandbox, "app", None)  # in process under --backend postgresql
    if app is not None:
        schema, base_url = schemathesis.openapi.from_asgi("/openapi.json", app), None
    else:  # a plugin world: its document, called on its server
        base_url = str(http_sandbox.http.base_url).rstrip("/")
        schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    failures, calls = fuzz(
        schema,
        headers=http_sandbox.headers,
        max_examples=EXAMPLES,
        checks=OWN_CHECKS,
        base_url=base_url,
        fixed_path={"profile_id": "default", "market": "BTCUSD"},
    )
    assert calls > 200
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_hostile_integers_in_every_query_parameter_are_answered_never_5xx(
    http_sandbox: Any,
) -> None:
    """`since_execution_id=9999999999999999999` (past SQLite's 64-bit integers) and
    `since_execution_id=²` (passes `isdigit()`, fails `int()`) were 500s."""
    parameters = query_parameters(http_sandbox.get("/openapi.json").json())
    assert ("/v2/executions", "since_execution_id") in parameters
    assert ("/v2/profiles/default/executions", "since_execution_id") in parameters
    failures = []
    for path, name in parameters:
        for value in HOSTILE_INTEGERS:
            r = http_sandbox.get(path, params={name: value})
            if r.status_code >= 500 or (
                r.status_code >= 400 and r.headers["content-type"] != "application/problem+json"
            ):
                failures.append(f"{path}?{name}={value[:24]!r}: {r.status_code} {r.text[:120]}")
    assert len(parameters) > 40
    assert not failures, "\n".join(failures[:20])


@pytest.mark.parametrize("path", ["/v2/executions", "/v2/profiles/default/executions"])
@pytest.mark.parametrize("value", ["9999999999999999999", "²", "+1", " 1", "١٢"])
def test_an_execution_id_out_of_range_or_not_in_ascii_digits_is_a_400_naming_it(
    http_sandbox: Any, path: str, value: str
) -> None:
    r = http_sandbox.get(path, params={"since_execution_id": value})
    assert r.status_code == 400, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["meta"]["field"] == "since_execution_id"
    assert r.json()["detail"].startswith("since_execution_id invalid: must be")


@pytest.mark.parametrize("value", ["+5", " 5", "5.0", "1_0", "５", "-1", "-0", "1001"])
def test_a_limit_is_ascii_digits_within_its_bounds(http_sandbox: Any, value: str) -> None:
    """pydantic alone took '+5', ' 5', '5.0' and '1_0' as 5 and 10."""
    for path in ("/v2/profiles", "/v2/orders", "/v2/executions", "/v2/events"):
        r = http_sandbox.get(path, params={"limit": value})
        assert r.status_code == 400, f"{path}: {r.text}"
        assert r.json()["meta"]["field"] == "limit"
    assert http_sandbox.get("/v2/profiles", params={"limit": "05"}).status_code == 200


@pytest.mark.slow
def test_every_operation_of_the_reference_against_a_running_sandbox(
    tmp_path: Path, database: Any
) -> None:
    reference = document()  # skips, saying why, where the reference is absent
    server = Process(database("fuzz.db"), tmp_path / "server.log")
    try:
        headers = funded_headers(server.base)
        schema = schemathesis.openapi.from_dict(reference)
        failures, calls = fuzz(
            schema,
            headers=headers,
            max_examples=EXAMPLES,
            checks=REFERENCE_CHECKS,
            base_url=f"{server.base}/v2",
            fixed_path={"profile_id": "default", "market": "BTCUSD"},
        )
    finally:
        server.stop()
    assert calls > 150
    assert not failures, "\n".join(failures)
