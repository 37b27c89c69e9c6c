"""A test that fails on purpose, to show what sandex leaves behind when one does: its
world kept, and `.sandex/failures/<test id>/` with the world's events, the test's
requests as a scenario and the command that replays them. The default run deselects it
(pyproject.toml's addopts); run it with `pytest -m deliberately_failing`."""

from datetime import datetime, timedelta

import pytest

from engine import Paxos, limit_order


@pytest.mark.deliberately_failing
def test_a_gtt_order_is_still_open_after_its_expiry(sandex_world):
    paxos = Paxos(
        sandex_world.base_url,
        sandex_world.token_url,
        sandex_world.client_id,
        sandex_world.client_secret,
    )
    now = datetime.fromisoformat(sandex_world.clock.now())
    expiry_ms = int((now + timedelta(minutes=5)).timestamp() * 1000)
    gtt = limit_order("BUY", "25000", "1", time_in_force="GTT", expiration_date=str(expiry_ms))
    order = paxos.place(sandex_world.profile_id, gtt).json()

    sandex_world.clock.advance(seconds=600)

    # wrong on purpose: the order expired at five minutes and is CANCELLED
    assert paxos.order(sandex_world.profile_id, order["id"]).json()["status"] == "OPEN"
