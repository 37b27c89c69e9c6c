"""A world's recent requests (`GET /v2/sandbox/requests`): what a person looks at first
when a test fails.

The access log (`logging.RequestLog`, the one ASGI layer around each world's app) hands
every answered request to its world's `RecentRequests`: its operation and caller from
the request pipeline's state, the problem type its answer carried, the fault rule that
fired, the log positions of the events its commands committed (`writer_bridge.CAUSED`)
and its duration. No body and no header is kept, so no secret is: a token request is
kept as its method, path and status.

It lives in memory, beside the world's app (a world's own, dropped with it), bounded:
`request_log_size` entries, the oldest dropped first. Entries are numbered from 1 in
the order they were answered, and kept in that order, all of them in one deque and each
caller's again in its own, so that a page, newest first, starts with a bisection by
number and the next page's cursor seals a number: keyset paging that new requests
never shift. Recording costs an object and two appends, no I/O. It is not the event log: it
does not survive a restart, an unload of the world, nor a replay (the faults that fire
are events of the log themselves).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any

from sandex.api_adapter.pipeline import FIRED, OPERATION, PASSED, Passage, authorization_of
from sandex.api_adapter.responses import PROBLEM_TYPE
from sandex.engine.kernel.clock import Clock
from sandex.engine.kernel.errors import Invalid

# The ASGI state key of the caller of a request that asks no token, where its handler
# learnt it: (customer id, client id) of a token issued.
CALLER = "sandex.caller"
# The operation whose own requests are not kept: reading the list does not change it.
LISTING = "ListSandboxRequests"
# The most characters of a path an entry keeps: a long URL (up to `max_url_bytes`) held
# a hundred thousand times over would be the server's memory, not a record.
MAX_PATH = 1024
# The classes of status a `status` filter may name besides a status ("4xx").
_CLASSES = {f"{digit}xx": (digit * 100, digit * 100 + 99) for digit in range(1, 6)}


class Entry:
    """One answered request."""

    __slots__ = (
        "id",
        "at",
        "method",
        "path",
        "operation",
        "status",
        "problem_type",
        "fault",
        "caused",
        "ms",
        "request_id",
        "client_id",
        "customer_id",
    )

    def __init__(
        self,
        id: int,
        at: datetime,
        method: str,
        path: str,
        operation: str | None,
        status: int,
        problem_type: str | None,
        fault: dict[str, Any] | None,
        caused: Sequence[tuple[int, int]],
        ms: float,
        request_id: str,
        client_id: str | None,
        customer_id: str | None,
    ) -> None:
        self.id = id
        self.at = at
        self.method = method
        self.path = path
        self.operation = operation
        self.status = status
        self.problem_type = problem_type
        self.fault = fault
        self.caused = caused
        self.ms = ms
        self.request_id = request_id
        self.client_id = client_id
        self.customer_id = customer_id


@dataclass(frozen=True, slots=True)
class Filters:
    """What a page keeps: an operationId, a range of statuses."""

    operation: str | None = None
    statuses: tuple[int, int] | None = None

    def keeps(self, entry: Entry) -> bool:
        if self.operation is not None and entry.operation != self.operation:
            return False
        if self.statuses is not None:
            low, high = self.statuses
            return low <= entry.status <= high
        return True


def statuses_of(text: str | None) -> tuple[int, int] | None:
    """The statuses a `status` filter names: one (`404`) or a class (`4xx`)."""
    if text is None:
        return None
    known = _CLASSES.get(text.lower())
    if known is not None:
        return known
    if text.isascii() and text.isdigit() and len(text) == 3 and 100 <= int(text) <= 599:
        return int(text), int(text)
    raise Invalid("status invalid: must be a status (100 to 599) or a class (4xx)", field="status")


# What most requests caused, shared rather than an empty list each.
_NOTHING: tuple[tuple[int, int], ...] = ()


def _id_of(entry: Entry) -> int:
    return entry.id


class RecentRequests:
    """One world's recent requests, newest last; `size` 0 keeps none."""

    def __init__(
        self, size: int, clock: Clock, identify: Callable[[str], tuple[str, str] | None]
    ) -> None:
        """`identify`: the caller (customer id, client id) an Authorization header names,
        if any, asked only of a request no operation served (a wrong path)."""
        self.size = size
        self.clock = clock
        self.identify = identify
        self.last_id = 0
        self._all: deque[Entry] = deque()
        self._by_customer: dict[str, deque[Entry]] = {}

    def __len__(self) -> int:
        return len(self._all)

    def record(
        self,
        scope: MutableMapping[str, Any],
        state: dict[str, Any],
        status: int,
        at: datetime,
        ms: float,
        caused: list[tuple[int, int]],
    ) -> None:
        """Keep a request just answered with `status`: `at` the engine time it arrived,
        `ms` how long it took, `caused` its commands' log positions."""
        if not self.size:
            return
        op = state.get(OPERATION)
        operation = None if op is None else op.id
        if operation == LISTING:
            return
        passage: Passage | None = state.get(PASSED)
        principal = None if passage is None else passage.principal
        customer: tuple[str, str] | None
        if principal is not None:
            customer = principal.customer_id, principal.client_id
        elif op is None:
            authorization = authorization_of(scope)
            customer = self.identify(authorization) if authorization else None
        else:
            customer = state.get(CALLER)
        entry = Entry(
            self.last_id + 1,
            at,
            scope["method"],
            (scope.get("root_path", "") + scope["path"])[:MAX_PATH],
            operation,
            status,
            state.get(PROBLEM_TYPE),
            _fault(state.get(FIRED)),
            caused or _NOTHING,
            ms,
            state.get("request_id", ""),
            None if customer is None else customer[1],
            None if customer is None else customer[0],
        )
        self.add(entry)

    def add(self, entry: Entry) -> None:
        """Append `entry` (numbered after the last), dropping the oldest past `size`."""
        self.last_id = entry.id
        kept = self._all
        if len(kept) >= self.size:
            old = kept.popleft()
            if old.customer_id is not None:
                theirs = self._by_customer[old.customer_id]
                theirs.popleft()  # the oldest of all is the oldest of its caller's
                if not theirs:
                    del self._by_customer[old.customer_id]
        kept.append(entry)
        if entry.customer_id is not None:
            own = self._by_customer.get(entry.customer_id)
            if own is None:
                own = self._by_customer[entry.customer_id] = deque()
            own.append(entry)

    def page(
        self, customer_id: str | None, before: int | None, limit: int, filters: Filters
    ) -> tuple[list[Entry], bool]:
        """Up to `limit` entries numbered below `before` (None: from the newest), newest
        first, of `customer_id` (None: everyone's), kept by `filters`; and whether more
        follow."""
        source = self._all if customer_id is None else self._by_customer.get(customer_id, ())
        if not source:
            return [], False
        end = len(source) if before is None else bisect.bisect_left(source, before, key=_id_of)
        newest_first: Iterator[Entry] = islice(reversed(source), len(source) - end, None)
        found: list[Entry] = []
        for entry in newest_first:
            if filters.keeps(entry):
                if len(found) == limit:
                    return found, True
                found.append(entry)
        return found, False


def _fault(fired: dict[str, Any] | None) -> dict[str, Any] | None:
    """What fired, without the fields it left empty (a rule's has no template)."""
    if fired is None:
        return None
    return {name: value for name, value in fired.items() if value is not None}
