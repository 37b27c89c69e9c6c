"""Two engines in one process share nothing: each decides, times, interns and answers
exactly as it would alone, whether the two are driven in turn from one thread or at
once from two (issue 16: the decision caches are the engine's own, not the module's)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sandex.engine import Engine, open_engine
from sandex.engine.domain.trading import trading_state
from sandex.engine.kernel.clock import to_millis
from sandex.engine.kernel.commands import (
    Actor,
    AdvanceClock,
    CancelOrder,
    Command,
    CreateCustomer,
    CreateOrder,
    SandboxDeposit,
    SetMarketPrice,
)
from sandex.engine.kernel.errors import DomainError
from sandex.engine.runtime.shared_writer import SharedWriter
from tests.conftest import make_settings
from tests.support.log_helpers import masked_log

_INTERNED = ("created_at", "modified_at", "hold_rate")  # of an order
_STAMPS = ("created_at", "updated_at")  # of a transfer
# A script yields commands and is sent each one's reply (or the error it raised).
Script = Generator[Command, Any, None]


@dataclass(frozen=True)
class Plan:
    """One engine's run: its own clock, fee rates and amounts."""

    name: str
    start: datetime
    maker: str
    taker: str
    price: int  # BTCUSD reference price
    amounts: tuple[str, str, str]
    step_seconds: int


# Different fee rates (a sell holds at rate 0 in both, a text both intern), times, prices.
A = Plan("a", datetime(2024, 3, 1, 9, 30, tzinfo=UTC), "0.001", "0.002", 40000,
         ("0.5", "0.25", "0.125"), 7)  # fmt: skip
B = Plan("b", datetime(2030, 11, 17, 23, 59, 58, tzinfo=UTC), "0.002", "0.0035", 91000,
         ("0.03", "0.07", "0.011"), 13)  # fmt: skip


def _script(plan: Plan) -> Script:
    """Rest orders, take and make (taker and maker fees), move the clock and cross a GTT
    deadline (an expiry the timer decides), cancel: times, fees and holds vary."""
    made = yield CreateCustomer(client_id=f"c-{plan.name}", client_secret="s", bootstrap=True)
    actor = Actor(made["customer_id"], f"c-{plan.name}")

    def order(side: str, kind: str, **kw: Any) -> CreateOrder:
        return CreateOrder(
            actor=actor, profile_id="default", side=side, market="BTCUSD", type=kind, **kw
        )

    yield SandboxDeposit(actor=actor, profile_id="default", asset="USD", amount="1000000")
    yield SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount="10")
    yield SetMarketPrice(actor=actor, market="BTCUSD", price=str(plan.price))
    price = plan.price
    high, low, deep = str(price + 100), str(price - 100), str(price - 300)
    first, second, third = plan.amounts
    yield order("SELL", "LIMIT", price=high, base_amount=first)
    resting_buy = yield order("BUY", "LIMIT", price=deep, base_amount=second)
    yield order("BUY", "LIMIT", price=high, base_amount=third)  # takes the house's ask
    yield order("BUY", "LIMIT", price=low, base_amount=third)  # rests, at the same time
    yield AdvanceClock(actor=actor, by=timedelta(seconds=plan.step_seconds))
    yield SetMarketPrice(actor=actor, market="BTCUSD", price=str(price - 150))  # fills it
    yield order("SELL", "MARKET", base_amount=third)  # takes the house's bid
    yield order("BUY", "MARKET", quote_amount="100")
    expires = str(to_millis(plan.start + timedelta(seconds=plan.step_seconds + 30)))
    yield order("BUY", "LIMIT", price=deep, base_amount=first, time_in_force="GTT",
                expiration_date=expires)  # fmt: skip
    yield order("SELL", "LIMIT", price="1", base_amount="0.1")  # refused: out of band
    yield AdvanceClock(actor=actor, by=timedelta(seconds=60))  # the GTT order expires
    yield CancelOrder(actor=actor, profile_id="default", order_id=resting_buy["id"])
    yield order("SELL", "LIMIT", price=high, base_amount=second)


def _engine(tmp_path: Path, plan: Plan, tag: str) -> Engine:
    settings = make_settings(
        clock_start=plan.start,
        market_volatility="0",
        maker_fee_rate=plan.maker,
        taker_fee_rate=plan.taker,
    )
    return open_engine(tmp_path / f"{plan.name}-{tag}.db", settings)


class _Driver:
    """Steps one script against one engine, keeping every reply."""

    def __init__(self, engine: Engine, plan: Plan, run: Callable[[Command], Any]) -> None:
        self.engine = engine
        self.script = _script(plan)
        self.run = run
        self.replies: list[Any] = []
        self.command: Command | None = next(self.script)

    def step(self) -> bool:
        """Decide the next command; False once the script is done."""
        if self.command is None:
            return False
        try:
            reply = self.run(self.command)
        except DomainError as exc:
            reply = ("error", type(exc).__name__, str(exc))
        self.replies.append(reply)
        try:
            self.command = self.script.send(reply)
        except StopIteration:
            self.command = None
        return True


def _sharing(values: list[Any]) -> list[int]:
    """For each value, the index of the first of `values` that is the same object."""
    first: dict[int, int] = {}
    return [first.setdefault(id(v), k) for k, v in enumerate(values)]


def _outcome(engine: Engine, replies: list[Any]) -> dict[str, Any]:
    """All an engine showed and kept, and which of its times and fee rates are one
    object (what the interning is for): to be equal to the lone run's."""
    state = engine.state
    orders = sorted(trading_state(state).orders.values(), key=lambda o: o.seq)
    transfers = sorted(state.transfers.values(), key=lambda t: t["seq"])
    return {
        "replies": replies,
        "orders": [
            (o.id, o.status, o.created_at, o.modified_at, o.filled, o.commission, o.hold)
            for o in orders
        ],
        "transfers": transfers,
        "balances": sorted(state.ledger.balances.items()),
        "log": masked_log(engine.db_path),
        "one object": {
            **{f: _sharing([getattr(o, f) for o in orders]) for f in _INTERNED},
            "transfer times": _sharing([t[f] for t in transfers for f in _STAMPS]),
        },
    }


def _in_common(a: Engine, b: Engine) -> list[Any]:
    """The interned objects (order times, fee rates) the orders of `a` and of `b` share."""
    held = [
        {
            id(v): v
            for o in trading_state(e.state).orders.values()
            for v in (o.created_at, o.hold_rate)
        }
        for e in (a, b)
    ]
    return [held[0][k] for k in held[0].keys() & held[1].keys()]


def _alone(tmp_path: Path, plan: Plan, *, writer_thread: bool) -> dict[str, Any]:
    """The outcome of `plan` on an engine with no other beside it."""
    engine = _engine(tmp_path, plan, "alone")
    if writer_thread:
        engine.start()
    driver = _Driver(engine, plan, engine.execute if writer_thread else engine.run_inline)
    while driver.step():
        pass
    engine.stop()
    return _outcome(engine, driver.replies)


def test_two_engines_driven_in_turn_each_run_as_alone(tmp_path: Path) -> None:
    expected = {plan.name: _alone(tmp_path, plan, writer_thread=False) for plan in (A, B)}
    engines = {plan.name: _engine(tmp_path, plan, "turns") for plan in (A, B)}
    drivers = [_Driver(engines[p.name], p, engines[p.name].run_inline) for p in (A, B)]
    while any([d.step() for d in drivers]):
        pass
    for engine in engines.values():
        engine.stop()
    for driver, plan in zip(drivers, (A, B), strict=True):
        assert _outcome(driver.engine, driver.replies) == expected[plan.name], plan.name
    assert expected["a"]["replies"][-1]["created_at"] == "2024-03-01T09:31:07.000000Z"
    assert expected["b"]["replies"][-1]["created_at"] == "2030-11-18T00:01:11.000000Z"
    assert _in_common(engines["a"], engines["b"]) == []


@pytest.mark.parametrize("writer", ["own", "one_for_both"])
def test_two_engines_driven_from_two_threads_each_run_as_alone(tmp_path: Path, writer: str) -> None:
    """`one_for_both`: both on one writer thread (a server's worlds, SharedWriter)."""
    expected = {plan.name: _alone(tmp_path, plan, writer_thread=True) for plan in (A, B)}
    shared = SharedWriter() if writer == "one_for_both" else None
    engines = {plan.name: _engine(tmp_path, plan, "threads").start(shared) for plan in (A, B)}
    drivers = [_Driver(engines[p.name], p, engines[p.name].execute) for p in (A, B)]
    together = threading.Barrier(2, timeout=30)  # each step of one beside one of the other
    failures: list[BaseException] = []

    def drive(driver: _Driver) -> None:
        try:
            while True:
                together.wait()
                if not driver.step():
                    return
        except BaseException as exc:
            failures.append(exc)
            together.abort()

    threads = [threading.Thread(target=drive, args=(d,)) for d in drivers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for engine in engines.values():
        engine.stop()
    if shared is not None:
        shared.close()
    assert not failures, failures
    for driver, plan in zip(drivers, (A, B), strict=True):
        assert _outcome(driver.engine, driver.replies) == expected[plan.name], plan.name
    assert _in_common(engines["a"], engines["b"]) == []
