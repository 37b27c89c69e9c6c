"""Rate limits as the real service states them: per endpoint family and client address,
an average rate over a five-minute window, and five minutes of refusals once over.

The operations of one row of the real service's table of limits form a family and share
one budget per address: `rate × 300 s` requests. A family's budget refills continuously
at its rate (a GCRA: one float per family and address, the time at which the budget
would be whole again), so an address may spend the whole five-minute budget in a burst
and then keeps to the rate on average. The request that would go over it is answered
429, and from then on every request of that family from that address is answered 429
until the penalty ends, five minutes later (by then the budget has refilled). Requests
refused while throttled are not counted and do not extend the penalty.

Every answer to an admitted request carries the family's budget in the IETF draft's
`RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds until the budget is
whole again) and `RateLimit-Policy` (`budget;w=window`); a 429 adds `Retry-After` (seconds
until the penalty ends).

The address is the peer's IP address (IPv6: its /64, the block one host is given);
forwarding headers are not trusted. Token requests are a family like any other, and a
failed one (unknown client, wrong secret, revoked client) is charged besides to a
stricter family of its address, `token-failures`, checked before the deliberately slow
secret check (`issue_token`): a flood of wrong secrets throttles the flooding
address and never the client it names.

Per request: two dictionary look-ups and a few float operations. Entries that hold no
information (a whole budget, no penalty) are dropped whenever the table doubles, so
many distinct addresses cost memory only while their budgets refill.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple, NoReturn

from starlette.exceptions import HTTPException

from sandex.api_adapter.operations import OPERATIONS, READS, WRITES

# The real service averages each limit over five minutes and throttles an address that
# goes over for five minutes.
WINDOW_SECONDS = 300.0
PENALTY_SECONDS = 300.0

# Average requests per second per address, by family (the real service's figures); every
# other family DEFAULT_RATE.
DEFAULT_RATE = 50.0
RATES: dict[str, float] = {
    "transfers": 20.0,
    "market-data": 10.0,
    "token": 1.0,
    # sandex's own, which the real service has not: a burst may make as many worlds as
    # a server keeps by default (`max_worlds`), then one every 200 ms (docs/worlds.md)
    "worlds": 5.0,
}
# Each operation's family, from its row in the operation table: the operations of one row
# of the real service's table of limits share a budget; every other operation is a read
# (GET) or a write (any other method) of its address.
FAMILIES: dict[str, str] = {op.id: op.family for op in OPERATIONS}
# Failed token requests of an address, besides their charge to `token`: 0.1/s, so 30
# failures in five minutes, then the address is refused token requests for five minutes.
TOKEN_FAILURES = "token-failures"
TOKEN_FAILURE_RATE = 0.1
_WHAT = {
    "token": "token requests",
    TOKEN_FAILURES: "failed token requests",
    "orders": "order placements and cancellations",
    "transfers": "crypto withdrawals and internal transfers",
    "market-data": "order book and recent executions requests",
    "worlds": "world creations",
    READS: "reads",
    WRITES: "writes",
}
_REFUSED = {TOKEN_FAILURES: "token requests"}
_PRUNE_AT = 65_536
_SLACK = 1e-6  # seconds: float sums of intervals must not refuse a request due


@dataclass(frozen=True, slots=True)
class Family:
    name: str
    rate: float  # requests per second on average
    budget: int  # requests an address may send in one burst: rate × window, at least 1
    interval: float  # seconds one request takes to refill
    horizon: float  # budget × interval: the most an address may be ahead of the rate
    constant: tuple[tuple[bytes, bytes], ...]  # RateLimit-Limit, RateLimit-Policy


class Verdict(NamedTuple):
    family: Family
    remaining: int  # requests the address may still send at once
    reset: float  # seconds until the whole budget is back, or until the penalty ends
    retry_after: float  # 0.0 when the request is admitted

    def headers(self) -> list[tuple[bytes, bytes]]:
        return [
            *self.family.constant,
            (b"ratelimit-remaining", b"%d" % self.remaining),
            (b"ratelimit-reset", b"%d" % math.ceil(self.reset - _SLACK)),
        ]


class RateLimiter:
    """`overrides` (the `rate_limits` setting): requests per second by family name, by
    operation id (that operation gets a budget of its own), or `default` (the families
    without a figure of the real service's: orders, reads, writes)."""

    def __init__(
        self,
        overrides: Mapping[str, float] | None = None,
        clock: Callable[[], float] = time.monotonic,
        *,
        window: float = WINDOW_SECONDS,
        penalty: float = PENALTY_SECONDS,
        prune_at: int = _PRUNE_AT,
    ) -> None:
        given = dict(overrides or {})
        self.default = float(given.pop("default", DEFAULT_RATE))
        self.window = window
        self.penalty = penalty
        self.clock = clock
        rates = {TOKEN_FAILURES: TOKEN_FAILURE_RATE}
        rates.update(RATES)
        families = {*FAMILIES.values(), READS, WRITES, TOKEN_FAILURES}
        own = {}  # operations with a budget of their own
        for name, rate in given.items():
            rates[name] = rate
            if name not in families:
                own[name] = name
        self._own = own
        self._rates = rates
        self._families: dict[str, Family] = {}
        self._of: dict[tuple[str, bool], Family] = {}  # (operation, is a read) -> family
        # (family, address) -> [the time the budget is whole again, the penalty's end]
        self._entries: dict[tuple[str, str], list[float]] = {}
        self._base_prune_at = prune_at
        self._prune_at = prune_at

    # -- families --

    def family(self, name: str) -> Family:
        family = self._families.get(name)
        if family is None:
            rate = float(self._rates.get(name, self.default))
            budget = max(1, round(rate * self.window))
            interval = 1.0 / rate
            constant = (
                (b"ratelimit-limit", b"%d" % budget),
                (b"ratelimit-policy", f"{budget};w={self.window:g}".encode()),
            )
            family = Family(name, rate, budget, interval, budget * interval, constant)
            self._families[name] = family
        return family

    def family_of(self, operation: str, method: str = "GET") -> Family:
        read = method in ("GET", "HEAD")
        family = self._of.get((operation, read))
        if family is None:
            name = (
                self._own.get(operation) or FAMILIES.get(operation) or (READS if read else WRITES)
            )
            family = self._of[operation, read] = self.family(name)
        return family

    def rate(self, operation: str, method: str = "GET") -> float:
        return self.family_of(operation, method).rate

    # -- budgets --

    def take(self, address: str, family: Family) -> Verdict:
        """Charge one request of `family` to `address`: admitted (`retry_after` 0), or
        refused, and the address throttled for the penalty if it was not already."""
        now = self.clock()
        key = (family.name, address)
        entry = self._entries.get(key)
        if entry is None:
            if len(self._entries) >= self._prune_at:
                self._prune(now)
            due = now + family.interval
            self._entries[key] = [due, 0.0]
            return Verdict(family, family.budget - 1, family.interval, 0.0)
        whole, until = entry
        if until > now:
            return Verdict(family, 0, until - now, until - now)
        due = (whole if whole > now else now) + family.interval
        if due - now > family.horizon + _SLACK:
            entry[1] = now + self.penalty
            return Verdict(family, 0, self.penalty, self.penalty)
        entry[0] = due
        remaining = int((family.horizon - (due - now)) / family.interval + _SLACK)
        return Verdict(family, remaining, due - now, 0.0)

    def throttled(self, address: str, family: Family) -> Verdict | None:
        """The refusal of a throttled address, without charging anything; else None."""
        entry = self._entries.get((family.name, address))
        if entry is not None:
            left = entry[1] - self.clock()
            if left > 0:
                return Verdict(family, 0, left, left)
        return None

    def _prune(self, now: float) -> None:
        """Forget the entries whose budget is whole and whose penalty is over: a new
        entry would say the same. Amortized: the table is scanned when it doubles."""
        self._entries = {
            key: entry for key, entry in self._entries.items() if entry[0] > now or entry[1] > now
        }
        self._prune_at = max(self._base_prune_at, 2 * len(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    # -- requests --

    def admit(self, scope: MutableMapping[str, Any], operation: str, method: str) -> None:
        """Charge a request (an ASGI scope) to its address: the limit headers noted for
        its answer, or a 429 raised."""
        verdict = self.take(address_of(scope), self.family_of(operation, method))
        if verdict.retry_after:
            self.refuse(scope, verdict)
        note(scope, verdict)

    def charge(self, scope: MutableMapping[str, Any], name: str) -> None:
        """Charge a request to the budget of family `name` besides its own: a 429 raised
        when it goes over (the answer keeps the headers of its own family otherwise)."""
        verdict = self.take(address_of(scope), self.family(name))
        if verdict.retry_after:
            self.refuse(scope, verdict)

    def hold(self, scope: MutableMapping[str, Any], name: str) -> None:
        """A 429 raised when the request's address is throttled for family `name`;
        nothing is charged."""
        verdict = self.throttled(address_of(scope), self.family(name))
        if verdict is not None:
            self.refuse(scope, verdict)

    def refuse(self, scope: MutableMapping[str, Any], verdict: Verdict) -> NoReturn:
        note(scope, verdict)
        family = verdict.family
        what = _WHAT.get(family.name, f"{family.name} requests")
        refused = _REFUSED.get(family.name, what)
        wait = max(1, math.ceil(verdict.retry_after - _SLACK))
        raise HTTPException(
            429,
            f"rate limit exceeded: {what} average at most {family.rate:g} per second per"
            f" address over {self.window:g} s ({family.budget} requests); this address went"
            f" over and is refused {refused} for {wait} s more",
            headers={"Retry-After": str(wait)},
        )


def note(scope: MutableMapping[str, Any], verdict: Verdict) -> None:
    """Have the request log middleware add `verdict`'s headers to the answer."""
    scope.setdefault("state", {})["response_headers"] = verdict.headers()


def address_of(scope: Mapping[str, Any]) -> str:
    """The limiter's key of the peer: its IP address, an IPv6 address's /64."""
    client = scope.get("client")
    host: str = client[0] if client else "unknown"
    return _ipv6_block(host) if ":" in host else host


@lru_cache(maxsize=4096)
def _ipv6_block(host: str) -> str:
    try:
        address = ipaddress.IPv6Address(host)
    except ValueError:
        return host
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return f"{ipaddress.IPv6Address(int(address) >> 64 << 64)}/64"
