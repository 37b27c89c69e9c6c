"""A baseline of this module's own: overriding `sandex_template` here (no conftest) builds
its template world once per session, and every test of the module forks it."""

from decimal import Decimal

import pytest

from engine import Paxos


@pytest.fixture(scope="session")
def sandex_template():
    def build(world):
        world.deposit("USD", "250000")
        world.set_price("BTCUSD", "60000")

    return build


def test_a_world_forked_from_this_modules_template(sandex_world):
    paxos = Paxos(
        sandex_world.base_url,
        sandex_world.token_url,
        sandex_world.client_id,
        sandex_world.client_secret,
    )
    assert paxos.available(sandex_world.profile_id, "USD") == Decimal("250000")
    assert paxos.available(sandex_world.profile_id, "BTC") == 0  # not the default template's
    assert sandex_world.client.get_price("BTCUSD").reference_price == Decimal("60000")
