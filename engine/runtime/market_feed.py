"""The market data feeds' hub: books and trades published from the writer, in commit
order, to subscribers that never make the writer wait (docs/market-data.md).

The writer thread calls `collect` once per group, after deciding it: for each market a
subscriber follows it computes the book as the order-book view shows it and diffs it with
the book it computed last, and takes the group's trades. The changes ride with the group
and are `publish`ed once its COMMIT returned, before its callers are answered, so every
subscriber sees exactly what the log holds, group after group, in log order. A new
subscriber is claimed by the next group's `collect` (the connection submits a `Tick` so
that one comes) and gets its snapshot in that group's publication, after the group's own
changes: what it holds is the book at that group's end, a position of the log, and every
later change follows, none missed, none twice.

A subscriber is a bounded queue: publication appends encoded messages under a lock and
wakes the connection; a queue that would overflow is emptied and closed with a code, so
a slow or stuck client costs memory up to its limit and never stalls the writer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import orjson

from sandex.engine.config.settings import Settings
from sandex.engine.domain.trading.market_feed import (
    Levels,
    books_now,
    last_trade,
    step_at,
    trades_in,
)
from sandex.engine.domain.trading.order import SIDES
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.state import State

BOOK = "book"
TRADES = "trades"
# WebSocket close codes the connection sends for the feed's reasons.
TOO_SLOW = 1008  # policy violation: the client did not keep up with its queue
RESTARTED = 1012  # service restart: the state reloaded before the snapshot was taken

_SIDES = tuple(SIDES.items())


class Subscriber:
    """One connection's queue of encoded messages: filled by publication (the committer's
    thread), emptied by the connection (its event loop). Never blocks the filler."""

    __slots__ = (
        "kind",
        "markets",
        "wanted",
        "limit",
        "ready",
        "pushed",
        "_wake",
        "_lock",
        "_items",
        "_end",
    )

    def __init__(
        self, kind: str, markets: Sequence[str], limit: int, wake: Callable[[], None]
    ) -> None:
        """`kind`: BOOK or TRADES; `limit`: the most messages held unsent; `wake` is
        called (from any thread) after messages or the end were queued."""
        self.kind = kind
        self.markets = tuple(markets)
        self.wanted = frozenset(markets)
        self.limit = limit
        self.ready = False  # its first messages were sent; updates follow
        self.pushed = 0  # messages queued in all, sent or not
        self._wake = wake
        self._lock = threading.Lock()
        self._items: list[str] = []
        self._end: tuple[int, str] | None = None

    def push(self, items: list[str]) -> bool:
        """Queue `items`; False (and the queue emptied and ended) when they overflow it."""
        with self._lock:
            if self._end is not None:
                return False
            if len(self._items) + len(items) > self.limit:
                self._items = []
                self._end = (TOO_SLOW, f"too slow: more than {self.limit} messages unread")
                overflowed = True
            else:
                self._items.extend(items)
                self.pushed += len(items)
                overflowed = False
        self._wake()
        return not overflowed

    def end(self, code: int, reason: str) -> None:
        with self._lock:
            if self._end is None:
                self._end = (code, reason)
        self._wake()

    def take(self) -> tuple[list[str], tuple[int, str] | None]:
        """The messages queued since the last call, and why the feed ended it (None)."""
        with self._lock:
            items, self._items = self._items, []
            return items, self._end


@dataclass
class Changes:
    """What one group changed in the followed markets, computed on the writer thread."""

    claimed: list[Subscriber]
    baselines: dict[str, tuple[Levels, Levels]] = field(default_factory=dict)
    diffs: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    last_trades: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    trades: list[dict[str, Any]] = field(default_factory=list)
    unfollowed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(
            self.claimed
            or self.baselines
            or self.diffs
            or self.dropped
            or self.last_trades
            or self.trades
            or self.unfollowed
        )


def _encode(message: dict[str, Any]) -> str:
    return orjson.dumps(message).decode()


def _diff(old: tuple[Levels, Levels], new: tuple[Levels, Levels]) -> list[tuple[str, str, str]]:
    """(side, price, amount) of every level that differs, "0" for one that left."""
    out = []
    for side, i in _SIDES:
        before, after = old[i], new[i]
        for price, amount in after.items():
            if before.get(price) != amount:
                out.append((side, price, amount))
        for price in before:
            if price not in after:
                out.append((side, price, "0"))
    return out


def _snapshot(market: str, book: tuple[Levels, Levels]) -> dict[str, Any]:
    bids = sorted(book[0].items(), key=lambda level: Decimal(level[0]), reverse=True)
    asks = sorted(book[1].items(), key=lambda level: Decimal(level[0]))
    return {
        "type": "SNAPSHOT",
        "market": market,
        "bids": [{"price": p, "amount": a} for p, a in bids],
        "asks": [{"price": p, "amount": a} for p, a in asks],
        "final_snapshot": True,
    }


def _update(market: str, side: str, price: str, amount: str) -> dict[str, Any]:
    return {"type": "UPDATE", "market": market, "side": side, "price": price, "amount": amount}


class MarketFeed:
    def __init__(self, settings: Settings, seed: int) -> None:
        self._settings = settings
        self._seed = seed
        self._lock = threading.Lock()
        self._subs: set[Subscriber] = set()  # claimed by a group (ready or not yet)
        self._pending: list[Subscriber] = []  # waiting for the next group
        # Published: each followed market's book and last trade as the last published
        # group left them (publication's own: it runs on one thread at a time).
        self._books: dict[str, tuple[Levels, Levels]] = {}
        self._last: dict[str, dict[str, Any] | None] = {}
        # The writer thread's own: what it computed last, and at which step of time.
        self._w_books: dict[str, tuple[Levels, Levels]] = {}
        self._w_trades: set[str] = set()
        self._w_step: int | None = None

    # -- connections (any thread) -------------------------------------------------------

    def subscribe(self, sub: Subscriber) -> bool:
        """`sub` gets its first messages in the publication of the next group decided.
        True when the caller should ask the writer for a group (a `Tick`): none was
        asked for since the last group took the waiting subscribers, so however fast
        connections open, they cost the writer one group per group at most."""
        with self._lock:
            self._pending.append(sub)
            return len(self._pending) == 1

    def unsubscribe(self, sub: Subscriber) -> None:
        with self._lock:
            self._subs.discard(sub)
            if sub in self._pending:
                self._pending.remove(sub)

    def end_all(self, code: int, reason: str) -> None:
        """End every connection with `code` (its sandbox is going away)."""
        with self._lock:
            subs = [*self._subs, *self._pending]
            self._subs.clear()
            self._pending.clear()
        for sub in subs:
            sub.end(code, reason)

    def subscribers(self) -> int:
        with self._lock:
            return len(self._subs) + len(self._pending)

    def waiting(self) -> int:
        """Subscribers not yet given their first messages (a replay waits for none)."""
        with self._lock:
            return len(self._pending) + sum(1 for sub in self._subs if not sub.ready)

    def pushed(self) -> int:
        """Messages queued to the current subscribers in all: once their clients have
        received this many, they hold everything published so far (how a replay knows
        no message is still on its way, docs/scenarios.md)."""
        with self._lock:
            return sum(sub.pushed for sub in (*self._subs, *self._pending))

    # -- the writer thread ----------------------------------------------------------------

    def collect(self, state: State, now: datetime, events: Iterable[Event]) -> Changes | None:
        """What this group changed for the subscribers, None when nobody follows."""
        if not (self._subs or self._pending or self._w_books or self._w_trades):
            return None
        with self._lock:
            claimed, self._pending = self._pending, []
            self._subs.update(claimed)
            books: set[str] = set()
            trades: set[str] = set()
            for sub in self._subs:
                (books if sub.kind == BOOK else trades).update(sub.markets)
        changes = Changes(claimed)
        w_books = self._w_books
        for market in [m for m in w_books if m not in books]:
            del w_books[market]
            changes.dropped.append(market)
        # With no event and no new step of time, no book can have changed.
        step = step_at(state, self._settings, self._seed, now)
        moved = step != self._w_step
        self._w_step = step
        events = list(events)
        if books and (events or moved or not books <= w_books.keys()):
            settings, seed = self._settings, self._seed
            for market, book in books_now(state, settings, seed, now, sorted(books)).items():
                old = w_books.get(market)
                if old is None:
                    changes.baselines[market] = book
                else:
                    diff = _diff(old, book)
                    if diff:
                        changes.diffs[market] = diff
                w_books[market] = book
        w_trades = self._w_trades
        for market in [m for m in w_trades if m not in trades]:
            w_trades.discard(market)
            changes.unfollowed.append(market)
        followed = frozenset(m for m in trades if m in w_trades)
        if followed and events:
            changes.trades = trades_in(events, followed)
        for market in trades - w_trades:
            changes.last_trades[market] = last_trade(state, self._settings, self._seed, market)
            w_trades.add(market)
        return changes if changes else None

    def reset(self) -> None:
        """The writer's state was reloaded from the log: compute every book afresh next
        group (publication sends what differs from what subscribers hold); a subscriber
        whose snapshot was to come from a group that was not committed is ended."""
        self._w_books.clear()
        self._w_trades.clear()
        self._w_step = None
        with self._lock:
            for sub in [s for s in self._subs if not s.ready]:
                self._subs.discard(sub)
                sub.end(RESTARTED, "the sandbox reloaded its state; connect again")

    # -- publication (after the group's COMMIT, in commit order) --------------------------

    def publish(self, changes: Changes) -> None:
        """Publication runs on one thread at a time, in commit order (the committer, or
        the writer once the group before is committed): the published books are its
        own. The lock is held only to read and change who subscribes."""
        for market in changes.dropped:
            self._books.pop(market, None)
        for market in changes.unfollowed:
            self._last.pop(market, None)
        books: list[tuple[str, str]] = []  # (market, encoded UPDATE) for ready subs
        for market, book in changes.baselines.items():
            old = self._books.get(market)
            if old is not None:
                books += [(market, _encode(_update(market, *d))) for d in _diff(old, book)]
            self._books[market] = book
        for market, diff in changes.diffs.items():
            self._books[market] = _applied(self._books[market], diff)
            books += [(market, _encode(_update(market, *d))) for d in diff]
        trades: list[tuple[str, str]] = []  # in log order
        for message in changes.trades:
            trades.append((message["market"], _encode(message)))
            self._last[message["market"]] = message
        self._last.update(changes.last_trades)
        with self._lock:
            ready = [sub for sub in self._subs if sub.ready]
            claimed = [sub for sub in changes.claimed if sub in self._subs]
        ended = []
        if books or trades:
            for sub in ready:
                wanted = sub.wanted
                items = [t for m, t in (books if sub.kind == BOOK else trades) if m in wanted]
                if items and not sub.push(items):
                    ended.append(sub)
        snapshots: dict[str, str] = {}
        for sub in claimed:
            if sub.kind == BOOK:
                first = []
                for m in sub.markets:
                    if m not in snapshots:
                        snapshots[m] = _encode(_snapshot(m, self._books[m]))
                    first.append(snapshots[m])
            else:
                first = [_encode(t) for m in sub.markets if (t := self._last.get(m))]
            sub.ready = True
            if not sub.push(first):
                ended.append(sub)
        if ended:
            with self._lock:
                self._subs.difference_update(ended)


def _applied(
    book: tuple[Levels, Levels], diff: list[tuple[str, str, str]]
) -> tuple[Levels, Levels]:
    bids, asks = dict(book[0]), dict(book[1])
    for side, price, amount in diff:
        levels = bids if side == "BUY" else asks
        if amount == "0":
            levels.pop(price, None)
        else:
            levels[price] = amount
    return bids, asks


__all__ = ["BOOK", "TRADES", "Changes", "MarketFeed", "Subscriber"]
