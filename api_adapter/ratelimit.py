"""Rate limits per client and endpoint, as the real service states them.

A token bucket per (client, operation): it holds up to one second of requests and
refills continuously, so a client may burst its per-second allowance and then keeps to
the rate. One dictionary look-up and a few float operations per request. A request over
the limit is answered 429 with `Retry-After` before any work is done.

The client is the token's client id when the bearer token's signature holds, and the
peer address otherwise (public market data). A token request is charged to its
`client_id` when its secret holds and to the peer address when it does not, so a
flood of wrong secrets naming a client throttles the flooder, not the client.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping

from fastapi import Request
from starlette.exceptions import HTTPException

# Requests per second, by operation id; every other operation gets DEFAULT_RATE.
DEFAULT_RATE = 50.0
RATES: dict[str, float] = {
    "CreateCryptoWithdrawal": 20.0,
    "CreateInternalTransfer": 20.0,
    "GetOrderBook": 10.0,
    "ListRecentExecutions": 10.0,
    "IssueToken": 1.0,
}
# Operations that call the limiter themselves, with a client they know better.
SELF_LIMITED = frozenset({"IssueToken"})
_PRUNE_AT = 100_000


class RateLimiter:
    def __init__(
        self,
        overrides: Mapping[str, float] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        rates = {**RATES, **(overrides or {})}
        self.default = float(rates.pop("default", DEFAULT_RATE))
        self.rates = {k: float(v) for k, v in rates.items()}
        self.clock = clock
        self._buckets: dict[tuple[str, str], list[float]] = {}
        self._prune_at = _PRUNE_AT

    def rate(self, operation: str) -> float:
        return self.rates.get(operation, self.default)

    def wait(self, client: str, operation: str, *, charge: bool = True) -> float:
        """0 when the request is admitted (and counted), else seconds until it would be.
        With `charge=False` nothing is counted: whether a request would be admitted."""
        rate = self.rates.get(operation, self.default)
        now = self.clock()
        key = (client, operation)
        bucket = self._buckets.get(key)
        if not charge:
            if bucket is None:
                return 0.0
            tokens = min(rate, bucket[0] + max(0.0, now - bucket[1]) * rate)
            return 0.0 if tokens >= 1.0 else (1.0 - tokens) / rate
        if bucket is None:
            if len(self._buckets) >= self._prune_at:
                self._prune(now)
            self._buckets[key] = [rate - 1.0, now]
            return 0.0
        tokens = min(rate, bucket[0] + max(0.0, now - bucket[1]) * rate)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return 0.0
        bucket[0] = tokens
        return (1.0 - tokens) / rate

    def check(self, client: str, operation: str, *, charge: bool = True) -> None:
        """Raise a 429 when `client` is over the limit of `operation` (see `wait`)."""
        wait = self.wait(client, operation, charge=charge)
        if wait:
            rate = self.rate(operation)
            who = "address" if client.startswith("peer:") else "client"
            raise HTTPException(
                429,
                f"rate limit exceeded: at most {rate:g} requests per second to {operation}"
                f" per {who}; retry after {wait:.3f} s",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )

    def _prune(self, now: float) -> None:
        """Forget buckets that have refilled: they hold no information."""
        self._buckets = {
            key: bucket
            for key, bucket in self._buckets.items()
            if bucket[0] + (now - bucket[1]) * self.rates.get(key[1], self.default)
            < self.rates.get(key[1], self.default)
        }
        self._prune_at = max(_PRUNE_AT, 2 * len(self._buckets))


def operation_of(request: Request) -> str:
    route = request.scope.get("route")
    return getattr(route, "operation_id", None) or getattr(route, "name", None) or "unknown"


def peer_of(request: Request) -> str:
    """The limiter's key of the caller's address."""
    return f"peer:{request.client.host if request.client else 'unknown'}"


def client_of(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token:
        client = request.app.state.tokens.signed_client(token.strip())
        if client is not None:
            return f"client:{client}"
    return peer_of(request)


async def rate_limit(request: Request) -> None:
    """App-wide dependency: every route passes through the limiter before its own work."""
    limiter: RateLimiter | None = request.app.state.limiter
    if limiter is None:
        return
    operation = operation_of(request)
    if operation in SELF_LIMITED:
        return
    limiter.check(client_of(request), operation)
