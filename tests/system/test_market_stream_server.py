"""The market data feed through a real `sandex serve` (uvicorn) on loopback, read with
the `websockets` client: a SNAPSHOT, then the UPDATEs of a clock move, equal to
`GET /v2/markets/{market}/order-book` after it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tests.support.server_helpers import Server
from tests.support.stream_helpers import Book, apply, differing, from_order_book, from_snapshot


def _book(server: Server, market: str) -> Book:
    r = httpx.get(f"{server.base}/v2/markets/{market}/order-book")
    assert r.status_code == 200, r.text
    return from_order_book(r.json())


def test_a_snapshot_and_a_clock_move_through_uvicorn(tmp_path: Path, servers: Any) -> None:  # noqa: F811
    server = Server(tmp_path / "ws.db", "--clock", "manual")
    servers.append(server)
    ws_base = server.base.replace("http://", "ws://")
    with connect(f"{ws_base}/marketdata/BTCUSD", open_timeout=10) as ws:
        held = from_snapshot(json.loads(ws.recv(timeout=10)))
        assert held == _book(server, "BTCUSD")
        r = httpx.post(
            f"{server.base}/v2/sandbox/clock",
            json={"advance_seconds": 30},
            headers=server.token(),
        )
        assert r.status_code == 200, r.text
        shown = _book(server, "BTCUSD")
        changes = differing(held, shown)
        assert changes > 0
        for _ in range(changes):
            message = json.loads(ws.recv(timeout=10))
            assert message["market"] == "BTCUSD"
            assert apply(held, message), message
        assert held == shown
        ws.send("ignored")  # the feed reads no messages: one closes the connection
        try:
            ws.recv(timeout=10)
        except ConnectionClosed as closed:
            assert closed.rcvd is not None
            assert (closed.rcvd.code, closed.rcvd.reason) == (1008, "the feed reads no messages")
        else:
            raise AssertionError("a message did not close the connection")
    with connect(f"{ws_base}/marketdata/NOPE", open_timeout=10) as ws:
        try:
            ws.recv(timeout=10)
        except ConnectionClosed as closed:
            assert closed.rcvd is not None
            assert (closed.rcvd.code, closed.rcvd.reason) == (1008, "unknown market: NOPE")
        else:
            raise AssertionError("an unknown market was not closed")


def test_the_server_stops_with_feeds_open(tmp_path: Path, servers: Any) -> None:  # noqa: F811
    server = Server(tmp_path / "ws.db", "--clock", "manual")
    servers.append(server)
    ws_base = server.base.replace("http://", "ws://")
    with (
        connect(f"{ws_base}/marketdata", open_timeout=10) as every,
        connect(f"{ws_base}/executiondata/BTCUSD", open_timeout=10),
    ):
        assert json.loads(every.recv(timeout=10))["type"] == "SNAPSHOT"
        code, _, err = server.stop()
        assert code == 0, err[-2000:]
        try:
            while True:
                every.recv(timeout=10)
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code in (1001, 1012)
