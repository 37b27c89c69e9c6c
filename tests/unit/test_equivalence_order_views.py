"""An order's view, built by either branch of `_build_view` (no optional field, most
orders, or any), reused and patched by the cache of `shown_view`, copied by `order_view`
and serialized into the read model's row, is the view its plain definition gives
(tests/support/equivalence_helpers.py), key order included.

Already covered: tests/unit/test_hot_path_texts.py checks, for one order without optional
fields, that a taker and its maker shown in turn are built once each and equal
`_build_view`; nothing held either branch to a definition, nor the cache's patching to
a fresh build, for orders with optional fields or any status, type or amount."""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from sandex.engine.domain.trading import Order, order_rows, order_views, trading_state
from sandex.engine.domain.trading.book import BUY, SELL
from sandex.engine.domain.trading.order_types import ORDER_TYPES
from sandex.engine.kernel.money import MARKETS
from sandex.engine.kernel.state import State
from tests.support import equivalence_helpers as plain

STATUSES = ("PENDING_SUBMISSION", "SUBMITTED", "OPEN", "FILLED", "CANCELLED", "REJECTED")
TYPES = tuple(ORDER_TYPES)
# The fields a view shows only when the order has them, and what `_build_view` tests.
OPTIONAL = ("ref_id", "expires", "identity", "stop", "recipient")
TIME_IN_FORCE_OF = {kind: sorted(row.tifs) for kind, row in ORDER_TYPES.items()}
T0 = "2024-01-01T00:00:00.000000Z"


def make_order(
    key: str,
    *,
    market: str = "BTCUSD",
    side: int = BUY,
    type_: str = "LIMIT",
    status: str = "OPEN",
    tif: str = "GTC",
    ticks: int = 170_000,
    qty: int = 100_000_000,
    quote: Decimal | None = None,
    stop_ticks: int = 0,
    filled: int = 0,
    spent: int = 0,
    triggered: bool = False,
    ref_id: str | None = None,
    expires: str | None = None,
    identity: bool = False,
    recipient: str | None = None,
    metadata: dict[str, str] | None = None,
) -> Order:
    o = Order()
    o.id, o.profile_id, o.customer_id, o.market = key, f"p-{key}", f"c-{key}", market
    o.side, o.type, o.tif, o.status = side, type_, tif, status
    o.ticks, o.qty, o.quote, o.stop_ticks = ticks, qty, quote, stop_ticks
    o.budget = 0
    o.filled, o.spent, o.triggered = filled, spent, triggered
    o.ref_id, o.expires, o.recipient, o.metadata = ref_id, expires, recipient, metadata
    o.identity_id = f"i-{key}" if identity else None
    o.identity_account_id = f"a-{key}" if identity else None
    o.smp_id = None
    o.created_at = o.modified_at = T0
    o.seq = 1
    return o


def assert_shown_as_defined(o: Order) -> None:
    expected = list(plain.order_view(o).items())
    state = State()
    assert list(order_views._build_view(o).items()) == expected
    assert list(order_views.shown_view(state, o).items()) == expected
    assert list(order_views.order_view(state, o).items()) == expected
    trading_state(state).orders[o.id] = o
    row = order_rows._order_row(state, o.id)
    assert row is not None
    assert row["body"] == orjson.dumps(dict(expected)).decode()


def test_every_type_status_and_optional_field_combination_shows_as_defined() -> None:
    markets = itertools.cycle(MARKETS)
    for n, (type_, status, present, quote, metadata) in enumerate(
        itertools.product(
            TYPES,
            STATUSES,
            itertools.product((False, True), repeat=len(OPTIONAL)),
            (None, Decimal("1234.5")),
            (None, {}, {"desk": "a", "book": "b"}),
        )
    ):
        has = dict(zip(OPTIONAL, present, strict=True))
        o = make_order(
            f"o{n}",
            market=next(markets),
            side=(BUY, SELL)[n % 2],
            type_=type_,
            status=status,
            tif=TIME_IN_FORCE_OF[type_][n % len(TIME_IN_FORCE_OF[type_])],
            ticks=0 if quote is not None else 170_001,
            qty=0 if quote is not None else 123_456_789,
            quote=quote,
            stop_ticks=160_003 if has["stop"] else 0,
            filled=n % 3 * 41_152_263,
            spent=n % 3 * 41_152_263 * 170_001,
            triggered=has["stop"] and n % 2 == 0,
            ref_id=f"ref-{n}" if has["ref_id"] else None,
            expires="2024-01-02T00:00:00.000000Z" if has["expires"] else None,
            identity=has["identity"],
            recipient=f"r-{n}" if has["recipient"] else None,
            metadata=metadata,
        )
        assert_shown_as_defined(o)


amount = st.one_of(st.just(0), st.integers(1, 10**9), st.integers(0, 10**20))


@st.composite
def any_order(draw: st.DrawFn, key: str) -> Order:
    type_ = draw(st.sampled_from(TYPES))
    quote = draw(st.one_of(st.none(), st.decimals(0, 10**9, places=2)))
    return make_order(
        key,
        market=draw(st.sampled_from(sorted(MARKETS))),
        side=draw(st.sampled_from((BUY, SELL))),
        type_=type_,
        status=draw(st.sampled_from(STATUSES)),
        tif=draw(st.sampled_from(TIME_IN_FORCE_OF[type_])),
        ticks=draw(amount),
        qty=draw(amount),
        quote=quote,
        stop_ticks=draw(st.one_of(st.just(0), amount)),
        filled=draw(amount),
        spent=draw(st.integers(0, 10**30)),
        triggered=draw(st.booleans()),
        ref_id=draw(st.one_of(st.none(), st.text(max_size=8))),
        expires=draw(st.one_of(st.none(), st.just("2024-02-01T00:00:00.000000Z"))),
        identity=draw(st.booleans()),
        recipient=draw(st.one_of(st.none(), st.just("r"))),
        metadata=draw(
            st.one_of(st.none(), st.dictionaries(st.text(max_size=4), st.text(max_size=4)))
        ),
    )


# What happens to an order between two views: the fields events change, or nothing.
change = st.one_of(
    st.tuples(st.just("status"), st.sampled_from(STATUSES)),
    st.tuples(st.just("modified_at"), st.sampled_from((T0, "2024-01-01T00:00:01.000000Z"))),
    st.tuples(st.just("fill"), st.tuples(st.integers(0, 10**9), st.integers(0, 10**6))),
    st.tuples(st.just("spent"), st.integers(0, 10**15)),  # the same units at a new cost
    st.tuples(st.just("triggered"), st.booleans()),
    st.tuples(st.just("nothing"), st.none()),
)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    st.tuples(any_order("x"), any_order("y"), any_order("z")),
    st.lists(
        st.tuples(st.integers(0, 2), change, st.sampled_from(("shown", "copy", "build"))),
        max_size=30,
    ),
)
def test_views_cached_and_patched_between_changes_stay_as_defined(
    three: tuple[Order, Order, Order], steps: list[tuple[int, tuple[str, Any], str]]
) -> None:
    """Orders shown in any interleaving, each changed by events between its views: the
    cached or patched view is always the fresh one, a copy handed out and changed by its
    caller changes nothing shown later, and a view once shown stays as it was shown."""
    state = State()
    for o in three:
        assert_shown_as_defined(o)
    held: list[tuple[dict[str, Any], list[tuple[str, Any]]]] = []
    for which, (what, value), reader in steps:
        o = three[which]
        if what == "status":
            o.status = value
        elif what == "modified_at":
            o.modified_at = value
        elif what == "fill":
            units, ticks = value
            o.filled += units
            o.spent += units * ticks
        elif what == "spent":
            o.spent = value
        elif what == "triggered":
            o.triggered = value
        expected = list(plain.order_view(o).items())
        if reader == "shown":
            shown = order_views.shown_view(state, o)
            assert list(shown.items()) == expected
            held.append((shown, expected))
        elif reader == "copy":
            view = order_views.order_view(state, o)
            assert list(view.items()) == expected
            view["status"] = "SCRIBBLED"
            view["amount_filled"] = "-1"
        else:
            assert list(order_views._build_view(o).items()) == expected
    for o in three:
        assert list(order_views.shown_view(state, o).items()) == list(plain.order_view(o).items())
    for shown, expected in held:
        assert list(shown.items()) == expected
