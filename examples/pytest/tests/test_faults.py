"""Faults a test arms in its own world (`sandex_world.faults.arm`), met by the project's
client and by sandex's own, which retries."""

from decimal import Decimal

from engine import Paxos, limit_order
from sandex.client import Client


def paxos_for(world):
    return Paxos(world.base_url, world.token_url, world.client_id, world.client_secret)


def test_an_armed_503_is_met_once_and_the_next_order_goes_through(sandex_world):
    sandex_world.faults.arm({"operation": "CreateOrder"}, {"problem": {"status": 503}}, times=1)
    paxos = paxos_for(sandex_world)
    order = limit_order("BUY", "20000", "0.1")

    refused = paxos.place(sandex_world.profile_id, order)
    assert refused.status_code == 503
    assert refused.headers["content-type"].startswith("application/problem+json")

    placed = paxos.place(sandex_world.profile_id, order)
    assert placed.status_code == 200, placed.text
    assert [o["id"] for o in paxos.orders(sandex_world.profile_id)] == [placed.json()["id"]]


def test_an_order_whose_answer_is_dropped_after_commit_is_found_by_its_retry(sandex_world):
    """The write is made, then its connection dropped: sandex's client retries with the
    same ref_id, is told it exists, and answers the one order."""
    sandex_world.faults.arm({"operation": "CreateOrder"}, {"drop": True}, when="after", times=1)
    profile = sandex_world.profile_id
    retrying = Client(
        sandex_world.base_url,
        sandex_world.token_url,
        sandex_world.client_id,
        sandex_world.client_secret,
    )

    order = retrying.request(
        "POST",
        f"/profiles/{profile}/orders",
        json=limit_order("BUY", "20000", "0.1"),
        ref_id=True,
        found_at=f"/profiles/{profile}/orders/{{id}}",
    )

    orders = paxos_for(sandex_world).orders(profile)
    assert [o["id"] for o in orders] == [order["id"]]
    assert paxos_for(sandex_world).available(profile, "USD") == Decimal("98000")  # held once
    sent = [r for r in sandex_world.requests() if r.operation == "CreateOrder"]
    assert sorted((r.status, r.fault is not None) for r in sent) == [(200, True), (409, False)]
