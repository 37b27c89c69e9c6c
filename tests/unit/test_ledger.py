"""The double-entry ledger's invariants, with seeded randomised runs."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandex.engine.domain.ledger import WORLD, available, trading
from sandex.engine.kernel.ledger import Ledger, LedgerViolation, decode_postings, encode_postings


def test_a_posting_moves_value_and_sums_to_zero() -> None:
    ledger = Ledger()
    touched = ledger.post([(WORLD, available("p"), "BTC", Decimal("1.5"))])
    assert touched == {(WORLD, "BTC"), ("p:available", "BTC")}
    ledger.post([(available("p"), trading("p"), "BTC", Decimal("0.5"))])
    assert ledger.balance("p:available", "BTC") == Decimal("1.0")
    assert ledger.balance("p:trading", "BTC") == Decimal("0.5")
    assert ledger.balance(WORLD, "BTC") == Decimal("-1.5")
    assert ledger.check() == []


def test_a_profile_account_never_goes_negative() -> None:
    ledger = Ledger()
    ledger.post([(WORLD, available("p"), "USD", Decimal(10))])
    with pytest.raises(LedgerViolation, match="negative"):
        ledger.post([(available("p"), WORLD, "USD", Decimal("10.01"))])


def test_a_non_positive_posting_is_refused() -> None:
    with pytest.raises(LedgerViolation):
        Ledger().post([(WORLD, available("p"), "USD", Decimal(0))])


def test_check_reports_an_unbalanced_asset() -> None:
    ledger = Ledger()
    ledger.balances[("p:available", "ETH")] = Decimal(1)
    assert ledger.check() == ["postings of ETH sum to 1, not zero"]


def test_postings_round_trip_through_their_encoding_exactly() -> None:
    postings = [(WORLD, available("p"), "ETH", Decimal("0.000000000000000001"))]
    assert encode_postings(postings) == [["world", "p:available", "ETH", "0.000000000000000001"]]
    assert decode_postings(encode_postings(postings), {}) == postings


amounts = st.decimals(min_value=Decimal("0.00000001"), max_value=Decimal(1000), places=8)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.sampled_from(["BTC", "USD"]), amounts),
        max_size=60,
    )
)
def test_random_postings_keep_every_invariant(moves: list[tuple[int, int, str, Decimal]]) -> None:
    accounts = [WORLD, available("a"), available("b"), trading("a")]
    ledger = Ledger()
    for source, target, asset, amount in moves:
        before = dict(ledger.balances)
        try:
            ledger.post([(accounts[source], accounts[target], asset, amount)])
        except LedgerViolation:
            assert ledger.balances == before  # a refused posting leaves no trace
        assert ledger.check() == []


def test_several_postings_land_all_or_nothing() -> None:
    ledger = Ledger()
    ledger.post([(WORLD, available("a"), "USD", Decimal(5))])
    with pytest.raises(LedgerViolation):
        ledger.post(
            [
                (available("a"), available("b"), "USD", Decimal(5)),
                (available("b"), WORLD, "USD", Decimal(6)),
            ]
        )
    assert ledger.balance("a:available", "USD") == Decimal(5)
    assert ledger.balance("b:available", "USD") == Decimal(0)
    # postings apply in order: a later one may spend what an earlier one brought
    ledger.post(
        [
            (available("a"), available("b"), "USD", Decimal(5)),
            (available("b"), WORLD, "USD", Decimal(5)),
        ]
    )
    assert ledger.check() == []
