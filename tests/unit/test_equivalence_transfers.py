"""The transfer path's shortcuts against plain definitions: the Solana tx hash's base58
(four digits per division of the big number) against the `base58` package, a
confirmation delay's span (kept per delay) against its product, and the public view of a transfer (a copy whose nulls are deleted) against the plain filter
(tests/support/equivalence_helpers.py), keys in the same order, since their JSON is
stored and compared byte for byte (the golden log and tables)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import base58
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sandex.engine.domain.transfers.transfer_records import transfer_view
from sandex.engine.domain.transfers.withdrawals import _base58, delay_span
from tests.support import equivalence_helpers as plain

# Leading zero bytes are written as "1"s; the rest of the number in base 58.
payloads = st.one_of(
    st.binary(min_size=0, max_size=80),
    st.tuples(st.integers(0, 6), st.binary(min_size=0, max_size=64)).map(
        lambda zb: b"\0" * zb[0] + zb[1]
    ),
)


@settings(max_examples=1000, derandomize=True, deadline=None)
@given(payloads)
@example(b"")
@example(b"\0")
@example(b"\0\0\x01")
@example(b"\xff" * 64)
@example((58**4).to_bytes(4, "big"))
@example((58**4 - 1).to_bytes(4, "big"))
@example((3364).to_bytes(2, "big"))
def test_base58_is_the_bitcoin_alphabet_encoding(data: bytes) -> None:
    assert _base58(data) == base58.b58encode(data).decode()


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.decimals(min_value=0, max_value=10**6, places=7, allow_nan=False))
@example(Decimal("1"))
@example(Decimal("1.000"))
@example(Decimal("0.0000005"))
def test_delay_span_is_the_delay_in_whole_microseconds(seconds: Decimal) -> None:
    expected = timedelta(microseconds=int(seconds * 1_000_000))
    assert delay_span(seconds) == expected
    assert delay_span(seconds) == expected  # kept, the same answer


fields = st.sampled_from(
    ["id", "ref_id", "amount", "fee", "memo", "metadata", "status", "seq", "created_at"]
)
values = st.one_of(st.none(), st.text(max_size=8), st.dictionaries(st.text(max_size=4), st.text()))


@settings(max_examples=500, derandomize=True, deadline=None)
@given(st.dictionaries(fields, st.one_of(values, st.integers())))
def test_transfer_view_drops_nulls_and_seq_in_order(record: dict[str, Any]) -> None:
    before = dict(record)
    view = transfer_view(record)
    assert list(view.items()) == list(plain.transfer_view(record).items())
    assert record == before  # the state's record is left as it was
    assert view is not record
