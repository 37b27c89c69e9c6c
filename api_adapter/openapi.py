"""sandex's own `/openapi.json`, made to say what the server really answers.

FastAPI documents a 422 validation error that sandex never sends; sandex answers
problem details (400, 401, 403, 404, 409, 413, 415, 429, 503) and its token endpoint
takes a form FastAPI cannot see. The document is fixed once, when first asked for, so
that clients and property-based fuzzers (schemathesis) can hold the server to it.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

PROBLEM = {
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "meta": {"type": "object"},
    },
}
OAUTH_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string"}, "error_description": {"type": "string"}},
}
TOKEN_FORM = {
    "type": "object",
    "required": ["grant_type"],
    "properties": {
        "grant_type": {"type": "string", "enum": ["client_credentials"]},
        "client_id": {"type": "string"},
        "client_secret": {"type": "string"},
        "scope": {"type": "string"},
    },
}
_REASONS = {
    400: "Bad request: a field is missing, malformed or breaks a rule",
    401: "Missing, malformed, forged, expired or revoked bearer token",
    403: "The token lacks the scope, or a rule forbids the operation",
    404: "No such resource for this customer",
    409: "Conflicts with the current state (for example a reused ref_id)",
    413: "Request body too large",
    415: "Request body is not application/json",
    429: "Rate limit exceeded; see Retry-After",
    503: "The event store cannot take the write now; retry",
}


def _problem(status: int) -> dict[str, Any]:
    return {
        "description": _REASONS[status],
        "content": {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
        },
    }


def _fix(doc: dict[str, Any]) -> None:
    doc.setdefault("components", {}).setdefault("schemas", {})["Problem"] = PROBLEM
    schemas = doc["components"]["schemas"]
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    for operations in doc.get("paths", {}).values():
        for method, op in operations.items():
            responses = op.setdefault("responses", {})
            responses.pop("422", None)
            for media in responses.get("200", {}).get("content", {}).values():
                if media.get("schema") == {"type": "string"}:  # FastAPI's guess for a Response
                    media["schema"] = {"type": "object"}  # every sandex answer is an object
            if op.get("operationId") == "IssueToken":
                op["requestBody"] = {
                    "required": True,
                    "content": {"application/x-www-form-urlencoded": {"schema": TOKEN_FORM}},
                }
                for status in ("400", "401"):
                    responses[status] = {
                        "description": "OAuth2 error (RFC 6749 section 5.2)",
                        "content": {"application/json": {"schema": OAUTH_ERROR}},
                    }
                responses["413"] = _problem(413)
                responses["429"] = _problem(429)
                continue
            statuses = [400, 404, 429, 503]
            if op.get("security"):
                statuses += [401, 403]
            if method != "get":
                statuses += [409]
            if "requestBody" in op:
                statuses += [413, 415]
            for code in sorted(statuses):
                responses.setdefault(str(code), _problem(code))


def install(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _fix(generate())
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]
