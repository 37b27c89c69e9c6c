"""Property-based fuzzing of every operation with schemathesis, used by the bounded runs
in the suite (tests/api/test_fuzz.py) and the long runs of `make fuzz` (bench/fuzz.py).

Two documents drive it: sandex's own `/openapi.json` (in-process, every operation, with
the statuses and problem responses it declares), and the reference's `v2-subset.json`
against a running sandbox (field shapes as the real service states them). Each operation
gets positive and negative examples; the checks are: no 5xx, the response matches the
declared schema, and every error is an RFC 7807 problem."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

import httpx
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

# Destructive to the whole sandbox: every later example would meet an empty one.
EXCLUDED = frozenset({"ResetSandbox", "RestoreSandboxSnapshot"})
PROBLEM_FIELDS = ("type", "title", "status", "detail")
# Values that broke integer parameters, or that a lenient parse takes: past 2**63 - 1,
# digits `int()` refuses ('²' passes `str.isdigit()`) or should refuse, signs, spaces,
# separators, exponents, huge lengths. Every query parameter of every operation is sent
# each one (tests/api/test_fuzz.py), besides what schemathesis generates.
HOSTILE_INTEGERS = (
    "9999999999999999999",
    "18446744073709551616",
    "-9223372036854775809",
    "²",
    "١٢",
    "１２",
    "+1",
    "-1",
    " 1",
    "1 ",
    "1_0",
    "1.0",
    "1e3",
    "0x10",
    "",
    "0" * 5000 + "1",
    "9" * 5000,
    "\x00",
)
# pydantic's own wording, which a problem's detail never shows (api_adapter/problems.py
# words every validation error as the API does: "limit invalid: must be at least 1").
PYDANTIC_WORDS = ("Input should", "String should", "Field required", "Value error", "Extra inputs")


def errors_are_problems(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx/5xx is application/problem+json with type, title, status, detail; the
    token endpoint's RFC 6749 errors are the one exception, as that RFC fixes them."""
    if response.status_code < 400:
        return None
    media = response.headers.get("content-type", [""])
    media = media[0] if isinstance(media, list) else media
    if case.path.endswith("/oauth2/token") and response.status_code in (400, 401):
        assert "error" in response.json(), response.text
        return True
    assert media.startswith("application/problem+json"), f"error as {media}: {response.text}"
    body = response.json()
    missing = [f for f in PROBLEM_FIELDS if f not in body]
    assert not missing, f"problem without {missing}: {response.text}"
    assert body["status"] == response.status_code, response.text
    leaked = [w for w in PYDANTIC_WORDS if w in str(body["detail"])]
    assert not leaked, f"pydantic's words in a problem: {response.text}"
    return True


OWN_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    errors_are_problems,
]
# The reference declares error media types inconsistently and not every status sandex
# may answer (its README says so): shapes are held to it, media types to the problem rule.
REFERENCE_CHECKS = [not_a_server_error, response_schema_conformance, errors_are_problems]


def fuzz(
    schema: Any,
    *,
    headers: dict[str, str],
    max_examples: int,
    checks: list[Callable[..., Any]],
    base_url: str | None = None,
    fixed_path: dict[str, str] | None = None,
    modes: Iterable[GenerationMode] = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE),
    report: Callable[[str], None] | None = None,
) -> tuple[list[str], int]:
    """Failures (one line per operation and mode that failed) and the number of calls."""
    failures: list[str] = []
    calls = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        name = operation.definition.raw.get("operationId") or operation.label
        if name in EXCLUDED:
            continue
        wanted = {p: v for p, v in (fixed_path or {}).items() if "{" + p + "}" in operation.path}
        for mode in modes:
            if mode is GenerationMode.NEGATIVE and not (len(operation.query) or operation.body):
                continue  # only string path parameters: nothing can be made invalid
            strategy = operation.as_strategy(
                generation_mode=mode,
                path_parameters=wanted if mode is GenerationMode.POSITIVE and wanted else None,
            )
            count = [0]
            run = _runner(strategy, count, headers, base_url, checks, max_examples)
            started = time.monotonic()
            try:
                run()
            except Unsatisfiable:  # nothing of this operation can be made invalid
                pass
            except Exception as exc:  # noqa: BLE001 - every failure is reported, none stops the run
                text = str(exc).strip().splitlines()
                failures.append(f"{name} [{mode.value}]: {' | '.join(text[:12])}")
            calls += count[0]
            if report is not None:
                report(
                    f"{name:32} {mode.value:9} {count[0]:5} calls {time.monotonic() - started:6.1f}s"
                )
    return failures, calls


def _runner(
    strategy: Any,
    count: list[int],
    headers: dict[str, str],
    base_url: str | None,
    checks: list[Callable[..., Any]],
    max_examples: int,
) -> Callable[[], None]:
    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        kwargs: dict[str, Any] = {"headers": {**headers, **(case.headers or {})}}
        if base_url is not None:
            kwargs["base_url"] = base_url
        response = case.call(**kwargs)
        count[0] += 1
        case.validate_response(response, checks=checks)

    return run  # type: ignore[no-any-return]


def funded_headers(base: str) -> dict[str, str]:
    """The bootstrap client's bearer header on a server at `base`, its profile funded so
    that generated orders and withdrawals can get past the funds check."""
    form = {
        "grant_type": "client_credentials",
        "client_id": "sandex",
        "client_secret": "sandex-secret",
    }
    token = httpx.post(f"{base}/oauth2/token", data=form).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    for asset, amount in (("BTC", "10"), ("USD", "1000000")):
        httpx.post(
            f"{base}/v2/sandbox/profiles/default/deposit",
            json={"asset": asset, "amount": amount},
            headers=headers,
        )
    return headers


def query_parameters(document: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, name) of every query parameter of every GET operation of an OpenAPI
    document, the path's own parameters filled with values that exist in a sandbox."""
    fill = {"profile_id": "default", "market": "BTCUSD", "asset": "BTC"}
    found = []
    for path, item in document["paths"].items():
        operation = item.get("get")
        if operation is None:
            continue
        concrete = path
        for name, value in fill.items():
            concrete = concrete.replace("{" + name + "}", value)
        concrete = re.sub(r"\{[^}]+\}", "unknown", concrete)
        for parameter in operation.get("parameters", []):
            if parameter.get("in") == "query":
                found.append((concrete, parameter["name"]))
    return found
