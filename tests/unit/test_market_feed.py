"""The market data feeds' hub inside the engine (engine/runtime/market_feed.py): a client
that does not read is cut off at its queue's limit while the writer goes on, and a failed
COMMIT publishes nothing of its group."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sandex.engine import open_engine
from sandex.engine.kernel.commands import AdvanceClock, ReadMarket, Tick
from sandex.engine.kernel.errors import Unavailable
from sandex.engine.kernel.money import MARKETS
from sandex.engine.runtime.market_feed import BOOK, RESTARTED, TOO_SLOW, Subscriber
from sandex.engine.store import StoreUnavailable
from tests.conftest import START, make_settings
from tests.support.command_helpers import funded_actor, limit_buy_command
from tests.support.stream_helpers import apply, from_order_book, from_snapshot


def _subscriber(markets: tuple[str, ...] = ("BTCUSD",), limit: int = 10_000) -> Subscriber:
    return Subscriber(BOOK, markets, limit, lambda: None)


def _messages(sub: Subscriber) -> list[dict[str, Any]]:
    items, end = sub.take()
    assert end is None, end
    return [json.loads(text) for text in items]


def _fail_next_commit(engine: Any) -> None:
    real = engine.store.finish

    def refused() -> None:
        engine.store.finish = real
        engine.store._undo()
        raise StoreUnavailable("disk I/O error")

    engine.store.finish = refused


def test_a_client_that_does_not_read_is_ended_at_its_limit_and_the_writer_goes_on(
    tmp_path: Path,
) -> None:
    with open_engine(tmp_path / "f.db", make_settings()) as engine:
        sub = _subscriber(tuple(MARKETS), limit=100)
        engine.market_feed.subscribe(sub)
        engine.execute(Tick())
        assert engine.market_feed.subscribers() == 1
        for minute in range(1, 4):  # each move of every ladder: hundreds of UPDATEs
            engine.execute(AdvanceClock(to=START.replace(minute=minute)))
        items, end = sub.take()
        assert items == [] and end is not None and end[0] == TOO_SLOW
        assert engine.market_feed.subscribers() == 0
        assert engine.execute(ReadMarket(view="book", market="BTCUSD"))["bids"]


def test_a_failed_commit_publishes_nothing_and_the_next_group_brings_the_log_s_book(
    tmp_path: Path,
) -> None:
    with open_engine(tmp_path / "f.db", make_settings()) as engine:
        me = funded_actor(engine.execute, "1000000")
        sub = _subscriber()
        engine.market_feed.subscribe(sub)
        engine.execute(Tick())
        (snapshot,) = _messages(sub)
        held = from_snapshot(snapshot)
        _fail_next_commit(engine)
        with pytest.raises(Unavailable):
            engine.execute(limit_buy_command(me, "30000.00", "0.5"))
        assert _messages(sub) == []  # nothing of the failed group
        engine.execute(limit_buy_command(me, "30000.25", "0.25"))
        for message in _messages(sub):
            assert apply(held, message), f"an UPDATE that changes nothing: {message}"
        shown = from_order_book(engine.execute(ReadMarket(view="book", market="BTCUSD")))
        assert held == shown
        assert "30000.25" in shown["bids"] and "30000.00" not in shown["bids"]


def test_a_subscriber_whose_snapshot_group_failed_is_ended_to_connect_again(
    tmp_path: Path,
) -> None:
    with open_engine(tmp_path / "f.db", make_settings()) as engine:
        me = funded_actor(engine.execute, "1000000")
        sub = _subscriber()
        engine.market_feed.subscribe(sub)
        _fail_next_commit(engine)
        with pytest.raises(Unavailable):
            engine.execute(limit_buy_command(me, "30000.00", "0.5"))
        engine.execute(Tick())  # the writer reloads its state before deciding it
        items, end = sub.take()
        assert items == [] and end is not None and end[0] == RESTARTED
        assert engine.market_feed.subscribers() == 0


def test_connections_opening_together_ask_the_writer_for_one_group(tmp_path: Path) -> None:
    with open_engine(tmp_path / "f.db", make_settings()) as engine:
        feed = engine.market_feed
        first, second, third = _subscriber(), _subscriber(), _subscriber()
        assert feed.subscribe(first) is True
        assert feed.subscribe(second) is False  # the group asked for takes both
        engine.execute(Tick())
        assert _messages(first) == _messages(second) != []
        assert feed.subscribe(third) is True


def test_the_hub_counts_who_waits_for_first_messages_and_every_message_queued(
    tmp_path: Path,
) -> None:
    """What a replay waits on (docs/scenarios.md): no subscriber waiting, and as many
    messages received as the hub queued to the current subscribers."""
    with open_engine(tmp_path / "f.db", make_settings()) as engine:
        feed = engine.market_feed
        book = _subscriber()
        feed.subscribe(book)
        assert (feed.waiting(), feed.pushed()) == (1, 0)
        engine.execute(Tick())
        assert (feed.waiting(), feed.pushed()) == (0, 1)  # the snapshot
        engine.execute(AdvanceClock(to=START.replace(minute=1)))
        moved = len(_messages(book)) - 1
        assert moved > 0 and feed.pushed() == 1 + moved
        later = _subscriber(("ETHUSD",))
        feed.subscribe(later)
        assert feed.waiting() == 1
        engine.execute(Tick())
        assert (feed.waiting(), feed.pushed()) == (0, 2 + moved)
        feed.unsubscribe(book)
        assert feed.pushed() == 1  # a subscriber gone takes its count with it
