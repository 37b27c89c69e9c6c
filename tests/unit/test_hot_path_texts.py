"""The shortcuts of the order path (integer texts, view caches) give what their plain
definitions give."""

from __future__ import annotations

import hashlib
import random
import uuid
from datetime import UTC, datetime
from decimal import Decimal, localcontext
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sandex.engine.domain.feed import _prefix, event_id
from sandex.engine.domain.trading import order_views
from sandex.engine.domain.trading.amount_texts import UNIT, gross_text
from sandex.engine.domain.trading.book import BUY
from sandex.engine.domain.trading.order import Order
from sandex.engine.kernel.clock import format_time, parse_time, to_millis
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.ids import time_prefix
from sandex.engine.kernel.money import MARKETS, format_normal
from sandex.engine.kernel.state import State


def _gross_by_decimal(market: str, ticks: int, units: int) -> str:
    return format_normal(Decimal(ticks * units) * MARKETS[market].tick * UNIT)


def test_gross_text_is_the_normalized_decimal_product() -> None:
    rng = random.Random(7)
    cases = [(0, 0), (1, 1), (4, 25_000_000), (170_000, 100_000_000), (10**13, 10**14)]
    cases += [(rng.randint(1, 10**8), rng.randint(1, 10**16)) for _ in range(3000)]
    for market in MARKETS:
        for ticks, units in cases:
            for prec in (28, 100):
                with localcontext() as c:
                    c.prec = prec
                    expected = _gross_by_decimal(market, ticks, units)
                assert gross_text(market, ticks, units) == expected, (market, ticks, units)


def test_gross_text_of_a_huge_product_takes_the_decimal_path() -> None:
    ticks, units = 10**15, 10**15  # 30 digits: past the exact integer shortcut
    assert gross_text("BTCUSD", ticks, units) == _gross_by_decimal("BTCUSD", ticks, units)


def test_event_id_is_the_version_7_uuid_of_the_event_time_and_the_digest() -> None:
    times = [
        "2024-01-01T00:00:00.000000Z",
        "2024-03-05T10:11:12.345678Z",
        "1970-01-01T00:00:00.001000Z",
    ]
    for k in range(2000):
        at = times[k % len(times)]
        e = Event("OrderFilled", f"order-{k}", {}, k + 1, k % 9 + 1, at, {})
        ms = to_millis(parse_time(at))
        for rank in (0, 1):
            digest = hashlib.blake2b(
                f"{e.stream}:{e.version}:{rank}".encode(), digest_size=16
            ).digest()
            bits = int.from_bytes(digest[:10], "big")  # 80 bits: 12 then 62 are used
            rand_a, rand_b = bits >> 68, (bits >> 4) & ((1 << 62) - 1)
            value = ms << 80 | 7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
            made = uuid.UUID(event_id(e, rank))
            assert str(made) == str(uuid.UUID(int=value))
            assert made.version == 7 and made.variant == uuid.RFC_4122


@settings(max_examples=500, derandomize=True, deadline=None)
@given(st.datetimes(min_value=datetime(1, 1, 2), timezones=st.just(UTC)))
@example(datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=UTC))
@example(datetime(1970, 1, 1, 0, 0, 0, 999, tzinfo=UTC))
def test_a_feed_id_s_time_prefix_is_looked_up_by_the_millisecond(t: datetime) -> None:
    """The prefix cached by the time's text cut to the millisecond is the prefix of the
    time itself, before 1970 too (where cutting the text and flooring since the epoch
    could part: they do not)."""
    assert _prefix(format_time(t)) == time_prefix(to_millis(t))
    assert _prefix(format_time(t).replace("Z", "+00:00")) == time_prefix(to_millis(t))


def _order(k: int) -> Order:
    o = Order()
    o.id, o.profile_id, o.customer_id, o.market = f"o{k}", "p", "c", "BTCUSD"
    o.side, o.type, o.tif, o.status = BUY, "LIMIT", "GTC", "OPEN"
    o.ticks, o.qty, o.quote, o.stop_ticks = 168_000, 100_000_000, None, 0
    o.expires = o.ref_id = o.metadata = o.identity_id = o.identity_account_id = None
    o.recipient = None
    o.created_at = o.modified_at = "2024-01-01T00:00:00.000000Z"
    return o


def test_a_taker_and_its_maker_shown_in_turn_are_built_once_each(monkeypatch: Any) -> None:
    built: list[str] = []
    build = order_views._build_view

    def counted(o: Order) -> dict[str, Any]:
        built.append(o.id)
        return build(o)

    monkeypatch.setattr(order_views, "_build_view", counted)
    state, taker, maker = State(), _order(1), _order(2)
    for k in range(1, 4):
        for o in (taker, maker):
            o.filled, o.spent = k * 1000, k * 1000 * 168_000
            o.modified_at = f"2024-01-01T00:00:0{k}.000000Z"
            assert order_views.shown_view(state, o) == build(o)
            assert order_views.order_view(state, o) == build(o)
    assert built == ["o1", "o2"]
