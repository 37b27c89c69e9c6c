"""Domain errors. Each knows its problem type, status and structured `meta`, so the
HTTP adapter maps them without knowing any business rule."""

from __future__ import annotations

from typing import Any

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
    503: "Service Unavailable",
}


def title_for(status: int) -> str:
    return _TITLES.get(status, "Error")


class DomainError(Exception):
    status = 400
    slug: str | None = None
    title: str | None = None

    def __init__(
        self, detail: str, *, meta: dict[str, Any] | None = None, field: str | None = None
    ):
        super().__init__(detail)
        self.detail = detail
        self.meta = meta
        self.field = field

    @property
    def type_uri(self) -> str:
        return PROBLEM_BASE + self.slug if self.slug else "about:blank"

    def problem(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": self.type_uri,
            "title": self.title or title_for(self.status),
            "status": self.status,
            "detail": self.detail,
        }
        if self.meta is not None:
            body["meta"] = self.meta
        elif self.field is not None:
            body["meta"] = {"field": self.field}
        return body


class Invalid(DomainError):
    status = 400


class NotFound(DomainError):
    status = 404


class Forbidden(DomainError):
    status = 403


class Conflict(DomainError):
    status = 409


class Unavailable(DomainError):
    status = 503


class AlreadyExists(DomainError):
    status = 409
    slug = "already-exists"
    title = "Already Exists"

    def __init__(self, detail: str, existing: dict[str, Any]):
        super().__init__(detail, meta={"existing": existing})


class InsufficientFunds(DomainError):
    status = 403
    slug = "insufficient-funds"
    title = "Insufficient Funds"

    def __init__(self, profile_id: str, asset: str, available: str, needed: str):
        super().__init__(
            f"insufficient {asset} funds in profile {profile_id}: {needed} needed, {available} available",
            meta={
                "profile_id": profile_id,
                "asset": asset,
                "available": available,
                "needed": needed,
            },
        )


class Expired(DomainError):
    status = 403
    slug = "expired"
    title = "Expired"

    def __init__(self, detail: str, expired_at: str):
        super().__init__(detail, meta={"expired_at": expired_at})


class ExceedPrecision(DomainError):
    status = 400
    slug = "exceed-precision"
    title = "Exceed Precision"

    def __init__(self, asset: str, places: int, field: str | None = None):
        super().__init__(
            f"max precision allowed for asset {asset} is {places}",
            meta={"asset": asset, "max_precision": places, "field": field},
            field=field,
        )


class NotionalTooLarge(DomainError):
    status = 403
    slug = "notional-value-too-large"
    title = "Notional Value Too Large"


class ExceedMaxWithdraw(DomainError):
    status = 400
    slug = "exceed-max-withdraw-limit"
    title = "Exceed Max Withdraw Limit"
