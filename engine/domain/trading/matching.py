"""Matching: what an incoming order would do against a book and the synthetic ladder.

`plan` only reads. It walks the opposite side in price-time priority, merging real
resting orders with the house's ladder levels (real orders first at an equal price),
and answers the steps the decision then records as events: fills at the resting price,
and resting orders of the same customer cancelled instead of matched (self-match
prevention). Everything is integer: prices in ticks, quantities in base units, a market
buy's budget in "notional units" (ticks x base units).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sandex.engine.domain.trading.book import BUY, Book, Resting

INF = 1 << 62


@dataclass(slots=True)
class Plan:
    # (maker order or None for the house, price ticks, base units); units 0 = cancel the
    # maker (self-match prevention) instead of trading with it.
    steps: list[tuple[Resting | None, int, int]] = field(default_factory=list)
    filled: int = 0  # base units
    spent: int = 0  # notional units: sum of ticks x units
    # A market buy's budget could not pay for one more unit (as good as filled).
    exhausted: bool = False
    # House levels taken, per price: (ticks, units), for the ladder's consumption.
    house: list[tuple[int, int]] = field(default_factory=list)


def self_match(resting: Resting, customer_id: str, smp_id: str | None) -> bool:
    """Two orders of one customer never trade, unless both carry different SMP ids."""
    if resting.customer_id != customer_id:
        return False
    return not (smp_id and resting.smp_id and smp_id != resting.smp_id)


def plan(
    book: Book,
    side: int,
    limit: int | None,
    qty: int | None,
    budget: int | None,
    ladder: list[list[int]],
    customer_id: str,
    smp_id: str | None,
) -> Plan:
    """Walk the side opposite to `side` up to `limit` ticks (None: any price).

    Exactly one of `qty` (base units) and `budget` (notional units, a market buy by quote
    amount) is given. `ladder` holds the house's levels on the opposite side, best first,
    as [ticks, units still available]."""
    result = Plan()
    steps = result.steps
    house = result.house
    buy = side == BUY
    levels = iter((book.asks if buy else book.bids).values())
    level = next(levels, None)
    li = 0
    n_ladder = len(ladder)
    left = qty if qty is not None else INF
    money = budget if budget is not None else INF
    filled = 0
    spent = 0
    while left > 0 and money > 0:
        real = level.ticks if level is not None else None
        synth = ladder[li][0] if li < n_ladder else None
        if real is None and synth is None:
            break
        if buy:
            use_real = synth is None or (real is not None and real <= synth)
        else:
            use_real = synth is None or (real is not None and real >= synth)
        price = real if use_real else synth
        assert price is not None
        if limit is not None and (price > limit if buy else price < limit):
            break
        if use_real:
            assert level is not None
            for order in level.queue:
                if not order.live:
                    continue
                if self_match(order, customer_id, smp_id):
                    steps.append((order, price, 0))
                    continue
                take = order.remaining if order.remaining < left else left
                if budget is not None:
                    affordable = money // price
                    if affordable < take:
                        take = affordable
                    if take == 0:
                        result.exhausted = True
                        money = 0
                        break
                steps.append((order, price, take))
                filled += take
                spent += take * price
                left -= take
                money -= take * price
                if left == 0 or money == 0:
                    break
            level = next(levels, None)
        else:
            avail = ladder[li][1]
            take = avail if avail < left else left
            if budget is not None:
                affordable = money // price
                if affordable < take:
                    take = affordable
                if take == 0 and avail > 0:
                    result.exhausted = True
                    break
            if take > 0:
                steps.append((None, price, take))
                house.append((price, take))
                filled += take
                spent += take * price
                left -= take
                money -= take * price
            li += 1
    if budget is not None and money == 0:
        result.exhausted = True
    result.filled = filled
    result.spent = spent
    return result


def house_plan(
    book: Book, side: int, ladder: list[list[int]]
) -> list[tuple[Resting, int, list[list[int]]]]:
    """The house takes resting orders of `side` that its fresh ladder now crosses.

    Each resting order, best first, trades at its own price with the house levels at
    that price or better, best level first. Answers (order, units, [[ticks, units]]
    taken from the ladder)."""
    out: list[tuple[Resting, int, list[list[int]]]] = []
    levels = [[t, u] for t, u in ladder if u > 0]
    li = 0
    buy = side == BUY
    for level in (book.bids if buy else book.asks).values():
        if li >= len(levels):
            break
        if (levels[li][0] > level.ticks) if buy else (levels[li][0] < level.ticks):
            break
        for order in level.queue:
            if not order.live:
                continue
            want = order.remaining
            taken: list[list[int]] = []
            j = li
            while want > 0 and j < len(levels):
                ticks, units = levels[j]
                if (ticks > order.ticks) if buy else (ticks < order.ticks):
                    break
                take = units if units < want else want
                if take > 0:
                    taken.append([ticks, take])
                    levels[j][1] -= take
                    want -= take
                if levels[j][1] == 0:
                    j += 1
            li = j
            if taken:
                out.append((order, order.remaining - want, taken))
            if li >= len(levels):
                break
    return out


def crosses(book: Book, side: int, limit: int, ladder_best: int | None) -> bool:
    """Would a limit order at `limit` take liquidity now (real or synthetic)?"""
    if side == BUY:
        best = book.best_ask()
        return (best is not None and best <= limit) or (
            ladder_best is not None and ladder_best <= limit
        )
    best = book.best_bid()
    return (best is not None and best >= limit) or (
        ladder_best is not None and ladder_best >= limit
    )
