"""Typed problem errors: one class per problem type sandex answers (RFC 7807).

The client talks HTTP only, so it cannot import the server's table of problem types
(`sandex.api_adapter.problem_types`); `tests/client/test_client_errors.py` holds the two equal.
"""

from __future__ import annotations

from typing import Any, ClassVar

PROBLEM_BASE = "https://developer.paxos.com/docs/v2/problems/"


class SandexError(Exception):
    """Every error this client raises of its own."""


class ProblemError(SandexError):
    """A problem+json answer. `problem` is its whole body; `status`, `type`, `title`,
    `detail` and `meta` its fields; `headers` the answer's headers."""

    status_code: ClassVar[int | None] = None  # the status of an about:blank class
    slug: ClassVar[str | None] = None  # the last segment of a typed class's type URI

    def __init__(self, problem: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self.problem = problem
        self.status: int = int(problem.get("status") or 0)
        self.type: str = str(problem.get("type") or "about:blank")
        self.title: str = str(problem.get("title") or "")
        self.detail: str = str(problem.get("detail") or "")
        self.meta: dict[str, Any] = problem.get("meta") or {}
        self.headers = headers or {}
        super().__init__(f"{self.status} {self.title}: {self.detail}")


# about:blank problems, one class per status (titled by its reason phrase)
class BadRequestError(ProblemError):
    status_code = 400


class UnauthorizedError(ProblemError):
    status_code = 401


class ForbiddenError(ProblemError):
    status_code = 403


class NotFoundError(ProblemError):
    status_code = 404


class RequestTimeoutError(ProblemError):
    status_code = 408


class ConflictError(ProblemError):
    status_code = 409


class PayloadTooLargeError(ProblemError):
    status_code = 413


class URITooLongError(ProblemError):
    status_code = 414


class UnsupportedMediaTypeError(ProblemError):
    status_code = 415


class TooManyRequestsError(ProblemError):
    status_code = 429


class RequestHeaderFieldsTooLargeError(ProblemError):
    status_code = 431


class InternalServerError(ProblemError):
    status_code = 500


class BadGatewayError(ProblemError):
    status_code = 502


class ServiceUnavailableError(ProblemError):
    status_code = 503


class GatewayTimeoutError(ProblemError):
    status_code = 504


# typed problems (a type URI of their own), each under its status's class
class AlreadyExistsError(ConflictError):
    slug = "already-exists"


class InsufficientFundsError(ForbiddenError):
    slug = "insufficient-funds"


class ExpiredError(ForbiddenError):
    slug = "expired"


class RejectedError(ForbiddenError):
    slug = "rejected"


class ExceedPrecisionError(BadRequestError):
    slug = "exceed-precision"


class NotionalValueTooLargeError(ForbiddenError):
    slug = "notional-value-too-large"


class MarketConditionsPreventedExecutionError(ForbiddenError):
    slug = "market-conditions-prevented-execution"


class ExceedMaxWithdrawLimitError(BadRequestError):
    slug = "exceed-max-withdraw-limit"


class BelowMinWithdrawLimitError(BadRequestError):
    slug = "below-min-withdraw-limit"


def _subclasses(cls: type[ProblemError]) -> list[type[ProblemError]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


_ALL = _subclasses(ProblemError)
# a typed problem's class by its type URI; an about:blank problem's by its status
BY_TYPE: dict[str, type[ProblemError]] = {PROBLEM_BASE + c.slug: c for c in _ALL if c.slug}
BY_STATUS: dict[int, type[ProblemError]] = {
    c.status_code: c for c in _ALL if c.status_code is not None and c.slug is None
}


def problem_error(problem: dict[str, Any], headers: dict[str, str] | None = None) -> ProblemError:
    """The error of a problem body: its type's class, else its status's, else ProblemError
    (a type this client does not know still raises, with its fields)."""
    cls = BY_TYPE.get(str(problem.get("type")))
    if cls is None:
        cls = BY_STATUS.get(int(problem.get("status") or 0), ProblemError)
    return cls(problem, headers)
