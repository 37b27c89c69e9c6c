"""The body guard's shortcut for flat objects (api_adapter/middleware/body_guard.py,
`flat_object`) takes only bodies that the full check (`json_fault`) takes, with the value
that JSON gives them; everything else is left to the full check."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandex.api_adapter.middleware.body_guard import flat_object, json_fault

KEYS = st.sampled_from(["side", "market", "type", "price", "a", "é", "\x7f", ""])
SCALARS = st.one_of(st.text(max_size=6), st.none(), st.booleans())
VALUES = st.one_of(
    SCALARS, st.integers(), st.floats(allow_nan=False), st.lists(SCALARS, max_size=2)
)
# raw pieces a hostile body is made of: duplicates, escapes, control characters, bad UTF-8
NOISE = st.sampled_from(
    [b"\\", b'\\"', b"\\u0000", b"\\ud800", b"\x00", b"\x01", b"\xff", b"\xc3", b'"', b",", b":"]
    + [b"{", b"}", b"[", b"]", b" ", b"\t", b"\n", b"NaN", b"1e999", b"\xef\xbb\xbf", b"null"]
)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    pairs = draw(st.lists(st.tuples(KEYS, VALUES), max_size=5))
    members = [
        f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=draw(st.booleans()))}" for k, v in pairs
    ]
    body = ("{" + ", ".join(members) + "}").encode()
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(NOISE) + body[at:]
    return body


@settings(max_examples=3000, deadline=None)
@given(bodies())
def test_a_body_taken_by_the_shortcut_is_one_the_full_check_takes(body: bytes) -> None:
    value = flat_object(body)
    if value is not None:
        assert json_fault(body) is None
        assert value == json.loads(body)


@pytest.mark.parametrize(
    "body",
    [
        b'{"side": "BUY", "side": "SELL"}',  # a key twice
        b'{"side": "BUY", "side": null}',
        b'{"a": "\\u0000"}',  # an escape
        b'{"a": "x\\"y"}',
        b'{"price": 30000}',  # a number
        b'{"metadata": {"k": "v"}}',  # nested
        b'["BUY"]',  # not an object
        b'{"a": "b"} {"c": "d"}',
    ],
)
def test_what_the_shortcut_leaves_to_the_full_check(body: bytes) -> None:
    assert flat_object(body) is None


def test_an_order_body_is_taken_by_the_shortcut() -> None:
    body = b'{"side": "BUY", "market": "BTCUSD", "type": "LIMIT", "price": "1", "ref_id": null}'
    assert flat_object(body) == json.loads(body)
