"""The WebSocket market data feeds (docs/market-data.md): a client that applies the
UPDATEs to its SNAPSHOT holds the book `GET /v2/markets/{market}/order-book` shows after
every step of a seeded random order flow, and the execution feed gives every trade once,
in order."""

from __future__ import annotations

import asyncio
import random
from decimal import Decimal
from typing import Any

import pytest

from sandex.api_adapter.routes.market_stream import pump
from sandex.engine.kernel.money import MARKETS
from sandex.engine.runtime.market_feed import BOOK, TOO_SLOW, Subscriber
from tests.support.stream_helpers import (
    Book,
    apply,
    close_of,
    differing,
    from_order_book,
    from_snapshot,
    receive,
)
from tests.support.trading_helpers import book, set_price

TRADED = ("BTCUSD", "ETHUSD")


def _catch_up(ws: Any, held: dict[str, Book], shown: dict[str, Book]) -> None:
    """Read exactly the UPDATEs that take `held` to `shown` (one group's worth): each
    must change a level (no duplicate), and then the books must be equal (no gap)."""
    for _ in range(sum(differing(held[m], shown[m]) for m in shown)):
        message = receive(ws)
        assert message["market"] in shown, message
        assert apply(held[message["market"]], message), f"an UPDATE that changes nothing: {message}"
    assert held == shown


def _read_to(ws: Any, held: dict[str, Book], mark: str) -> None:
    """Apply UPDATEs, each of which must change a level (no duplicate), up to and with
    the BTCUSD bid level at `mark`: the only change of a group decided after every
    change of the step, so every UPDATE of the step came before it, in however many
    groups (a restored state trades at the next command, as deadlines that passed fire:
    the order-book reads fire them)."""
    while True:
        message = receive(ws)
        assert apply(held[message["market"]], message), f"an UPDATE that changes nothing: {message}"
        if (message["market"], message["side"], message["price"]) == ("BTCUSD", "BUY", mark):
            return


def _recent(sb: Any, market: str) -> list[dict[str, Any]]:
    r = sb.get(f"/v2/markets/{market}/recent-executions")
    assert r.status_code == 200, r.text
    return [{"market": market, **item} for item in reversed(r.json()["items"])]  # oldest first


def _step(
    sb: Any,
    rng: random.Random,
    profiles: list[str],
    open_orders: list[tuple[str, str]],
    taken: list[str],
) -> str:
    """One random change: an order placed (resting, crossing, market), one cancelled,
    the clock moved, a price set, a sandbox snapshot taken or restored."""
    roll = rng.random()
    market = rng.choice(TRADED)
    tick = MARKETS[market].tick
    if roll < 0.15:
        sb.advance(rng.choice([1, 2, 5, 30, 120]))
        return "advance"
    if roll < 0.22:
        mid = Decimal(book(sb, market)["bids"][0]["price"])
        price = (mid * Decimal(rng.uniform(0.99, 1.01)) / tick).quantize(Decimal(1)) * tick
        set_price(sb, str(price), market)
        return "price"
    if roll < 0.28:
        if roll < 0.25 or not taken:
            taken.append(f"s{len(taken)}")
            r = sb.post("/v2/sandbox/snapshots", {"name": taken[-1]})
            assert r.status_code == 200, r.text
            return "snapshot"
        r = sb.post(f"/v2/sandbox/snapshots/{rng.choice(taken)}/restore")
        assert r.status_code == 200, r.text
        return "restore"
    if roll < 0.38 and open_orders:
        profile, order_id = open_orders.pop(rng.randrange(len(open_orders)))
        sb.delete(f"/v2/profiles/{profile}/orders/{order_id}")
        return "cancel"
    side = rng.choice(["BUY", "SELL"])
    amount = str(Decimal(rng.randint(1, 400)) / 1000)
    if roll < 0.48:
        body: dict[str, Any] = {"market": market, "side": side, "type": "MARKET"}
        body["quote_amount" if side == "BUY" else "base_amount"] = (
            "2000" if side == "BUY" else amount
        )
    else:
        shown = book(sb, market)
        top = Decimal(shown["bids" if side == "BUY" else "asks"][0]["price"])
        ticks = rng.randint(-6, 12)  # some cross the spread, most rest behind the top
        offset = ticks * tick * (-1 if side == "BUY" else 1)
        price = top + offset
        body = {"market": market, "side": side, "type": "LIMIT", "price": str(price)}
        body["base_amount"] = amount
    profile = rng.choice(profiles)
    r = sb.post(f"/v2/profiles/{profile}/orders", body)
    assert r.status_code == 200, r.text
    if r.json()["status"] == "OPEN":
        open_orders.append((profile, r.json()["id"]))
    return body["type"]


@pytest.mark.slow
def test_a_client_applying_updates_holds_the_order_book_after_every_step(http_sandbox: Any) -> None:
    sb = http_sandbox
    desk = sb.post("/v2/profiles", {"nickname": "desk"}).json()["id"]
    for profile in ("default", desk):
        sb.deposit("USD", "50000000", profile)
        sb.deposit("BTC", "500", profile)
        sb.deposit("ETH", "5000", profile)
    rng = random.Random(19)
    open_orders: list[tuple[str, str]] = []
    with (
        sb.websocket_connect("/marketdata/BTCUSD") as one,
        sb.websocket_connect("/marketdata") as every,
        sb.websocket_connect("/executiondata") as trades,
    ):
        held_one = {"BTCUSD": from_snapshot(receive(one))}
        held_every: dict[str, Book] = {}
        for _ in MARKETS:
            snapshot = receive(every)
            held_every[snapshot["market"]] = from_snapshot(snapshot)
        assert sorted(held_every) == sorted(MARKETS)
        shown = {m: from_order_book(book(sb, m)) for m in MARKETS}
        assert held_one == {"BTCUSD": shown["BTCUSD"]} and held_every == shown
        seen: list[dict[str, Any]] = []
        taken: list[str] = []
        kinds = set()
        for i in range(100):
            kind = _step(sb, rng, ["default", desk], open_orders, taken)
            kinds.add(kind)
            shown = {m: from_order_book(book(sb, m)) for m in MARKETS}
            # Then a mark no step makes, in a group of its own: a bid far below the
            # market at a price of its own.
            mark = f"{1000 + i}.00"
            body = {"market": "BTCUSD", "side": "BUY", "type": "LIMIT", "price": mark}
            r = sb.post("/v2/profiles/default/orders", {**body, "base_amount": "0.001"})
            assert r.status_code == 200 and r.json()["status"] == "OPEN", r.text
            shown["BTCUSD"]["bids"][mark] = "0.00100000"
            _read_to(one, held_one, mark)
            _read_to(every, held_every, mark)
            assert held_one == {"BTCUSD": shown["BTCUSD"]}
            assert held_every == shown
            # Every trade once: the log's trades are those the markets list (a restore
            # brings an older list back, but trades are never taken back nor renumbered).
            known = {t["match_number"] for t in seen}
            recent = {m: _recent(sb, m) for m in TRADED}
            new = {m: [t for t in recent[m] if t["match_number"] not in known] for m in TRADED}
            came = [receive(trades) for _ in range(sum(len(v) for v in new.values()))]
            for market in TRADED:
                assert [t for t in came if t["market"] == market] == new[market]
            seen += came
        assert kinds == {"advance", "price", "snapshot", "restore", "cancel", "MARKET", "LIMIT"}
    assert len(seen) > 20
    numbers = [t["match_number"] for t in seen]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)


def test_the_execution_feed_starts_with_the_markets_last_trade(http_sandbox: Any) -> None:
    sb = http_sandbox
    sb.deposit("USD", "100000")
    for _ in range(2):
        r = sb.post(
            "/v2/profiles/default/orders",
            {"market": "BTCUSD", "side": "BUY", "type": "MARKET", "quote_amount": "100"},
        )
        assert r.status_code == 200, r.text
    last = _recent(sb, "BTCUSD")[-1]
    with sb.websocket_connect("/executiondata/BTCUSD") as ws:
        assert receive(ws) == last
        assert set(last) == {"market", "price", "amount", "executed_at", "match_number"}
        r = sb.post(
            "/v2/profiles/default/orders",
            {"market": "BTCUSD", "side": "BUY", "type": "MARKET", "quote_amount": "100"},
        )
        assert r.status_code == 200, r.text
        assert receive(ws) == _recent(sb, "BTCUSD")[-1]


def test_a_quiet_market_sends_nothing_but_its_snapshot_until_the_clock_moves(
    http_sandbox: Any,
) -> None:
    sb = http_sandbox
    with sb.websocket_connect("/marketdata/ETHUSD") as ws:
        held = {"ETHUSD": from_snapshot(receive(ws))}
        for _ in range(3):  # reads through the writer change nothing: no message
            assert from_order_book(book(sb, "ETHUSD")) == held["ETHUSD"]
        sb.advance(10)
        shown = {"ETHUSD": from_order_book(book(sb, "ETHUSD"))}
        assert differing(held["ETHUSD"], shown["ETHUSD"]) > 0
        _catch_up(ws, held, shown)


def test_an_unknown_market_is_closed_with_a_reason(http_sandbox: Any) -> None:
    with http_sandbox.websocket_connect("/marketdata/NOPEUSD") as ws:
        assert close_of(ws) == (1008, "unknown market: NOPEUSD")
    with http_sandbox.websocket_connect("/executiondata/NOPEUSD") as ws:
        assert close_of(ws) == (1008, "unknown market: NOPEUSD")


@pytest.mark.sandex(settings={"stream_connections_per_ip": 2})
def test_connections_per_address_are_limited(http_sandbox: Any) -> None:
    sb = http_sandbox
    with (
        sb.websocket_connect("/marketdata/BTCUSD") as first,
        sb.websocket_connect("/executiondata") as second,
    ):
        receive(first)
        with sb.websocket_connect("/marketdata") as third:
            assert close_of(third) == (1013, "too many connections: at most 2 per address")
        del second
    with sb.websocket_connect("/marketdata/BTCUSD") as again:  # the count went down
        assert receive(again)["type"] == "SNAPSHOT"


@pytest.mark.parametrize("path", ["/marketdata/BTCUSD", "/executiondata/BTCUSD"])
def test_the_feeds_need_no_token(http_sandbox: Any, path: str) -> None:
    http_sandbox.deposit("USD", "1000")
    http_sandbox.post(
        "/v2/profiles/default/orders",
        {"market": "BTCUSD", "side": "BUY", "type": "MARKET", "quote_amount": "100"},
    )
    with http_sandbox.websocket_connect(path, headers={}) as ws:
        assert receive(ws)["market"] == "BTCUSD"


@pytest.mark.sandex(clock="wall")
def test_on_a_wall_clock_the_ladders_moves_are_sent_with_no_command(http_sandbox: Any) -> None:
    sb = http_sandbox
    with sb.websocket_connect("/marketdata/BTCUSD") as ws:
        held = from_snapshot(receive(ws))
        message = receive(ws, seconds=10)  # the house's ladder moves each market step
        assert message["type"] == "UPDATE" and apply(held, message)


class _StuckClient:
    """A connection whose sends never complete (a client that stopped reading, its
    socket buffers full)."""

    def __init__(self) -> None:
        self.closed: tuple[int, str] | None = None

    async def send_text(self, text: str) -> None:
        await asyncio.Event().wait()

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        self.closed = (code, reason or "")


def _pumped(sub_limit: int, queued: list[str], timeout: float) -> tuple[int, str] | None:
    async def main() -> tuple[int, str] | None:
        ready = asyncio.Event()
        sub = Subscriber(BOOK, ("BTCUSD",), sub_limit, ready.set)
        sub.push(queued)
        client = _StuckClient()
        gone: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await asyncio.wait_for(pump(client, sub, ready, gone, timeout), 10)  # type: ignore[arg-type]
        return client.closed

    return asyncio.run(main())


def test_a_send_that_does_not_complete_in_time_closes_the_connection() -> None:
    closed = _pumped(10, ['{"type": "UPDATE"}'], timeout=0.2)
    assert closed == (1008, "too slow: a send did not complete in time")


def test_a_queue_that_overflows_closes_the_connection_with_its_reason() -> None:
    closed = _pumped(100, ["{}"] * 101, timeout=5)
    assert closed == (TOO_SLOW, "too slow: more than 100 messages unread")
