"""States compared field by field, and busy logs to compare them on: shared by the state-snapshot and replay tests."""

from __future__ import annotations

import dataclasses
from collections import deque
from datetime import datetime
from decimal import Decimal
from typing import Any

from sortedcontainers import SortedDict

from sandex.engine.kernel.compact_records import Records
from sandex.engine.kernel.state import State, StreamVersions
from sandex.engine.runtime.composition import default_projection
from tests.conftest import Sandbox
from tests.support.trading_helpers import limit, placed, set_price
from tests.support.transfer_helpers import quote, withdraw

WIRE = {
    "account_number": "12345678",
    "fiat_account_owner_address": {"country": "US", "city": "Austin"},
    "routing_details": {
        "routing_number_type": "ABA",
        "routing_number": "021000021",
        "bank_name": "Example Bank",
        "bank_address": {"country": "US"},
    },
}


def canon(obj: Any, stack: frozenset[int] = frozenset()) -> Any:
    """A plain, comparable form of any part of the state: every field of every object,
    slotted or not, containers in their order (dicts as sorted items)."""
    if obj is None or isinstance(obj, bool | int | float | str | bytes):
        return obj
    if isinstance(obj, Decimal):
        return ("Decimal", str(obj))
    if isinstance(obj, datetime):
        return ("datetime", obj.isoformat())
    if id(obj) in stack:
        raise AssertionError(f"a cycle through {type(obj).__name__}")
    inner = stack | {id(obj)}
    if isinstance(obj, Records):  # settled entries are stored as JSON, read as dicts
        return canon({key: obj[key] for key in obj}, stack)
    if isinstance(obj, SortedDict):
        return ("SortedDict", [(canon(k, inner), canon(v, inner)) for k, v in obj.items()])
    if isinstance(obj, dict):
        items = [(canon(k, inner), canon(v, inner)) for k, v in obj.items()]
        return ("dict", sorted(items, key=repr))
    if isinstance(obj, list | tuple | deque):
        return (type(obj).__name__, [canon(v, inner) for v in obj])
    if isinstance(obj, set | frozenset):
        return ("set", sorted((canon(v, inner) for v in obj), key=repr))
    if dataclasses.is_dataclass(obj):
        fields = {f.name: canon(getattr(obj, f.name), inner) for f in dataclasses.fields(obj)}
        return (type(obj).__name__, fields)
    slots = [s for cls in type(obj).__mro__ for s in getattr(cls, "__slots__", ())]
    if slots or hasattr(obj, "__dict__"):
        names = sorted(set(slots) | set(getattr(obj, "__dict__", {})))
        return (
            type(obj).__name__,
            {n: canon(getattr(obj, n), inner) for n in names if hasattr(obj, n)},
        )
    raise AssertionError(f"cannot compare a {type(obj).__name__}")


def seen_versions(versions: dict[str, int], other: dict[str, int]) -> dict[str, int]:
    """The version of every stream either holds as the next event appended to it sees it:
    one a snapshot left out (engine/runtime/startup_cache.py) read where it is kept."""
    streams = sorted(set(versions) | set(other))
    if isinstance(versions, StreamVersions):
        return {stream: versions[stream] for stream in streams}
    return {stream: versions.get(stream, 0) for stream in streams}


def assert_same(a: tuple[State, dict[str, int]], b: tuple[State, dict[str, int]]) -> None:
    """Field by field, caches included; then the read-model rows (which fill caches).
    Fields out of the state's value (`State.caches`, what its appliers last remembered
    for speed) are left out."""
    (sa, va), (sb, vb) = a, b
    assert seen_versions(va, vb) == seen_versions(vb, va)
    for f in dataclasses.fields(State):
        if not f.compare:
            continue
        assert canon(getattr(sa, f.name)) == canon(getattr(sb, f.name)), f"State.{f.name} differs"
    rows_a = sorted((t, sorted(r.items())) for t, r in default_projection().all_rows(sa))
    rows_b = sorted((t, sorted(r.items())) for t, r in default_projection().all_rows(sb))
    assert rows_a == rows_b


def busy(sb: Sandbox) -> None:
    """Everything that stays open across a snapshot: resting and GTT orders, a delayed
    order, stops, fee quotes, a pending withdrawal, a pending fiat deposit, a sandbox
    snapshot, timers of every kind."""
    sb.deposit("USD", "1000000")
    sb.deposit("BTC", "10")
    sb.deposit("USDC", "500")
    set_price(sb, "42000")
    placed(sb, **limit("BUY", "41000", "0.5"))
    placed(sb, **limit("SELL", "43000", "0.25"))
    placed(
        sb,
        **limit("BUY", "41500", "0.1", time_in_force="GTT"),
        expiration_date="1704074400000",
    )
    placed(sb, side="SELL", type="STOP_MARKET", stop_price="40000", base_amount="0.1")
    placed(sb, side="BUY", type="MARKET", quote_amount="100.00")
    quote(sb)
    r = withdraw(sb, asset="USDC", network="SOLANA", amount="10")
    assert r.status_code == 200, r.text
    memo = sb.post(
        "/v2/transfer/fiat-deposit-instructions", {"profile_id": "default", "fiat_network": "WIRE"}
    ).json()["memo_id"]
    r = sb.post(
        "/v2/sandbox/fiat-deposits",
        {
            "amount": "150.33",
            "asset": "USD",
            "memo_id": memo,
            "fiat_network_instructions": {"wire": WIRE},
        },
    )
    assert r.status_code == 200, r.text
    assert sb.post("/v2/sandbox/snapshots", {"name": "mid"}).status_code == 200
    sb.advance(1)


def more(sb: Sandbox) -> None:
    """What happens after: timers fire, orders trade and expire, a restore."""
    sb.advance(30)
    placed(sb, **limit("SELL", "41000", "0.2"))
    r = withdraw(sb, asset="USDC", network="SOLANA", amount="5")
    assert r.status_code == 200, r.text
    assert sb.post("/v2/sandbox/snapshots/mid/restore").status_code == 200
    set_price(sb, "39000")
    sb.advance(7200)
    placed(sb, **limit("BUY", "38000", "0.3"))
