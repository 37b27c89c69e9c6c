"""The OrderPlaced applier's shortcut: it counts the keys of the order record and, when
there are just `_PLAIN_FIELDS` plus price and base_amount, skips every optional field.
That count is coupled to the keys `create_order` writes unconditionally; these tests
build records through the decider for every order shape and hold the count to them, and
the orders the shortcut builds to those the general path builds.

Not covered before: tests/api/test_replay_log.py compares whole replays with the live
state, which the shortcut takes on both sides, so a wrong count went unnoticed there."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sandex.engine import Settings, open_engine
from sandex.engine.domain.trading import Order, appliers, trading_state
from sandex.engine.domain.trading.order_types import ORDER_TYPES
from sandex.engine.kernel.clock import to_millis
from sandex.engine.kernel.commands import (
    Actor,
    CreateCustomer,
    CreateOrder,
    CreateProfile,
    SandboxDeposit,
)
from sandex.engine.kernel.events import Event
from sandex.engine.runtime.composition import default_registry
from sandex.engine.runtime.replay import replay

START = datetime(2024, 1, 1, tzinfo=UTC)
# Keys of an order record the applier's general path reads, and one it reads apart
# (a submission latency's time); price and base_amount are counted as present or not.
GENERAL_READS = frozenset(
    {
        "quote_amount",
        "stop_price",
        "expiration_date",
        "ref_id",
        "metadata",
        "identity_id",
        "identity_account_id",
        "recipient_profile_id",
        "self_match_prevention_id",
    }
)
OPTIONAL = GENERAL_READS | {"submit_at"}
COUNTED = frozenset({"price", "base_amount"})

# (type, side, amounts): every shape an order takes; limits rest far from the price,
# and two cross it to trade with the house.
SHAPES: list[tuple[str, str, dict[str, str]]] = [
    ("LIMIT", "BUY", {"price": "30000", "base_amount": "0.001"}),
    ("LIMIT", "SELL", {"price": "60000", "base_amount": "0.001"}),
    ("LIMIT", "BUY", {"price": "42600", "base_amount": "0.0011"}),
    ("LIMIT", "SELL", {"price": "42400.25", "base_amount": "0.0011"}),
    ("POST_ONLY_LIMIT", "BUY", {"price": "30000.5", "base_amount": "0.002"}),
    ("POST_ONLY_LIMIT", "SELL", {"price": "60000", "base_amount": "0.002"}),
    ("MARKET", "BUY", {"quote_amount": "10.5"}),
    ("MARKET", "SELL", {"base_amount": "0.0001"}),
    ("STOP_MARKET", "SELL", {"stop_price": "30000", "base_amount": "0.001"}),
    ("STOP_LIMIT", "SELL", {"stop_price": "30000", "price": "29000", "base_amount": "0.001"}),
]


def _extras(desk: str) -> list[dict[str, Any]]:
    """The optional fields of a request: none, each alone, and all together."""
    each: list[dict[str, Any]] = [
        {"ref_id": ""},
        {"metadata": {"desk": "a"}},
        {"identity_id": "id-1", "identity_account_id": "acct-1"},
        {"recipient_profile_id": desk},
        {"self_match_prevention_id": "smp", "may_prevent_self_match": True},
    ]
    everything: dict[str, Any] = {}
    for extra in each:
        everything.update(extra)
    return [{}, *each, everything]


def _log(db: Path, latency_ms: int) -> list[Event]:
    """The events of every shape x time in force x optional fields, decided by the
    engine with the given submission latency."""
    settings = Settings(
        clock="manual",
        clock_start=START,
        seed=7,
        market_volatility=Decimal(0),
        order_submission_latency_ms=latency_ms,
        snapshot_every_events=0,
        assert_invariants=True,
        rate_limits_enabled=False,
    )
    engine = open_engine(db, settings)
    try:
        with engine.one_transaction():
            made = engine.run_inline(
                # identity_labels: the orders' made-up identity ids are kept as labels
                CreateCustomer(
                    client_id="me", client_secret="pw", bootstrap=True, identity_labels=True
                )
            )
            me = Actor(made["customer_id"], "me")
            desk = engine.run_inline(CreateProfile(actor=me, nickname="desk"))["id"]
            for asset, amount in (("USD", "1000000"), ("BTC", "100")):
                engine.run_inline(
                    SandboxDeposit(actor=me, profile_id="default", asset=asset, amount=amount)
                )
            expires = str(to_millis(START + timedelta(hours=1)))
            refs = itertools.count()
            for kind, side, amounts in SHAPES:
                for tif in sorted(ORDER_TYPES[kind].tifs):
                    for extra in _extras(desk):
                        fields = {**amounts, **extra}
                        if "ref_id" in fields:
                            fields["ref_id"] = f"ref-{next(refs)}"
                        if tif == "GTT":
                            fields["expiration_date"] = expires
                        engine.run_inline(
                            CreateOrder(
                                actor=me,
                                profile_id="default",
                                market="BTCUSD",
                                side=side,
                                type=kind,
                                time_in_force=tif,
                                **fields,
                            )
                        )
        return list(engine.store.read(with_meta=False))
    finally:
        engine.stop()


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[list[Event]]]:
    root = tmp_path_factory.mktemp("placed")
    yield [_log(root / "now.db", 0), _log(root / "late.db", 50)]


def _records(log: list[Event]) -> list[dict[str, Any]]:
    return [e.data["order"] for e in log if e.type == "OrderPlaced"]


def _takes_shortcut(record: dict[str, Any]) -> bool:
    """The applier's own test, as it reads the record."""
    counted = ("price" in record) + ("base_amount" in record)
    return len(record) == appliers._PLAIN_FIELDS + counted


def test_the_applier_counts_exactly_the_keys_create_order_always_writes(
    logs: list[list[Event]],
) -> None:
    """Fails when create_order writes a key for every order that the applier's count
    does not know, or stops writing one it counts: then an order with one optional
    field would be taken for one without, or none would take the shortcut."""
    records = [r for log in logs for r in _records(log)]
    always = set.intersection(*(set(r) for r in records))
    assert len(records) > 300
    for record in records:
        unconditional = set(record) - OPTIONAL - COUNTED
        assert unconditional == always, sorted(unconditional ^ always)
        assert len(unconditional) == appliers._PLAIN_FIELDS, (
            f"create_order writes {len(unconditional)} keys for every order "
            f"({sorted(unconditional)}); the OrderPlaced applier counts {appliers._PLAIN_FIELDS}"
        )
        assert _takes_shortcut(record) == (not set(record) & OPTIONAL), record
    shortcuts = sum(map(_takes_shortcut, records))
    assert 0 < shortcuts < len(records)


def _fields(o: Order) -> list[tuple[str, str]]:
    """Every slot of an order, each value in its exact notation."""
    return [(name, repr(getattr(o, name))) for name in Order.__slots__]


def test_the_applier_s_shortcut_builds_the_order_the_general_path_builds(
    logs: list[list[Event]], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = default_registry()
    for log in logs:
        short, _ = replay(iter(log), registry=registry)
        with monkeypatch.context() as m:
            m.setattr(appliers, "_PLAIN_FIELDS", -1)  # no record matches: the general path
            general, _ = replay(iter(log), registry=registry)
        short_orders = trading_state(short).orders
        general_orders = trading_state(general).orders
        assert list(short_orders) == list(general_orders)
        for key, o in short_orders.items():
            assert _fields(o) == _fields(general_orders[key]), key
        assert short.ledger.balances == general.ledger.balances
        assert trading_state(short).refs == trading_state(general).refs
        assert len(short.timers) == len(general.timers)
