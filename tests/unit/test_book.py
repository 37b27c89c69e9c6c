"""The book, the matching plan and the price path, as units."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from sandex.engine.config.settings import Settings
from sandex.engine.domain.trading.book import BUY, SELL, Book
from sandex.engine.domain.trading.ladder import Window
from sandex.engine.domain.trading.market import MarketConfig, new_markets
from sandex.engine.domain.trading.matching import house_plan, plan, self_match
from sandex.engine.domain.trading.reference_price import Noise, exp

NO_DB = settings(database=None, deadline=None, derandomize=True)


@dataclass(eq=False)
class Ord:
    id: str
    side: int
    ticks: int
    remaining: int
    customer_id: str = "c1"
    smp_id: str | None = None
    live: bool = False


def rest(book: Book, *orders: Ord) -> None:
    for o in orders:
        book.add(o)


def test_the_best_level_of_each_side_comes_first() -> None:
    book = Book()
    rest(
        book,
        Ord("a", BUY, 100, 5),
        Ord("b", BUY, 102, 5),
        Ord("c", SELL, 110, 5),
        Ord("d", SELL, 105, 5),
    )
    assert (book.best_bid(), book.best_ask()) == (102, 105)
    assert [lv.ticks for lv in book.levels(BUY)] == [102, 100]
    assert [lv.ticks for lv in book.levels(SELL)] == [105, 110]


def test_price_then_time_priority_and_trades_at_the_resting_price() -> None:
    book = Book()
    early, late, better = (
        Ord("early", SELL, 105, 3),
        Ord("late", SELL, 105, 3),
        Ord("b", SELL, 104, 1),
    )
    rest(book, early, late, better)
    p = plan(book, BUY, 106, 6, None, [], "c2", None)
    assert [(o.id, t, u) for o, t, u in p.steps] == [
        ("b", 104, 1),
        ("early", 105, 3),
        ("late", 105, 2),
    ]
    assert (p.filled, p.spent) == (6, 104 + 5 * 105)
    assert early.remaining == 3  # a plan reads, it never changes the book


def test_real_orders_come_before_the_house_at_an_equal_price() -> None:
    book = Book()
    rest(book, Ord("r", SELL, 105, 2))
    p = plan(book, BUY, 106, 5, None, [[104, 1], [105, 10]], "c2", None)
    assert [(o.id if o else "house", t, u) for o, t, u in p.steps] == [
        ("house", 104, 1),
        ("r", 105, 2),
        ("house", 105, 2),
    ]
    assert p.house == [(104, 1), (105, 2)]


def test_a_limit_stops_the_walk() -> None:
    p = plan(Book(), SELL, 100, 10, None, [[101, 4], [100, 3], [99, 50]], "c", None)
    assert (p.filled, p.spent) == (7, 4 * 101 + 3 * 100)


def test_a_market_buy_budget_buys_whole_units_and_says_when_it_is_spent() -> None:
    p = plan(Book(), BUY, None, None, 1000, [[300, 2], [400, 10]], "c", None)
    assert [(t, u) for _, t, u in p.steps] == [(300, 2), (400, 1)]
    assert (p.spent, p.exhausted) == (1000, True)
    dry = plan(Book(), BUY, None, None, 10_000, [[300, 2]], "c", None)
    assert (dry.filled, dry.exhausted) == (2, False)


def test_self_match_rule() -> None:
    mine = Ord("m", SELL, 100, 1, customer_id="c1")
    assert self_match(mine, "c1", None)
    assert self_match(Ord("m", SELL, 100, 1, "c1", "x"), "c1", "x")
    assert self_match(Ord("m", SELL, 100, 1, "c1", None), "c1", "x")
    assert not self_match(Ord("m", SELL, 100, 1, "c1", "x"), "c1", "y")
    assert not self_match(mine, "c2", None)
    book = Book()
    rest(book, mine, Ord("t", SELL, 101, 1, customer_id="c2"))
    p = plan(book, BUY, 101, 1, None, [], "c1", None)
    assert [(o.id, u) for o, _, u in p.steps] == [("m", 0), ("t", 1)]


def test_cancel_is_lazy_and_levels_stay_exact() -> None:
    book = Book()
    orders = [Ord(str(i), BUY, 100, 1) for i in range(100)]
    rest(book, *orders)
    for o in orders[:90]:
        book.remove(o)
    (level,) = book.levels(BUY)
    assert (level.count, level.total) == (10, 10)
    assert len(level.queue) <= 2 * level.count + 16  # dead entries were compacted away
    assert [o.id for o in level.live()] == [str(i) for i in range(90, 100)]
    for o in orders[90:]:
        book.remove(o)
    assert book.best_bid() is None and len(book) == 0


def test_fills_take_filled_orders_and_empty_levels_out() -> None:
    book = Book()
    a, b = Ord("a", SELL, 100, 2), Ord("b", SELL, 100, 2)
    rest(book, a, b)
    book.fill(a, 1)
    assert (a.remaining, a.live) == (1, True)
    book.fill(a, 1)
    assert not a.live and next(iter(book.levels(SELL))).queue[0] is b
    book.fill(b, 2)
    assert book.best_ask() is None


def test_the_house_fills_crossed_resting_orders_at_their_own_price() -> None:
    book = Book()
    top, next_, far = Ord("top", BUY, 105, 3), Ord("next", BUY, 103, 5), Ord("far", BUY, 90, 1)
    rest(book, top, next_, far)
    out = house_plan(book, BUY, [[101, 2], [102, 2], [104, 10]])
    assert [(o.id, u, taken) for o, u, taken in out] == [
        ("top", 3, [[101, 2], [102, 1]]),
        ("next", 1, [[102, 1]]),
    ]


@given(
    st.lists(st.integers(90, 110), min_size=40, max_size=40),
    st.integers(0, 39),
    st.integers(95, 105),
    st.integers(95, 120),
    st.integers(85, 100),
)
@NO_DB
def test_first_cross_finds_what_a_scan_of_every_step_finds(
    refs: list[int], start: int, bid: int, ask: int, stop: int
) -> None:
    asks = [r + 2 for r in refs]
    bids = [r - 2 for r in refs]
    window = Window(1000, asks, bids, refs)
    expected = next(
        (1000 + i for i in range(start, 40) if asks[i] <= bid or bids[i] >= ask or refs[i] <= stop),
        None,
    )
    assert window.first_cross(1000 + start, bid, ask, stop) == expected


def test_exp_without_libm_matches_math_exp() -> None:
    for y in (-2.5, -0.3, 0.0, 1e-9, 0.2, 0.5, 3.0):
        assert math.isclose(exp(y), math.exp(y), rel_tol=1e-14)


def test_the_noise_is_the_same_stepwise_and_at_random() -> None:
    noise = Noise(7, "BTCUSD", 1e-4)
    k = 1_704_067_200
    assert noise.run(k, 300) == [noise.at(k + i) for i in range(300)]
    assert Noise(7, "BTCUSD", 1e-4).at(k) == noise.at(k)
    assert Noise(8, "BTCUSD", 1e-4).at(k) != noise.at(k)


def test_the_ladder_sits_around_the_reference_price() -> None:
    cfg = MarketConfig.of(Settings(market_volatility=Decimal(0)))
    market = new_markets()["BTCUSD"]
    asks, bids = market.fresh_ladder(cfg, 7, 0)
    assert (asks[0][0], bids[0][0]) == (170085, 169915)  # 42521.25 and 42478.75
    assert [a for a, _ in asks] == sorted({a for a, _ in asks})
    assert all(abs(units * ticks * 0.25 / 1e8 - 50000) < 1 for ticks, units in asks)
    market.consume(0, SELL, [[170085, 1000]])
    assert market.ladder_side(cfg, 7, 0, SELL)[0] == [170085, asks[0][1] - 1000]
    assert market.ladder_side(cfg, 7, 1, SELL)[0] == [170085, asks[0][1]]  # a fresh step
