"""Every replayer (`Registry.replayers`, engine/kernel/registry.py: the start-up replay's fast
appliers of stream-opening events) leaves exactly the state its type's applier leaves in a
state-only replay, and stops at the first row that is not a brief row of its type, on
generated runs of rows.

Already covered: tests/api/test_replay_log.py compares whole start-up replays with the
generic replay and the live state on one recorded session, and the scan's brief rows
with the events. Here a replayer meets records that session never makes (settled and
open ones interleaved, references empty or not, several postings or none) and runs
cut where another type's row comes in."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal, localcontext
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from sandex.engine.domain.registrations import domain_registry
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.money import CONTEXT
from sandex.engine.kernel.state import State

_REGISTRY = domain_registry()
STATUSES = ("PENDING", "PROCESSING", "COMPLETED", "FAILED")
amounts = st.decimals(min_value=Decimal("1E-8"), max_value=Decimal(10**9), places=8).map(
    lambda d: format(d, "f")
)


@st.composite
def transfer_created(draw: st.DrawFn, n: int) -> dict[str, Any]:
    """A TransferCreated event's data: the record as `transfer_records.create` writes it, and
    postings that can never be refused (from outside the platform)."""
    profile = draw(st.sampled_from(("p1", "p2")))
    asset = draw(st.sampled_from(("BTC", "USD")))
    amount = draw(amounts)
    record: dict[str, Any] = {
        "id": f"t{n}",
        "profile_id": profile,
        "type": draw(st.sampled_from(("DEPOSIT", "WITHDRAWAL", "INTERNAL"))),
        "status": draw(st.sampled_from(STATUSES)),
        "asset": asset,
        "amount": amount,
    }
    ref_id = draw(st.sampled_from((None, "", f"r{n % 3}")))
    if ref_id is not None:
        record["ref_id"] = ref_id
    if draw(st.booleans()):
        record["metadata"] = {"k": draw(st.text(max_size=3))}
    record["created_at"] = record["updated_at"] = "2024-01-01T00:00:00.000000Z"
    postings = draw(
        st.sampled_from(
            (
                [],
                [["world", f"{profile}:available", asset, amount]],
                [["world", f"{profile}:available", asset, amount], ["world", "fees", asset, "1"]],
            )
        )
    )
    return {"transfer": record, "postings": postings}


# Replayed type -> its events' data, for the n-th event of a run.
DATA: dict[str, Callable[[int], st.SearchStrategy[dict[str, Any]]]] = {
    "TransferCreated": transfer_created,
}


def test_every_replayer_has_an_equivalence_test_here() -> None:
    assert set(_REGISTRY.replayers) == set(DATA)


def shown(state: State) -> dict[str, Any]:
    """Everything a replay may change, readable and in order."""
    return {
        "ledger": [(k, str(v)) for k, v in state.ledger.balances.items()],
        "transfers": [(k, list(state.transfers[k].items())) for k in dict.keys(state.transfers)],
        "transfer_refs": list(state.transfer_refs.items()),
        "others": [
            (name, getattr(state, name))
            for name in ("customers", "clients", "profiles", "fiat_instructions", "memos")
        ],
        "pending_fiat": state.pending_fiat,
        "timers": len(state.timers),
        "dirty": state.dirty,
        "ext": state.ext,
    }


def replaying_state() -> State:
    state = State()
    state.live = False  # a start-up replay: nothing is marked, no rows are collected
    state.appended = None
    return state


@settings(max_examples=120, derandomize=True, deadline=None)
@given(st.sampled_from(sorted(DATA)), st.data())
def test_a_replayer_leaves_what_its_applier_leaves(kind: str, data: st.DataObject) -> None:
    runs = data.draw(st.lists(st.integers(1, 8), min_size=1, max_size=4))
    mine, other = 0, 1  # the rows' `rest`: the replayer's index in the scan, another's
    rows: list[tuple[Any, ...]] = []
    events: list[Event] = []
    n = 0
    for length in runs:
        for _ in range(length):
            n += 1
            body = data.draw(DATA[kind](n))
            stream = f"{kind.lower()}-{n}"
            rows.append((len(rows) + 1, stream, orjson.dumps(body).decode(), mine))
            events.append(Event(kind, stream, body, len(rows), 1, "", {}))
        # what ends a run: another replayer's row, or a row of any event in full
        stop = data.draw(st.sampled_from((other, '[2,"TransferCompleted",1,"t"]')))
        rows.append((len(rows) + 1, "elsewhere", "{}", stop))
    with localcontext(CONTEXT):
        replayed, versions = replaying_state(), {"earlier-1": 3}
        i = 0
        starts = []
        while i < len(rows):
            if rows[i][3] == mine:
                starts.append(i)
                i = _REGISTRY.replayers[kind](replayed, versions, rows, i)
                assert rows[i][3] != mine, "a run left before its end"
            else:
                i += 1
        applied, expected_versions = replaying_state(), {"earlier-1": 3}
        for event in events:
            _REGISTRY.state_appliers[kind](applied, event)
            expected_versions[event.stream] = 1
    assert len(starts) == len(runs)
    assert list(versions.items()) == list(expected_versions.items())
    assert shown(replayed) == shown(applied)
