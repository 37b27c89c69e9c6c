"""One market's book of resting orders: price-time priority on integer ticks.

Prices are integer ticks and quantities integer base units (1e-8), so the hot path
never touches `Decimal`. Each side is a `SortedDict` of price levels; a level is a FIFO
queue with lazy deletion: a cancel marks the order dead and fixes the level's totals
in O(1), and dead entries are skipped (or compacted away) later. The queue is a plain
list while it is short (a million resting orders may mean hundreds of thousands of
levels, and an empty `deque` alone costs 600 bytes) and becomes a `deque` past `LONG`
entries, where taking filled heads off a list would move the whole rest of it. The book is a
projection: only appliers change it, so a replayed log rebuilds it exactly.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Protocol

from sortedcontainers import SortedDict

BUY = 0
SELL = 1
LONG = 64


class Resting(Protocol):
    """What the book needs of an order (sandex.engine.domain.trading.order.Order has these slots)."""

    id: str
    side: int
    ticks: int
    remaining: int
    live: bool
    customer_id: str
    smp_id: str | None


class Level:
    __slots__ = ("ticks", "queue", "total", "count")

    def __init__(self, ticks: int) -> None:
        self.ticks = ticks
        self.queue: list[Resting] | deque[Resting] = []
        self.total = 0  # live base units at this price
        self.count = 0  # live orders at this price

    def live(self) -> Iterator[Resting]:
        for order in self.queue:
            if order.live:
                yield order


class Book:
    """Bids keyed by -ticks and asks by ticks, so the best level of each side is first.

    The first key of each side is also kept aside (None for an empty side): every order
    asks for the best prices several times, and a SortedDict's first item is not cheap."""

    __slots__ = ("bids", "asks", "first")

    def __init__(self) -> None:
        self.bids: SortedDict = SortedDict()
        self.asks: SortedDict = SortedDict()
        self.first: list[int | None] = [None, None]  # per side: the key of its best level

    def _new_level(self, side: int, levels: SortedDict, key: int, ticks: int) -> Level:
        level = levels[key] = Level(ticks)
        first = self.first[side]
        if first is None or key < first:
            self.first[side] = key
        return level

    def _drop_level(self, side: int, levels: SortedDict, key: int) -> None:
        del levels[key]
        if self.first[side] == key:
            self.first[side] = levels.peekitem(0)[0] if levels else None

    def side(self, side: int) -> SortedDict:
        return self.bids if side == BUY else self.asks

    def add(self, order: Resting) -> None:
        side = order.side
        levels = self.bids if side == BUY else self.asks
        key = -order.ticks if side == BUY else order.ticks
        level = levels.get(key)
        if level is None:
            level = self._new_level(side, levels, key, order.ticks)
            level.queue.append(order)
            level.total = order.remaining  # the order's int, not a copy of it
            level.count = 1
            order.live = True
            return
        queue = level.queue
        queue.append(order)
        if len(queue) == LONG and type(queue) is list:
            level.queue = deque(queue)
        level.total += order.remaining
        level.count += 1
        order.live = True

    def remove(self, order: Resting) -> None:
        """Take a live order out (cancel, expiry, self-match)."""
        side = order.side
        levels = self.bids if side == BUY else self.asks
        key = -order.ticks if side == BUY else order.ticks
        level = levels[key]
        order.live = False
        level.total -= order.remaining
        level.count -= 1
        if level.count == 0:
            self._drop_level(side, levels, key)
        elif len(level.queue) > 2 * level.count + 16:
            live = [o for o in level.queue if o.live]
            level.queue = deque(live) if len(live) >= LONG else live

    def fill(self, order: Resting, qty: int) -> None:
        """Reduce a live order by `qty` units; a filled order leaves the book."""
        side = order.side
        levels = self.bids if side == BUY else self.asks
        key = -order.ticks if side == BUY else order.ticks
        level = levels[key]
        order.remaining -= qty
        level.total -= qty
        if order.remaining == 0:
            order.live = False
            level.count -= 1
            if level.count == 0:
                self._drop_level(side, levels, key)
                return
            queue = level.queue
            if type(queue) is list:
                dead = 0
                for o in queue:
                    if o.live:
                        break
                    dead += 1
                del queue[:dead]
            else:
                while queue and not queue[0].live:
                    queue.popleft()

    def best_bid(self) -> int | None:
        key = self.first[BUY]
        return None if key is None else -key

    def best_ask(self) -> int | None:
        return self.first[SELL]

    def levels(self, side: int) -> Iterator[Level]:
        """Levels of a side, best first."""
        return iter((self.bids if side == BUY else self.asks).values())

    def __len__(self) -> int:
        return sum(level.count for level in self.bids.values()) + sum(
            level.count for level in self.asks.values()
        )
