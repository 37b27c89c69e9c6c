"""What a decision derives once: a limit order's placement asks whether it crosses the
book or the house's ladder, and carrying it forward takes that answer rather than
asking again. Pinned by counting the question, and by deciding the same seeded orders
with the answer passed and withheld: the same log and the same read-model rows."""

from __future__ import annotations

import random
from contextlib import suppress
from decimal import Decimal
from typing import Any

import pytest

from sandex.engine import Engine
from sandex.engine.domain.trading import execution, placement
from sandex.engine.kernel.commands import Actor, CreateCustomer, CreateOrder, SandboxDeposit
from sandex.engine.kernel.errors import DomainError
from sandex.engine.runtime.composition import TABLES, build_engine
from sandex.engine.store import MemoryEventStore
from tests.conftest import make_settings


def _engine() -> tuple[Engine, list[Actor]]:
    engine = build_engine(
        MemoryEventStore(tables=TABLES), make_settings(market_volatility=Decimal(0))
    )
    actors = []
    for i in range(3):
        made = engine.run_inline(CreateCustomer(client_id=f"c{i}", client_secret="pw"))
        actor = Actor(made["customer_id"], f"c{i}")
        for asset, amount in (("USD", "100000000"), ("BTC", "1000")):
            engine.run_inline(
                SandboxDeposit(actor=actor, profile_id="default", asset=asset, amount=amount)
            )
        actors.append(actor)
    return engine, actors


def _orders(actors: list[Actor], n: int, seed: int = 3) -> list[CreateOrder]:
    """Limit orders around BTCUSD's reference price (42,500), a third of them crossing
    the house's ladder or each other, with every time in force; some post-only and
    market orders between them."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        actor = rng.choice(actors)
        side = rng.choice(("BUY", "SELL"))
        kind = rng.choices(("LIMIT", "POST_ONLY_LIMIT", "MARKET"), (8, 1, 1))[0]
        amount = format(Decimal(rng.randrange(1, 50)) / 100, "f")
        if kind == "MARKET":
            body: dict[str, Any] = (
                {"quote_amount": "500.00"} if side == "BUY" else {"base_amount": amount}
            )
        else:
            price = Decimal(42500) + Decimal(rng.randrange(-400, 400)) / 4
            body = {"price": format(price, "f"), "base_amount": amount}
            if kind == "LIMIT":
                body["time_in_force"] = rng.choice(("GTC", "GTC", "IOC", "FOK"))
        out.append(
            CreateOrder(
                actor=actor, profile_id="default", side=side, market="BTCUSD", type=kind, **body
            )
        )
    return out


def _run(engine: Engine, orders: list[CreateOrder]) -> None:
    for order in orders:
        with suppress(DomainError):  # a refused order (funds, the taker band) is part of it
            engine.run_inline(order)


def test_a_limit_order_is_asked_once_whether_it_crosses(monkeypatch: pytest.MonkeyPatch) -> None:
    engine, actors = _engine()
    asked: list[int] = []

    def counted(*args: Any) -> bool:
        asked.append(1)
        return bool(crosses(*args))

    crosses = placement.crosses
    monkeypatch.setattr(placement, "crosses", counted)
    monkeypatch.setattr(execution, "crosses", counted)
    for price in ("42400", "42600"):  # rests below the house's ask; takes from it
        asked.clear()
        engine.run_inline(
            CreateOrder(
                actor=actors[0],
                profile_id="default",
                side="BUY",
                market="BTCUSD",
                type="LIMIT",
                price=price,
                base_amount="0.01",
            )
        )
        assert asked == [1], price


def test_orders_decide_the_same_whether_placement_tells_its_crossing_or_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    told, actors = _engine()
    setup = told.state.position  # clients' secrets come from the OS: compared after them
    _run(told, _orders(actors, 400))

    def withheld(*args: Any) -> None:
        submit(*args[:5])  # no crossing: carrying forward asks for itself

    submit = placement.submit
    monkeypatch.setattr(placement, "submit", withheld)
    asked, actors = _engine()
    _run(asked, _orders(actors, 400))
    assert told.state.position == asked.state.position > setup + 1000
    assert [r for r in told.store.stored_rows() if r[0] > setup] == [
        r for r in asked.store.stored_rows() if r[0] > setup
    ]
    for table in ("orders", "executions", "balances", "event_feed"):
        columns = list(TABLES[table]["columns"])
        assert sorted(told.store.read_model_rows(table, columns), key=repr) == sorted(
            asked.store.read_model_rows(table, columns), key=repr
        ), table
