"""What a problem body says, without any HTTP machinery: the title of a status, and a
domain error's status, type and title. Its own module because `sandex backtest` hands
`domain_problem_body` to strategies and must not import FastAPI and Starlette for it."""

from __future__ import annotations

from typing import Any

from sandex.engine.kernel.errors import DomainError

PROBLEM_BASE = "https://developer.paxos.com/docs/v2/problems/"

_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    409: "Conflict",
    413: "Payload Too Large",
    414: "URI Too Long",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}

# A domain error's code (engine/kernel/errors.py) -> its status, and the slug and title of
# its problem type; a code without a slug is about:blank, titled by its status.
DOMAIN_PROBLEMS: dict[str, tuple[int, str | None, str | None]] = {
    "error": (400, None, None),
    "invalid": (400, None, None),
    "not-found": (404, None, None),
    "forbidden": (403, None, None),
    "conflict": (409, None, None),
    "unavailable": (503, None, None),
    "already-exists": (409, "already-exists", "Already Exists"),
    "insufficient-funds": (403, "insufficient-funds", "Insufficient Funds"),
    "expired": (403, "expired", "Expired"),
    "rejected": (403, "rejected", "Rejected"),
    "exceed-precision": (400, "exceed-precision", "Exceeds Maximum Precision Allowed"),
    "notional-value-too-large": (403, "notional-value-too-large", "Notional Value Too Large"),
    "market-conditions-prevented-execution": (
        403,
        "market-conditions-prevented-execution",
        "Market Conditions Prevented Execution",
    ),
    "exceed-max-withdraw-limit": (400, "exceed-max-withdraw-limit", "Withdrawal Amount Too Large"),
    "below-min-withdraw-limit": (400, "below-min-withdraw-limit", "Withdrawal Amount Too Small"),
}


def title_for(status: int) -> str:
    """A problem's title when its type is about:blank: the status's reason phrase."""
    return _TITLES.get(status, "Error")


def problem_body(
    status: int,
    detail: str,
    *,
    type_uri: str = "about:blank",
    title: str | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An RFC 7807 problem document; its title the status's reason phrase unless given.
    Every problem sandex answers is made here, a domain error's too."""
    body: dict[str, Any] = {
        "type": type_uri,
        "title": title or title_for(status),
        "status": status,
        "detail": detail,
    }
    if meta is not None:
        body["meta"] = meta
    return body


def domain_status(exc: DomainError) -> int:
    return DOMAIN_PROBLEMS[exc.code][0]


def domain_problem_body(exc: DomainError) -> dict[str, Any]:
    """The RFC 7807 body the HTTP API answers for `exc`; the backtest's strategies are
    given it too (`sandex.engine.backtest.run(problems=...)`)."""
    status, slug, title = DOMAIN_PROBLEMS[exc.code]
    type_uri = PROBLEM_BASE + slug if slug else "about:blank"
    return problem_body(status, exc.detail, type_uri=type_uri, title=title, meta=exc.details)
