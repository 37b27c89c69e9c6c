"""Retries (429 and 5xx, honouring Retry-After, bounded), tokens fetched again, the
paging iterators, and the async client: each against armed faults of the real app."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from sandex.api_adapter.worlds.dispatch import WorldDispatch
from sandex.client import (
    AsyncClient,
    Client,
    InternalServerError,
    Retries,
    ServiceUnavailableError,
    TooManyRequestsError,
)
from tests.client.conftest import BASE, Sleeps
from tests.support.world_helpers import MANUAL


def statuses(world: Client, operation: str) -> list[int]:
    """The statuses `operation`'s calls were answered with, oldest first."""
    return [r.status for r in reversed(list(world.iter_requests(operation=operation)))]


def test_a_call_refused_503_twice_succeeds_on_its_third_attempt(
    world: Client, sleeps: Sleeps
) -> None:
    world.arm_fault({"operation": "CreateSandboxCustomer"}, {"problem": {"status": 503}}, times=2)
    assert world.create_customer().client_id
    assert statuses(world, "CreateSandboxCustomer") == [503, 503, 200]
    assert sleeps == [1.0, 1.0]  # the fault's Retry-After, each time


def test_a_429_waits_what_retry_after_says(world: Client, sleeps: Sleeps) -> None:
    world.arm_fault(
        {"operation": "GetSandboxClock"}, {"problem": {"status": 429, "retry_after": 7}}, times=1
    )
    assert world.get_clock().mode == "manual"
    assert sleeps == [7.0]
    world.arm_fault(
        {"operation": "GetSandboxClock"}, {"problem": {"status": 429, "retry_after": 3600}}
    )
    with pytest.raises(TooManyRequestsError):  # longer than the policy waits: at once
        world.get_clock()
    assert sleeps == [7.0]


def test_retries_are_bounded_and_back_off(world: Client, sleeps: Sleeps) -> None:
    world.retries = Retries(max_retries=2, backoff=0.5, max_backoff=10)
    world.arm_fault({"operation": "GetSandboxPacing"}, {"problem": {"status": 500}})
    with pytest.raises(InternalServerError):
        world.get_pacing()
    assert statuses(world, "GetSandboxPacing") == [500, 500, 500]
    first, second = sleeps  # no Retry-After: half to all of 0.5 s, then of 1 s
    assert 0.25 <= first <= 0.5 and 0.5 <= second <= 1.0


def test_a_write_without_ref_id_is_not_repeated_when_it_may_have_been_done(
    world: Client, sleeps: Sleeps
) -> None:
    world.arm_fault(
        {"operation": "CreateSandboxCustomer"},
        {"problem": {"status": 500}},
        when="after",
        times=1,
    )
    with pytest.raises(InternalServerError):
        world.create_customer()
    assert statuses(world, "CreateSandboxCustomer") == [500]
    assert sleeps == []


def test_a_retried_write_resends_its_ref_id_and_finds_its_one_write(world: Client) -> None:
    world.deposit("BTC", "1", crypto_network="BITCOIN")
    world.arm_fault(
        {"operation": "CreateCryptoWithdrawal"},
        {"problem": {"status": 502}},
        when="after",
        times=1,
    )
    body = {
        "profile_id": "default",
        "asset": "BTC",
        "amount": "0.001",
        "crypto_network": "BITCOIN",
        "destination_address": "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2",
    }
    found = world.request(
        "POST",
        "/transfer/crypto-withdrawals",
        json=body,
        ref_id=True,
        found_at="/transfer/transfers/{id}",
    )
    assert found["ref_id"].startswith("sandex-") and found["type"] == "CRYPTO_WITHDRAWAL"
    assert statuses(world, "CreateCryptoWithdrawal") == [502, 409]
    transfers = world.request("GET", "/transfer/transfers")["items"]
    assert [t["id"] for t in transfers if t["type"] == "CRYPTO_WITHDRAWAL"] == [found["id"]]


def test_a_refused_token_is_fetched_again(world: Client) -> None:
    world.token()
    world._token.keep({"access_token": "revoked-or-expired", "expires_in": 3600})
    assert world.list_faults() == []  # refused 401, then sent again with a new token
    assert world.token() != "revoked-or-expired"


def test_the_paging_iterators_walk_every_page(admin: Client, world: Client) -> None:
    for amount in ("1", "2", "3", "4", "5"):
        world.deposit("USD", amount)
    whole = world.list_events(limit=100)
    assert [e.id for e in world.iter_events(limit=2)] == [e.id for e in whole.events]
    assert len(whole.events) == 5 and world.list_events(limit=2).next_page_cursor

    everything = world.list_requests(limit=1000)
    assert [r.id for r in world.iter_requests(limit=3)] == [r.id for r in everything.items]
    assert len(everything.items) > 6

    made = [admin.create_world(**MANUAL).id for _ in range(3)]
    walked = [w.id for w in admin.iter_worlds(limit=1)]
    assert walked == [w.id for w in admin.list_worlds(limit=100).items]
    assert set(made) <= set(walked) and admin.list_worlds(limit=1).next_page_cursor


def test_the_async_client_round_trips_retries_and_pages(front: Any) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async def run() -> None:
        transport = httpx.ASGITransport(app=WorldDispatch(front.sandbox.app))
        async with httpx.AsyncClient(transport=transport) as http:
            admin = AsyncClient(
                f"{BASE}/v2", f"{BASE}/oauth2/token", "sandex", "sandex-secret", http=http
            )
            made = await admin.create_world(**MANUAL)
            async with AsyncClient.for_world(made, http=http, sleep=sleep) as world:
                assert (await world.advance_clock(60)).now.minute == 1
                await world.deposit("USD", "7")
                await world.deposit("USD", "8")
                events = [e async for e in world.iter_events(limit=1)]
                assert [e.object["amount"] for e in events if e.object] == ["7", "8"]
                await world.arm_fault(
                    {"operation": "GetSandboxClock"}, {"problem": {"status": 503}}, times=2
                )
                assert (await world.get_clock()).mode == "manual"
                assert waits == [1.0, 1.0]
                await world.arm_fault(
                    {"operation": "GetSandboxClock"}, {"problem": {"status": 503}}
                )
                with pytest.raises(ServiceUnavailableError):
                    await world.get_clock()
                ids = [w.id async for w in admin.iter_worlds(limit=1)]
                assert made.id in ids
                assert (await admin.delete_world(made.id)).deleted

    asyncio.run(run())
