"""Random sequences of orders, cancels, price moves and clock moves across customers keep
every trading invariant, and the log rebuilds the same state.

The engine checks every invariant after every command (`assert_invariants`): no balance
below zero, postings summing to zero per asset, `trading` equal to what open orders
hold, the book never crossed at rest. Here the merged book (real orders and the house)
is checked after each step too, and the final state against a replay of the log."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sandex.engine import open_engine, replay
from sandex.engine.domain.trading import order_view, trading_state
from sandex.engine.domain.trading.book import BUY, SELL
from sandex.engine.kernel.commands import (
    Actor,
    AdvanceClock,
    CancelOrder,
    CreateCustomer,
    CreateOrder,
    ReadMarket,
    SandboxDeposit,
    SetMarketPrice,
)
from sandex.engine.kernel.errors import DomainError
from sandex.engine.kernel.invariants import check_state
from sandex.engine.kernel.money import MARKETS
from sandex.engine.tools.verify import verify
from tests.conftest import make_settings

MARKETS_USED = ("BTCUSD", "ETHUSD")
WHO = st.integers(0, 2)
SIDE = st.sampled_from(["BUY", "SELL"])
MARKET = st.sampled_from(MARKETS_USED)
BPS = st.integers(-300, 300)
UNITS = st.integers(1, 150_000_000)

OPS = st.one_of(
    st.tuples(
        st.just("limit"),
        WHO,
        SIDE,
        MARKET,
        BPS,
        UNITS,
        st.sampled_from(["GTC", "IOC", "FOK", "GTT"]),
        st.booleans(),
    ),
    st.tuples(st.just("market"), WHO, SIDE, MARKET, UNITS),
    st.tuples(st.just("stop"), WHO, MARKET, st.integers(-300, 50), UNITS, st.booleans()),
    st.tuples(st.just("cancel"), WHO, st.integers(0, 50)),
    st.tuples(st.just("price"), MARKET, st.integers(-400, 400)),
    st.tuples(st.just("advance"), st.integers(1, 1800)),
)


class World:
    def __init__(self, path: Path) -> None:
        self.engine = open_engine(
            path,
            make_settings(
                market_volatility="0.05",
                market_levels=3,
                maker_fee_rate="0.001",
                taker_fee_rate="0.002",
            ),
        ).start()
        self.actors: list[Actor] = []
        self.profiles: list[str] = []
        self.orders: list[list[str]] = [[], [], []]
        for _ in range(3):
            made = self.engine.execute(CreateCustomer())
            actor = Actor(customer_id=made["customer_id"], client_id=made["client_id"])
            self.actors.append(actor)
            self.profiles.append(made["profile_id"])
            for asset, amount in (("USD", "400000"), ("BTC", "6"), ("ETH", "60")):
                self.engine.execute(
                    SandboxDeposit(actor=actor, profile_id="default", asset=asset, amount=amount)
                )

    def run(self, command: Any) -> Any:
        try:
            return self.engine.execute(command)
        except DomainError:
            return None

    def last(self, market: str) -> Decimal:
        view = self.engine.execute(ReadMarket(view="price", market=market))
        return Decimal(view["last_price"])

    def price(self, market: str, bps: int) -> str:
        tick = MARKETS[market].tick
        raw = self.last(market) * (1 + Decimal(bps) / 10000)
        return format(max(tick, (raw / tick).to_integral_value() * tick), "f")

    def step(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        if kind == "limit":
            _, who, side, market, bps, units, tif, post_only = op
            extra = {}
            if tif == "GTT":
                expiry = self.engine.clock.now() + timedelta(seconds=60)
                extra["expiration_date"] = str(int(expiry.timestamp() * 1000))
            if post_only and tif == "GTT":
                tif = "GTC"
                extra = {}
            order = self.run(
                CreateOrder(
                    actor=self.actors[who],
                    profile_id="default",
                    side=side,
                    market=market,
                    type="POST_ONLY_LIMIT" if post_only else "LIMIT",
                    price=self.price(market, bps),
                    base_amount=format(Decimal(units) / 10**8, "f"),
                    time_in_force=tif,
                    **extra,
                )
            )
        elif kind == "market":
            _, who, side, market, units = op
            amount = Decimal(units) / 10**8
            if side == "BUY":
                quote = (amount * self.last(market)).quantize(Decimal("0.01"))
                body = {"quote_amount": format(max(quote, Decimal("0.01")), "f")}
            else:
                body = {"base_amount": format(amount, "f")}
            order = self.run(
                CreateOrder(
                    actor=self.actors[who],
                    profile_id="default",
                    side=side,
                    market=market,
                    type="MARKET",
                    **body,
                )
            )
        elif kind == "stop":
            _, who, market, bps, units, with_limit = op
            stop = self.price(market, bps)
            extra = {"price": self.price(market, bps - 20)} if with_limit else {}
            order = self.run(
                CreateOrder(
                    actor=self.actors[who],
                    profile_id="default",
                    side="SELL",
                    market=market,
                    type="STOP_LIMIT" if with_limit else "STOP_MARKET",
                    stop_price=stop,
                    base_amount=format(Decimal(units) / 10**8, "f"),
                    **extra,
                )
            )
        elif kind == "cancel":
            _, who, index = op
            mine = self.orders[who]
            if mine:
                self.run(
                    CancelOrder(
                        actor=self.actors[who],
                        profile_id="default",
                        order_id=mine[index % len(mine)],
                    )
                )
            return
        elif kind == "price":
            _, market, bps = op
            self.run(SetMarketPrice(market=market, price=self.price(market, bps)))
            return
        else:
            target = self.engine.clock.now() + timedelta(seconds=op[1])
            self.engine.execute(AdvanceClock(to=target))
            return
        if order is not None:
            self.orders[op[1]].append(order["id"])

    def check(self) -> None:
        assert check_state(self.engine.state, self.engine.registry.checks) == []
        for market in MARKETS_USED:
            view = self.engine.execute(ReadMarket(view="book", market=market))
            if view["bids"] and view["asks"]:
                assert Decimal(view["bids"][0]["price"]) < Decimal(view["asks"][0]["price"])


def snapshot(state: Any) -> dict[str, Any]:
    tr = trading_state(state)
    books = {}
    for name, mk in tr.markets.items():
        books[name] = [
            [(lv.ticks, [o.id for o in lv.live()]) for lv in mk.book.levels(side)]
            for side in (BUY, SELL)
        ] + [sorted(mk.stops)]
    return {
        "orders": {oid: order_view(state, o) for oid, o in tr.orders.items()},
        "holds": {oid: o.hold for oid, o in tr.orders.items()},
        "balances": dict(state.ledger.balances),
        "books": books,
        "executions": sorted(tr.executions),
    }


@settings(max_examples=30, deadline=None, database=None, derandomize=True)
@given(st.lists(OPS, min_size=10, max_size=35))
def test_random_trading_keeps_every_invariant_and_replays_to_the_same_state(
    ops: list[tuple[Any, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sandex.db"
        world = World(db)
        try:
            for op in ops:
                world.step(op)
                world.check()
            live = snapshot(world.engine.state)
        finally:
            world.engine.stop()
        assert verify(str(db)) == []
        again = open_engine(db, make_settings())
        try:
            rebuilt, _ = replay(again.store.read(), registry=again.registry)
        finally:
            again.store.close()
        assert snapshot(rebuilt) == live
