"""The client against a real `sandex serve`: a lost answer (a dropped or reset
connection) exists only on a connection, so its retries are proven here."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from sandex.client import Client
from tests.support.server_helpers import Process
from tests.support.transfer_helpers import BTC_ADDRESS
from tests.support.world_helpers import MANUAL


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    where: Path = tmp_path_factory.mktemp("client-server")
    server = Process(where / "sandex.db", where / "serve.log")
    yield server
    server.stop()


@pytest.fixture
def world(served: Process) -> Iterator[Client]:
    """A fresh world of the server, through its own base URL as the server answered it."""
    with Client(
        f"{served.base}/v2", f"{served.base}/oauth2/token", "sandex", "sandex-secret"
    ) as admin:
        made = admin.create_world(**MANUAL)
        assert made.base_url.startswith(served.base)
        with Client.for_world(made) as client:
            yield client
        admin.delete_world(made.id)


def test_a_write_whose_answer_was_dropped_after_commit_is_found_once(world: Client) -> None:
    world.deposit("BTC", "1", crypto_network="BITCOIN")
    world.arm_fault({"operation": "CreateCryptoWithdrawal"}, {"drop": True}, when="after", times=1)
    body = {
        "profile_id": "default",
        "asset": "BTC",
        "amount": "0.001",
        "crypto_network": "BITCOIN",
        "destination_address": BTC_ADDRESS,
    }
    found = world.request(
        "POST",
        "/transfer/crypto-withdrawals",
        json=body,
        ref_id=True,
        found_at="/transfer/transfers/{id}",
    )
    assert found["type"] == "CRYPTO_WITHDRAWAL" and found["amount"] == "0.001"
    sent = list(world.iter_requests(operation="CreateCryptoWithdrawal"))
    assert [(r.status, r.fault is not None) for r in reversed(sent)] == [(200, True), (409, False)]
    transfers = world.request("GET", "/transfer/transfers")["items"]
    assert [t["id"] for t in transfers if t["type"] == "CRYPTO_WITHDRAWAL"] == [found["id"]]
    left = world.request("GET", "/profiles/default/balances/BTC")["available"]
    assert Decimal(left) == 1 - Decimal(found["total"])  # held once, amount and fee


def test_an_order_whose_answer_was_dropped_after_commit_is_found_once(world: Client) -> None:
    """The same through the fast lane, where CreateOrder is served: the retry's 409 leads
    the client to the one order, and the world holds one."""
    world.arm_fault({"operation": "CreateOrder"}, {"drop": True}, when="after", times=1)
    world.deposit("USD", "5000")
    order = {
        "market": "BTCUSD",
        "side": "BUY",
        "type": "LIMIT",
        "price": "20000",
        "base_amount": "0.1",
    }
    found = world.request(
        "POST",
        "/profiles/default/orders",
        json=order,
        ref_id=True,
        found_at="/profiles/default/orders/{id}",
    )
    assert (found["status"], Decimal(found["price"])) == ("OPEN", Decimal("20000"))
    sent = list(world.iter_requests(operation="CreateOrder"))
    assert [(r.status, r.fault is not None) for r in reversed(sent)] == [(200, True), (409, False)]
    orders = world.request("GET", "/profiles/default/orders")["items"]
    assert [o["id"] for o in orders] == [found["id"]]
    left = world.request("GET", "/profiles/default/balances/USD")["available"]
    assert Decimal(left) == Decimal("3000")  # 2,000 held once


def test_a_read_whose_connection_was_reset_is_read_again(world: Client) -> None:
    world.arm_fault({"operation": "GetSandboxPacing"}, {"reset": True}, times=1)
    assert world.get_pacing().withdrawal.mode == "default"
    sent = list(world.iter_requests(operation="GetSandboxPacing"))
    assert [r.fault is not None for r in reversed(sent)] == [True, False]
