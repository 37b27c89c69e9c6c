"""What the sync and the async client decide alike: which failure is retried, how long
to wait before the next attempt, and the error an answer raises."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from sandex.client._calls import Call, loads
from sandex.client._errors import AlreadyExistsError, ProblemError, problem_error

# A write without a ref_id may have been carried out when its answer is lost or is a
# 500/502/504: only these say it was not, so only these retry it.
_NOT_CARRIED_OUT = (429, 503)
_SAFE_METHODS = ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")


@dataclass(frozen=True)
class Retries:
    """Bounded retries: at most `max_retries` after the first attempt, waiting what
    `Retry-After` says (up to `max_retry_after` seconds; longer raises at once), else
    `backoff` seconds doubled per attempt with jitter, at most `max_backoff`."""

    max_retries: int = 3
    backoff: float = 0.2
    max_backoff: float = 5.0
    max_retry_after: float = 60.0


NO_RETRIES = Retries(max_retries=0)


def retried(call: Call[Any], *, status: int | None = None, error: Exception | None = None) -> bool:
    """Whether a failed attempt of `call` may be tried again: 429 and 5xx answers, and a
    connection that failed; a write that is neither idempotent nor carries a ref_id only
    when the server surely did nothing (429, 503, a connection never made)."""
    safe = call.method in _SAFE_METHODS or call.ref_id is not None
    if status is not None:
        return status in _NOT_CARRIED_OUT or (safe and status >= 500)
    if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout):
        return True
    return safe and isinstance(error, httpx.TransportError)


def retry_after(headers: httpx.Headers) -> float | None:
    """`Retry-After`'s seconds (a number or an HTTP date), or None."""
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def wait(policy: Retries, attempt: int, headers: httpx.Headers | None) -> float | None:
    """Seconds to wait before attempt `attempt + 1`; None when the server asks for longer
    than the policy allows."""
    asked = retry_after(headers) if headers is not None else None
    if asked is not None:
        return asked if asked <= policy.max_retry_after else None
    step = min(policy.max_backoff, policy.backoff * 2 ** (attempt - 1))
    return step * (0.5 + random.random() / 2)  # jitter: retries of many clients spread


def error_of(response: httpx.Response) -> ProblemError:
    """The typed error of a refused answer (a body that is no problem still gives one)."""
    try:
        body = loads(response.text)
    except ValueError:
        body = None
    if not isinstance(body, dict) or "status" not in body:
        body = {"type": "about:blank", "status": response.status_code, "detail": response.text}
    return problem_error(body, dict(response.headers))


def found(call: Call[Any], error: ProblemError, attempt: int) -> str | None:
    """The id of a ref_id's one write, when a retry of it is refused as already done."""
    if call.ref_id is None or attempt == 1 or not isinstance(error, AlreadyExistsError):
        return None
    existing = error.meta.get("existing") or {}
    return str(existing["id"]) if "id" in existing else None
