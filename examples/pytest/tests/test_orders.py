"""Orders placed through the project's own Paxos client, each test in a world of its own
(forked from the session's template: 100,000 USD, 10 BTC and 100 ETH in the DEFAULT
profile, on a manual clock at 2030-01-02T15:00:00Z)."""

from datetime import datetime, timedelta
from decimal import Decimal

from engine import Paxos, limit_order


def paxos_for(world):
    """The project's client, pointed at the test's world as it would be at the real API."""
    return Paxos(world.base_url, world.token_url, world.client_id, world.client_secret)


def test_a_limit_buy_above_the_market_fills_at_the_ask_and_moves_the_balances(sandex_world):
    sandex_world.set_price("BTCUSD", "50000")  # the house quotes 50,025 to buy (5 bps above)
    paxos = paxos_for(sandex_world)

    placed = paxos.place(sandex_world.profile_id, limit_order("BUY", "51000", "0.1"))

    assert placed.status_code == 200, placed.text
    order = placed.json()
    assert order["status"] == "FILLED"
    assert Decimal(order["volume_weighted_average_price"]) == Decimal("50025")
    assert paxos.available(sandex_world.profile_id, "BTC") == Decimal("10.1")
    assert paxos.available(sandex_world.profile_id, "USD") == Decimal("100000") - Decimal("5002.5")


def test_a_gtt_order_is_cancelled_at_its_expiry_and_its_hold_released(sandex_world):
    sandex_world.set_price("BTCUSD", "50000")
    paxos = paxos_for(sandex_world)
    now = datetime.fromisoformat(sandex_world.clock.now())
    expiry_ms = int((now + timedelta(minutes=5)).timestamp() * 1000)
    gtt = limit_order("BUY", "25000", "1", time_in_force="GTT", expiration_date=str(expiry_ms))

    order = paxos.place(sandex_world.profile_id, gtt).json()
    assert order["status"] == "OPEN"
    assert paxos.available(sandex_world.profile_id, "USD") == Decimal("75000")  # 25,000 held

    sandex_world.clock.advance(seconds=299)  # this world's clock only
    assert paxos.order(sandex_world.profile_id, order["id"]).json()["status"] == "OPEN"
    sandex_world.clock.advance(seconds=1)
    expired = paxos.order(sandex_world.profile_id, order["id"]).json()
    assert expired["status"] == "CANCELLED"
    assert paxos.available(sandex_world.profile_id, "USD") == Decimal("100000")


def test_each_test_starts_from_the_template_whatever_the_others_did(sandex_world):
    """The tests above spent USD and moved their clocks; this world saw none of it."""
    paxos = paxos_for(sandex_world)
    assert paxos.available(sandex_world.profile_id, "USD") == Decimal("100000")
    assert paxos.orders(sandex_world.profile_id) == []
    assert sandex_world.clock.now().startswith("2030-01-02T15:00:00")
