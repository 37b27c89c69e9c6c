"""The ledger's three posting paths (`post`, `post_encoded`, the replay's `apply_encoded`)
against a plain model of double entry and against one another: the same balances, in the
same order and notation, and the same refusals, for any sequence of events' postings.

Already covered elsewhere: tests/unit/test_ledger.py holds `post` of one posting at a time to
the invariants (never negative, sums to zero, a refusal leaves no trace) and several
postings to all-or-nothing; tests/api/test_replay_log.py compares `apply_encoded` with
`post_encoded` on one hand-written sequence. Neither compares the paths on generated
sequences, nor `post`'s several-postings overlay with its one-posting shortcut."""

from __future__ import annotations

from decimal import Decimal, localcontext

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sandex.engine.kernel.ledger import Ledger, LedgerViolation, decode_postings
from sandex.engine.kernel.money import CONTEXT

# Few accounts and assets, so that runs of the same pair (the replay's fast path), the
# same amount text and sources without funds come often.
ACCOUNTS = ("world", "fees", "a:available", "a:trading", "b:available")
ASSETS = ("BTC", "USD")
# Texts as events record them (`format(v, "f")`), a few that must be refused (zero and
# negative), equal values in other notations, and large ones.
AMOUNT_TEXTS = (
    "1",
    "1.0",
    "0.5",
    "0.00000001",
    "0.000000000000000001",
    "2.25",
    "10",
    "123456789012345678901234567890.123456789",
    "0",
    "0.00",
    "-1",
)

Raw = list[list[str]]

posting = st.tuples(
    st.sampled_from(ACCOUNTS),
    st.sampled_from(ACCOUNTS),
    st.sampled_from(ASSETS),
    st.one_of(
        st.sampled_from(AMOUNT_TEXTS),
        st.decimals(min_value=Decimal("1E-18"), max_value=Decimal(10**20), places=18).map(
            lambda d: format(d.normalize(), "f")
        ),
    ),
).map(list)
# Mostly one posting per event, as most events carry; some carry two or three.
event = st.one_of(
    st.lists(posting, min_size=1, max_size=1),
    st.lists(posting, min_size=1, max_size=1),
    st.lists(posting, min_size=2, max_size=3),
)
events = st.lists(event, max_size=40)


def model(raws: list[Raw]) -> tuple[dict[tuple[str, str], Decimal], list[int]]:
    """Plain double entry: each event's postings in order, all or none; no profile
    account (one with a colon) below zero, no amount of zero or less. The balances and
    the indexes of the events refused."""
    balances: dict[tuple[str, str], Decimal] = {}
    refused: list[int] = []
    for k, raw in enumerate(raws):
        trial = dict(balances)
        ok = True
        for source, target, asset, text in raw:
            amount = Decimal(text)
            if amount <= 0:
                ok = False
                break
            trial[(source, asset)] = trial.get((source, asset), Decimal(0)) - amount
            if ":" in source and trial[(source, asset)] < 0:
                ok = False
                break
            trial[(target, asset)] = trial.get((target, asset), Decimal(0)) + amount
        if ok:
            balances = trial
        else:
            refused.append(k)
    return balances, refused


def shown(balances: dict[tuple[str, str], Decimal]) -> list[tuple[tuple[str, str], str]]:
    """Balances as a list, in the ledger's order, each in its exact notation."""
    return [(key, str(value)) for key, value in balances.items()]


def one_at_a_time(raws: list[Raw], encoded: bool) -> tuple[Ledger, list[tuple[int, str]]]:
    ledger = Ledger()
    refusals: list[tuple[int, str]] = []
    for k, raw in enumerate(raws):
        before = shown(ledger.balances)
        try:
            if encoded:
                ledger.post_encoded(raw, {})
            else:
                ledger.post(decode_postings(raw, {}))
        except LedgerViolation as e:
            refusals.append((k, str(e)))
            assert shown(ledger.balances) == before, "a refused event left a trace"
    return ledger, refusals


@settings(max_examples=400, derandomize=True, deadline=None)
@given(events)
@example([[["world", "a:available", "BTC", "1"]], [["a:available", "world", "BTC", "1.0"]]])
@example([[["a:available", "a:available", "BTC", "1"]]])  # to itself, with nothing
@example([[["world", "a:available", "USD", "5"], ["a:available", "fees", "USD", "6"]]])
def test_post_and_post_encoded_give_the_model_s_balances_and_refusals(raws: list[Raw]) -> None:
    with localcontext(CONTEXT):
        expected, refused = model(raws)
        by_post, post_refusals = one_at_a_time(raws, encoded=False)
        by_text, text_refusals = one_at_a_time(raws, encoded=True)
    assert [k for k, _ in post_refusals] == refused
    assert text_refusals == post_refusals
    assert shown(by_post.balances) == shown(expected)
    assert shown(by_text.balances) == shown(by_post.balances)


@settings(max_examples=400, derandomize=True, deadline=None)
@given(events, st.lists(st.integers(0, 40), max_size=4), st.data())
def test_the_replay_path_gives_what_one_posting_at_a_time_gives(
    raws: list[Raw], cuts: list[int], data: st.DataObject
) -> None:
    """`apply_encoded` of the events accepted one at a time, in chunks as a replay meets
    them, leaves what `post_encoded` of each leaves; an event that must be refused is
    refused with the same words, whichever run of postings it ends."""
    with localcontext(CONTEXT):
        one_by_one, refusals = one_at_a_time(raws, encoded=True)
        refused = dict(refusals)
        accepted = [raw for k, raw in enumerate(raws) if k not in refused]
        replayed = Ledger()
        bounds = sorted({0, len(accepted), *(c for c in cuts if c < len(accepted))})
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            replayed.apply_encoded(accepted[lo:hi], {})
        assert shown(replayed.balances) == shown(one_by_one.balances)
        if not refusals:
            return
        # Only the refusal is compared: a replay stops at it (the log is broken), and
        # the run it ends is then never written back, where one at a time keeps it.
        k = data.draw(st.sampled_from(sorted(refused)))
        before = [raw for j, raw in enumerate(raws[:k]) if j not in refused]
        start = data.draw(st.integers(0, len(before)))
        rerun = Ledger()
        rerun.apply_encoded(before[:start], {})
        with pytest.raises(LedgerViolation) as refusal:
            rerun.apply_encoded([*before[start:], raws[k]], {})
        assert str(refusal.value) == refused[k]
