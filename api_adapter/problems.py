"""Every error is an RFC 7807 problem: domain errors, validation errors, unknown routes,
and bugs (a 500 that names the request id and nothing of the internals)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from sandex.api_adapter.problem_types import domain_problem_body, domain_status
from sandex.api_adapter.request_bodies import (
    ADDRESS_PATTERN,
    FIAT_AMOUNT_PATTERN,
    MEMO_PATTERN,
    NULL_VALUE,
    UNKNOWN_FIELD,
)
from sandex.api_adapter.responses import ProblemResponse, problem
from sandex.engine.kernel.errors import DomainError
from sandex.engine.kernel.logs import get_logger
from sandex.engine.kernel.money import AMOUNT_PATTERN

log = get_logger("sandex.http")


class AuthError(Exception):
    """401 or 403 raised by the bearer-token dependency."""

    def __init__(self, status: int, detail: str, meta: dict[str, Any] | None = None):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.meta = meta


class FaultProblem(Exception):
    """The problem a fault rule answers instead of the call's (sandex.api_adapter.faults)."""

    def __init__(
        self, status: int, detail: str, type_uri: str, retry_after: int | None, meta: dict[str, Any]
    ):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.type_uri = type_uri
        self.retry_after = retry_after
        self.meta = meta


# Where a request's value sits: a query, path or header parameter by the name the client
# sent (FastAPI reports the alias, e.g. `created_at.gte`), a body field by its dotted path.
_PARAMETER = ("query", "path", "header", "cookie")


def _field_name(loc: tuple[Any, ...]) -> str:
    if loc and loc[0] in _PARAMETER:
        return str(loc[1]) if len(loc) > 1 else "parameter"
    name = ""
    for part in loc[1:] if loc and loc[0] == "body" else loc:
        name += f"[{part}]" if isinstance(part, int) else f".{part}" if name else str(part)
    return name or "body"


def _choices(expected: str) -> str:
    """pydantic's "'A', 'B' or 'C'" as "A, B, C"."""
    return ", ".join(c.strip().strip("'") for c in re.split(r", | or ", expected))


def _plural(count: Any, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


# The wording of a pattern the request models use, by the pattern itself.
_PATTERNS = {
    AMOUNT_PATTERN.pattern: "invalid amount '{input}': must be positive decimal",
    FIAT_AMOUNT_PATTERN: "invalid amount '{input}': must be positive decimal"
    " with at most 2 decimal places",
    ADDRESS_PATTERN: "only letters, digits, spaces and / ? : ( ) . , & ' + - are allowed",
    MEMO_PATTERN: "only letters, digits, spaces and / ? : ( ) . , & ' + - are allowed",
}


def _wording(kind: str, ctx: dict[str, Any], value: Any) -> str:
    """The API's words for one pydantic error type: what the value must be."""
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        word = {"greater_than_equal": "at least", "greater_than": "greater than"}
        word |= {"less_than_equal": "at most", "less_than": "less than"}
        bound = next(iter(ctx.values()), "")
        return f"must be {word[kind]} {bound}"
    if kind in ("int_type", "int_parsing", "int_from_float", "int_parsing_size"):
        return "must be an integer"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return "must be a number"
    if kind in ("bool_type", "bool_parsing"):
        return "must be true or false"
    if kind in ("string_type", "string_unicode"):
        return "must be a string"
    if kind == "string_too_long":
        return f"must be at most {_plural(ctx.get('max_length'), 'character')}"
    if kind == "string_too_short":
        return f"must be at least {_plural(ctx.get('min_length'), 'character')}"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        text = str(value)[:64] if isinstance(value, str) else ""
        return _PATTERNS.get(pattern, "has an invalid format").format(input=text)
    if kind in ("literal_error", "enum"):
        return f"must be one of {_choices(str(ctx.get('expected', '')))}"
    if kind in ("dict_type", "model_type", "model_attributes_type", "mapping_type"):
        return "must be an object"
    if kind in ("list_type", "tuple_type", "set_type", "iterable_type"):
        return "must be a list"
    if kind == "too_long":
        return f"must have at most {_plural(ctx.get('max_length'), 'item')}"
    if kind == "too_short":
        return f"must have at least {_plural(ctx.get('min_length'), 'item')}"
    if kind == UNKNOWN_FIELD:
        return "unknown field"
    if kind == NULL_VALUE:
        return "must not be null"
    return "invalid value"


def _describe(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    name = _field_name(tuple(error.get("loc", ())))
    if kind == "json_invalid":
        return "request body is not valid JSON"
    if kind == "missing":
        return f"{name} is required"
    if kind in ("model_attributes_type", "dict_type") and name == "body":
        return "request body must be a JSON object"
    return f"{name} invalid: {_wording(kind, error.get('ctx') or {}, error.get('input'))}"


def _located(error: dict[str, Any]) -> dict[str, Any]:
    """A null or an unknown field refused by a body model (`Body._declared_fields`) is
    located at its field."""
    if error.get("type") in (NULL_VALUE, UNKNOWN_FIELD):
        field = (error.get("ctx") or {}).get("field")
        return {**error, "loc": (*tuple(error.get("loc", ())), field)}
    return error


def validation_problem(errors: list[dict[str, Any]]) -> ProblemResponse:
    first = errors[0] if errors else {"type": "value_error", "loc": ("body",), "msg": "invalid"}
    first = _located(first)
    name = _field_name(tuple(first.get("loc", ())))
    meta = {"field": name} if first.get("type") != "json_invalid" else None
    return problem(400, _describe(first), meta=meta)


def domain_problem(exc: DomainError) -> ProblemResponse:
    status = domain_status(exc)
    headers = {"Retry-After": "1"} if status == 503 else None
    return ProblemResponse(domain_problem_body(exc), status_code=status, headers=headers)


def http_problem(exc: HTTPException, method: str, path: str) -> ProblemResponse:
    detail = exc.detail if isinstance(exc.detail, str) else "request refused"
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no such resource: {method} {path}"
    return problem(exc.status_code, detail, headers=getattr(exc, "headers", None))


def auth_problem(exc: AuthError) -> ProblemResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return problem(exc.status, exc.detail, meta=exc.meta, headers=headers)


def fault_problem(exc: FaultProblem) -> ProblemResponse:
    wait = exc.retry_after
    headers = {"Retry-After": str(wait)} if wait is not None else None
    return problem(exc.status, exc.detail, type_uri=exc.type_uri, meta=exc.meta, headers=headers)


# The refusals a request's pipeline and handlers raise, and their problem documents.
REFUSALS = (DomainError, AuthError, RequestValidationError, HTTPException, FaultProblem)


def render(exc: Exception, method: str, path: str) -> ProblemResponse:
    """The problem answer of a refusal (one of REFUSALS), whoever raised it: a gate, the
    fast lane, a route's handler or FastAPI's validation. `path` is the request's, for a
    404's detail."""
    if isinstance(exc, DomainError):
        return domain_problem(exc)
    if isinstance(exc, AuthError):
        return auth_problem(exc)
    if isinstance(exc, RequestValidationError):
        return validation_problem(list(exc.errors()))
    if isinstance(exc, HTTPException):
        return http_problem(exc, method, path)
    if isinstance(exc, FaultProblem):
        return fault_problem(exc)
    raise TypeError(f"not a refusal: {exc!r}")


def install(app: FastAPI) -> None:
    async def _refused(request: Request, exc: Exception) -> ProblemResponse:
        return render(exc, request.method, request.url.path)

    for refusal in REFUSALS:
        app.add_exception_handler(refusal, _refused)

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> ProblemResponse:
        request_id = getattr(request.state, "request_id", "")
        log.exception("unhandled error", path=request.url.path)
        return problem(
            500,
            f"internal error; quote request id {request_id} when reporting it",
            headers={"X-Request-ID": request_id} if request_id else None,
        )
