"""Shared by the market data feed tests: a WebSocket test session read with a deadline,
and a book kept from a SNAPSHOT and its UPDATEs as a client keeps it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

# price text -> amount text, per side
Book = dict[str, dict[str, str]]


def _in_process(ws: Any) -> bool:
    """Whether `ws` is a Starlette WebSocket test session (else a `websockets` client's
    connection over a real socket: a plugin world's feed)."""
    return hasattr(ws, "portal")


def _next(ws: Any, seconds: float) -> Any:
    async def within() -> Any:
        async with asyncio.timeout(seconds):
            return await ws._send_rx.receive()

    return ws.portal.call(within)


def receive(ws: Any, seconds: float = 10) -> dict[str, Any]:
    """The next message of a WebSocket session, failing (not hanging) when none comes
    within `seconds`."""
    if not _in_process(ws):
        return json.loads(ws.recv(timeout=seconds))  # type: ignore[no-any-return]
    message = _next(ws, seconds)
    ws._raise_on_close(message)
    return json.loads(message["text"])  # type: ignore[no-any-return]


def close_of(ws: Any, seconds: float = 10) -> tuple[int, str]:
    """The code and reason the server closed the session with."""
    if not _in_process(ws):
        from websockets.exceptions import ConnectionClosed

        try:
            message = ws.recv(timeout=seconds)
        except ConnectionClosed as closed:
            assert closed.rcvd is not None, closed
            return closed.rcvd.code, closed.rcvd.reason
        raise AssertionError(f"a message, not a close: {message!r}")
    message = _next(ws, seconds)
    assert message["type"] == "websocket.close", message
    return int(message["code"]), str(message.get("reason") or "")


def from_snapshot(message: dict[str, Any]) -> Book:
    assert message["type"] == "SNAPSHOT" and message["final_snapshot"] is True, message
    return {
        "bids": {level["price"]: level["amount"] for level in message["bids"]},
        "asks": {level["price"]: level["amount"] for level in message["asks"]},
    }


def from_order_book(body: dict[str, Any]) -> Book:
    return {
        "bids": {level["price"]: level["amount"] for level in body["bids"]},
        "asks": {level["price"]: level["amount"] for level in body["asks"]},
    }


def differing(held: Book, shown: Book) -> int:
    """How many levels differ between two books: the UPDATEs that must come."""
    n = 0
    for side in ("bids", "asks"):
        a, b = held[side], shown[side]
        n += sum(1 for p in a.keys() | b.keys() if a.get(p) != b.get(p))
    return n


def apply(book: Book, message: dict[str, Any]) -> bool:
    """Apply one UPDATE as the service says a client does; False when it changed nothing
    (a duplicate)."""
    assert message["type"] == "UPDATE" and set(message) == {
        "type",
        "market",
        "side",
        "price",
        "amount",
    }, message
    levels = book["bids" if message["side"] == "BUY" else "asks"]
    before = levels.get(message["price"])
    if message["amount"] == "0":
        levels.pop(message["price"], None)
        return before is not None
    levels[message["price"]] = message["amount"]
    return before != message["amount"]
