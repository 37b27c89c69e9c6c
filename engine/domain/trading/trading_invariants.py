"""The trading invariants `sandex verify` and the tests check on a state: holds equal
trading balances, closed orders hold nothing, books are consistent and never crossed at
rest."""

from __future__ import annotations

from decimal import Decimal

from sandex.engine.domain.trading.book import BUY, SELL
from sandex.engine.kernel.money import ZERO
from sandex.engine.kernel.state import State


def check_trading(state: State) -> list[str]:
    """What is wrong with the trading state, in words (empty when nothing is)."""
    tr = state.ext.get("trading")
    if tr is None:
        return []
    problems: list[str] = []
    holds: dict[tuple[str, str], Decimal] = {}
    for o in tr.orders.values():
        if o.open:
            key = (o.profile_id, o.hold_asset)
            holds[key] = holds.get(key, ZERO) + o.hold
            if o.hold < ZERO:
                problems.append(f"order {o.id} holds a negative amount {o.hold}")
        elif o.hold != ZERO:
            problems.append(f"closed order {o.id} still holds {o.hold} {o.hold_asset}")
        if o.live and (o.status != "OPEN" or o.remaining != o.qty - o.filled):
            problems.append(f"order {o.id} in the book is {o.status} with {o.remaining} left")
        if o.qty and o.filled > o.qty:
            problems.append(f"order {o.id} filled {o.filled} of {o.qty}")
        if o.open and o.qty and o.filled == o.qty:
            problems.append(f"order {o.id} is filled but still {o.status}")
    for (account, asset), value in state.ledger.balances.items():
        if account.endswith(":trading"):
            pid = account[: -len(":trading")]
            held = holds.pop((pid, asset), ZERO)
            if value != held:
                problems.append(
                    f"trading balance of {pid} in {asset} is {value}, open orders hold {held}"
                )
    for (pid, asset), held in holds.items():
        if held != ZERO:
            problems.append(f"open orders of {pid} hold {held} {asset} with no trading balance")
    for mk in tr.markets.values():
        bid, ask = mk.book.best_bid(), mk.book.best_ask()
        if bid is not None and ask is not None and bid >= ask:
            problems.append(f"book {mk.name} is crossed at rest: bid {bid} >= ask {ask} ticks")
        for side in (BUY, SELL):
            for level in mk.book.levels(side):
                live = [o for o in level.queue if o.live]
                if len(live) != level.count or sum(o.remaining for o in live) != level.total:
                    problems.append(f"book {mk.name} level {level.ticks} totals are wrong")
    return problems
