"""Every operation of `sandex.client` round-trips against the real app: what it sends is
what sandex serves, and what sandex answers parses into the client's models."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from sandex.client import (
    Client,
    ConflictError,
    Customer,
    FaultRule,
    MarketPrice,
    WorldCreated,
)
from tests.support.transfer_helpers import BTC_ADDRESS, WIRE


def withdraw(client: Client, amount: str = "0.001", **extra: Any) -> dict[str, Any]:
    body = {
        "profile_id": "default",
        "asset": "BTC",
        "amount": amount,
        "crypto_network": "BITCOIN",
        "destination_address": BTC_ADDRESS,
        **extra,
    }
    return client.request("POST", "/transfer/crypto-withdrawals", json=body)  # type: ignore[no-any-return]


def test_importing_the_client_imports_nothing_of_the_server() -> None:
    code = (
        "import sys, sandex, sandex.client\n"
        "print(sorted(m for m in sys.modules if m.startswith(('sandex.engine', 'sandex.api_adapter'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_worlds_are_created_forked_listed_read_and_deleted(
    admin: Client, made: WorldCreated, world: Client, front: Any
) -> None:
    assert made.base_url.endswith(f"/w/{made.id}/v2") and made.client_secret
    assert made.clock.mode == "manual"
    world.deposit("USD", Decimal("250"))
    world.take_snapshot("funded")

    fork = admin.fork_world(made.id, "funded", name="a fork")
    assert fork.client_secret is None and fork.client_id == made.client_id
    with pytest.raises(ValueError, match="fork"):
        Client.for_world(fork)
    forked = Client.for_world(fork, made.client_secret, http=front.http)
    assert forked.request("GET", "/profiles/default/balances/USD")["available"] == "250"

    read = admin.get_world(fork.id)
    assert (read.from_world, read.from_snapshot, read.name) == (made.id, "funded", "a fork")
    assert {made.id, fork.id} <= {w.id for w in admin.list_worlds().items}
    assert admin.delete_world(fork.id).deleted is True
    assert fork.id not in {w.id for w in admin.iter_worlds()}


def test_the_clock_moves_and_is_set(world: Client) -> None:
    assert world.get_clock().now == datetime(2024, 1, 1, tzinfo=UTC)
    assert world.advance_clock(90).now == datetime(2024, 1, 1, 0, 1, 30, tzinfo=UTC)
    later = datetime(2024, 1, 2, 12, tzinfo=UTC)
    assert world.set_clock(later).now == later
    assert world.set_clock("2024-01-03T00:00:00Z").now == datetime(2024, 1, 3, tzinfo=UTC)


def test_customers_snapshots_restore_and_reset(world: Client, front: Any) -> None:
    customer = world.create_customer(identity_labels=True)
    assert isinstance(customer, Customer)
    tenant = Client(
        world.base_url, world.token_url, customer.client_id, customer.client_secret, http=front.http
    )
    assert tenant.request("GET", "/profiles")["items"]

    world.deposit("USD", "100")
    taken = world.take_snapshot("before")
    world.deposit("USD", "50")
    assert [s.name for s in world.list_snapshots()] == ["before"]
    restored = world.restore_snapshot("before")
    assert (restored.name, restored.position) == ("before", taken.position)
    assert world.request("GET", "/profiles/default/balances/USD")["available"] == "100"
    assert world.reset().position >= 0
    assert world.request("GET", "/profiles/default/balances/USD")["available"] == "0"


def test_prices_are_decimal_and_floats_are_refused(world: Client) -> None:
    moved = world.set_price("BTCUSD", Decimal("51234.5"), gap=True)
    assert isinstance(moved, MarketPrice) and moved.last_price == Decimal("51234.5")
    assert world.get_price("BTCUSD").reference_price == Decimal("51234.5")
    with pytest.raises(TypeError, match="float"):
        world.set_price("BTCUSD", 51234.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="float"):
        world.deposit("USD", 1.5)  # type: ignore[arg-type]


def test_deposits_crypto_and_fiat(world: Client) -> None:
    made = world.deposit("BTC", "0.5", crypto_network="BITCOIN")
    transfer = world.request("GET", f"/transfer/transfers/{made.activity_id}")
    assert (transfer["type"], transfer["amount"]) == ("CRYPTO_DEPOSIT", "0.5")

    instructions = world.request(
        "POST",
        "/transfer/fiat-deposit-instructions",
        json={"profile_id": "default", "fiat_network": "WIRE"},
    )
    assert world.fiat_deposit("150.33", "USD", instructions["memo_id"], {"wire": WIRE}) is None
    world.advance_clock(86400)  # a wire is credited after its delay
    transfers = world.request("GET", "/transfer/transfers")["items"]
    wires = [(t["amount"], t["status"]) for t in transfers if t["type"] == "WIRE_DEPOSIT"]
    assert wires == [("150.33", "COMPLETED")]


def test_http_faults_are_armed_listed_read_and_removed(world: Client) -> None:
    rule = world.arm_fault(
        {"operation": "GetSandboxClock"},
        {"problem": {"status": 409}},
        times=1,
        probability="1",
        ttl_seconds=600,
    )
    assert isinstance(rule, FaultRule) and rule.probability == Decimal("1")
    assert [r.id for r in world.list_faults()] == [rule.id]
    with pytest.raises(Exception, match="409"):
        world.get_clock()
    assert world.get_fault(rule.id).fired == 1 and world.get_fault(rule.id).spent
    assert world.delete_fault(rule.id).id == rule.id
    assert world.list_faults() == []


def test_a_fault_template_is_asked_for_by_header(world: Client) -> None:
    with pytest.raises(ConflictError):
        world.with_fault("conflict").get_clock()
    assert world.get_clock().mode == "manual"  # the twin's header stays its own
    (last,) = world.list_requests(limit=1, operation="GetSandboxClock", status="4xx").items
    assert last.fault is not None and last.fault.template == "conflict"


def test_webhook_faults_are_armed_listed_read_and_removed(world: Client) -> None:
    rule = world.arm_webhook_fault({"fail": {"status": 503}}, times=2)
    assert (rule.times, rule.remaining) == (2, 2)
    armed = world.arm_webhook_fault({"duplicate": True}, match={"event_type": "order.filled"})
    assert [r.id for r in world.list_webhook_faults()] == [rule.id, armed.id]
    assert world.get_webhook_fault(armed.id).match == {"event_type": "order.filled"}
    assert world.delete_webhook_fault(rule.id).id == rule.id
    assert [r.id for r in world.list_webhook_faults()] == [armed.id]


def test_pacing_and_releases_by_hand(world: Client) -> None:
    paced = world.set_pacing(withdrawal={"mode": "manually"})
    assert paced.withdrawal.mode == "manually" and world.get_pacing().withdrawal.mode == "manually"
    world.deposit("BTC", "1", crypto_network="BITCOIN")

    first, second = withdraw(world), withdraw(world)
    assert world.complete_transfer(first["id"]).status == "COMPLETED"
    failed = world.fail_transfer(second["id"], reason="compliance")
    assert failed.status == "FAILED" and failed.amount == Decimal("0.001")

    world.deposit("USD", "100000")
    held = world.request(
        "POST",
        "/profiles/default/orders",
        json={
            "market": "BTCUSD",
            "side": "BUY",
            "type": "LIMIT",
            "price": "1000",
            "base_amount": "0.01",
            "metadata": {"case": "sandbox:hold"},
        },
    )
    released = world.release_order(held["id"])
    assert released.id == held["id"] and released.status in ("OPEN", "FILLED", "PARTIALLY_FILLED")


def test_requests_and_events_are_listed(world: Client) -> None:
    world.deposit("USD", "10")
    world.deposit("USD", "20")
    page = world.list_events()
    assert [e.object["amount"] for e in page.events if e.object] == ["10", "20"]
    assert page.next_page_cursor is None
    assert world.list_events(type="order.filled").events == []
    assert len(world.list_events(gte=datetime(2024, 1, 1, tzinfo=UTC)).events) == 2
    seen = world.list_requests(operation="CreateSandboxDeposit").items
    assert [r.status for r in seen] == [200, 200] and all(r.events for r in seen)
