"""Every error is an RFC 7807 problem: domain errors, validation errors, unknown routes,
and bugs (a 500 that names the request id and nothing of the internals)."""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from api_adapter.responses import ProblemResponse, problem
from engine.errors import DomainError

log = structlog.get_logger("sandex.http")


class AuthError(Exception):
    """401 or 403 raised by the bearer-token dependency."""

    def __init__(self, status: int, detail: str, meta: dict[str, Any] | None = None):
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.meta = meta


def _field_name(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def _describe(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    loc = tuple(error.get("loc", ()))
    name = _field_name(loc)
    if kind == "json_invalid":
        return "request body is not valid JSON"
    if kind == "missing":
        return f"{name} is required"
    if kind == "extra_forbidden":
        return f"{name} invalid: unknown field"
    if kind in ("model_attributes_type", "dict_type") and name == "body":
        return "request body must be a JSON object"
    return f"{name} invalid: {error.get('msg', 'invalid value')}"


def validation_problem(errors: list[dict[str, Any]]) -> ProblemResponse:
    first = errors[0] if errors else {"type": "value_error", "loc": ("body",), "msg": "invalid"}
    name = _field_name(tuple(first.get("loc", ())))
    meta = {"field": name} if first.get("type") != "json_invalid" else None
    return problem(400, _describe(first), meta=meta)


def domain_problem(exc: DomainError) -> ProblemResponse:
    headers = {"Retry-After": "1"} if exc.status == 503 else None
    return ProblemResponse(exc.problem(), status_code=exc.status, headers=headers)


def http_problem(exc: HTTPException, method: str, path: str) -> ProblemResponse:
    detail = exc.detail if isinstance(exc.detail, str) else "request refused"
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no such resource: {method} {path}"
    return problem(exc.status_code, detail, headers=getattr(exc, "headers", None))


def install(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> ProblemResponse:
        return domain_problem(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> ProblemResponse:
        return validation_problem(list(exc.errors()))

    @app.exception_handler(AuthError)
    async def _auth(request: Request, exc: AuthError) -> ProblemResponse:
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return problem(exc.status, exc.detail, meta=exc.meta, headers=headers)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> ProblemResponse:
        return http_problem(exc, request.method, request.url.path)

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> ProblemResponse:
        request_id = getattr(request.state, "request_id", "")
        log.exception("unhandled error", path=request.url.path)
        return problem(
            500,
            f"internal error; quote request id {request_id} when reporting it",
            headers={"X-Request-ID": request_id} if request_id else None,
        )
