"""Opaque ids (issue 14): paging cursors and execution ids show no log position and no
count of what other tenants did, yet page and filter as before.

- A cursor is sealed (engine/read/cursors.py): it holds no position in any spelling, a
  changed one or one of another list or tenant is a 400 naming `page_cursor`, and paging
  by it still gives every row exactly once, in both orders.
- An execution id is a keyed permutation of the engine's counter
  (engine/kernel/execution_ids.py): unique uint64 numbers that do not count, mapped back by
  `since_execution_id`, the same after a restart, and from a random key per database
  unless the database asked for seeded ones.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from sandex.engine import Settings, open_engine
from sandex.engine.domain.transfers.networks import make_address
from sandex.engine.kernel.clock import parse_time, to_millis
from sandex.engine.kernel.commands import (
    Actor,
    CreateCustomer,
    CreateDepositAddress,
    CreateFiatDepositInstructions,
    CreateProfile,
)
from sandex.engine.kernel.execution_ids import LIMIT, ExecutionIds, new_key
from sandex.engine.kernel.ids import IdSource
from sandex.engine.runtime.key_file import KeyFile
from sandex.engine.tools.scenario_file import ScenarioError, engine_settings, load
from tests.conftest import make_settings
from tests.support.database import query
from tests.support.file_helpers import database_bytes
from tests.support.trading_helpers import limit, placed, set_price, still

# -- helpers -------------------------------------------------------------------------


def _fill_log(sb: Any, n: int) -> None:
    """Another customer's activity: `n` events, so positions reach four digits."""
    customer = sb.engine.state.clients["sandex"]["customer_id"]
    actor = Actor(customer_id=customer, client_id="sandex")
    done = len(sb.engine.state.profiles)
    batch = sb.engine.submit_many(
        [CreateProfile(actor=actor, nickname=f"filler{done + i}") for i in range(n)]
    )
    batch.result(timeout=120)


def _seqs(db: Path | str, table: str, customer_id: str) -> list[int]:
    sql = f"SELECT seq FROM {table} WHERE customer_id = ? ORDER BY seq"
    return [r[0] for r in query(db, sql, (customer_id,))]


def _spellings(position: int) -> tuple[list[str], list[bytes]]:
    """How a position could show: as text in the cursor, as bytes once it is decoded."""
    texts = [str(position), f"{position:x}", f"{position:X}"]
    raw = [position.to_bytes(n, "big") for n in (4, 8)]
    raw += [position.to_bytes(n, "little") for n in (4, 8)]
    raw += [t.encode() for t in texts]
    for t in (str(position).encode(), f"seq:{position}".encode(), position.to_bytes(8, "big")):
        texts.append(base64.urlsafe_b64encode(t).decode().rstrip("="))
        texts.append(base64.b64encode(t).decode().rstrip("="))
    return texts, raw


def _assert_hidden(cursor: str, position: int) -> None:
    assert position >= 1000, "the test needs positions of four digits at least"
    texts, raw = _spellings(position)
    for text in texts:
        assert text not in cursor, (cursor, text)
    try:
        decoded = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (ValueError, binascii.Error):
        return
    for spelled in raw:
        assert spelled not in decoded, (cursor, spelled)


def _pages(sb: Any, path: str, headers: Any, order: str, **params: Any) -> list[dict[str, Any]]:
    """Every page of a list, following its cursors."""
    pages, cursor = [], None
    while True:
        query = {"limit": 2, "order": order, **params}
        if cursor is not None:
            query["page_cursor"] = cursor
        r = sb.get(path, params=query, headers=headers)
        assert r.status_code == 200, r.text
        pages.append(r.json())
        cursor = r.json().get("next_page_cursor")
        if cursor is None:
            return pages


def _tenant_with_rows(sb: Any) -> tuple[dict[str, str], dict[str, Any]]:
    """A tenant with 5 profiles and 5 transfers, after and among others' events."""
    _fill_log(sb, 1100)
    headers, made = sb.tenant()
    for i in range(4):
        assert sb.post("/v2/profiles", {"nickname": f"mine{i}"}, headers=headers).is_success
        sb.deposit("BTC", "1", profile=made["profile_id"], headers=headers)
        _fill_log(sb, 3)  # others write between my rows
    sb.deposit("BTC", "1", profile=made["profile_id"], headers=headers)
    return headers, made


# -- cursors -------------------------------------------------------------------------


def test_a_cursor_shows_no_log_position(sandbox_factory: Any) -> None:
    sb = sandbox_factory()
    headers, made = _tenant_with_rows(sb)
    for path, table in [("/v2/profiles", "profiles"), ("/v2/transfer/transfers", "transfers")]:
        seqs = _seqs(sb.db, table, made["customer_id"])
        for order in ("ASC", "DESC"):
            pages = _pages(sb, path, headers, order)
            assert len(pages) == 3
            ordered = seqs if order == "ASC" else seqs[::-1]
            for k, page in enumerate(pages[:-1]):
                _assert_hidden(page["next_page_cursor"], ordered[2 * k + 1])
    r = sb.get("/v2/events", params={"limit": 2}, headers=headers)
    cursor = r.headers["x-next-page-cursor"]
    feed = _seqs(sb.db, "event_feed", made["customer_id"])
    _assert_hidden(cursor, feed[1])  # the feed's seq: twice the position, plus a rank
    _assert_hidden(cursor, feed[1] // 2)


def test_paging_by_cursor_gives_every_row_exactly_once(sandbox_factory: Any) -> None:
    sb = sandbox_factory()
    headers, _ = _tenant_with_rows(sb)
    for path in ("/v2/profiles", "/v2/transfer/transfers"):
        # newest first asked for: profiles are listed oldest first by default
        newest = {"limit": 100, "order": "DESC"}
        everything = sb.get(path, params=newest, headers=headers).json()["items"]
        assert len(everything) == 5
        newest_first = [item["id"] for item in everything]
        for order, expected in (("DESC", newest_first), ("ASC", newest_first[::-1])):
            pages = _pages(sb, path, headers, order)
            assert [item["id"] for page in pages for item in page["items"]] == expected
    seen, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 3, **({"page_cursor": cursor} if cursor else {})}
        r = sb.get("/v2/events", params=params, headers=headers)
        assert r.status_code == 200, r.text
        seen += [e["id"] for e in r.json()["events"]]
        cursor = r.headers.get("x-next-page-cursor")
        if cursor is None:
            break
    everything = sb.get("/v2/events", params={"limit": 100}, headers=headers).json()["events"]
    assert seen == [e["id"] for e in everything] and len(seen) == 5


def _refused(r: Any) -> None:
    assert r.status_code == 400, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["meta"]["field"] == "page_cursor"


def test_a_changed_foreign_or_forged_cursor_is_a_400_naming_page_cursor(
    sandbox_factory: Any,
) -> None:
    sb = sandbox_factory()
    headers, _ = _tenant_with_rows(sb)
    other, _ = sb.tenant()
    for i in range(3):
        assert sb.post("/v2/profiles", {"nickname": f"theirs{i}"}, headers=other).is_success
    page = sb.get("/v2/profiles", params={"limit": 2}, headers=headers).json()
    cursor = page["next_page_cursor"]
    assert sb.get("/v2/profiles", params={"page_cursor": cursor}, headers=headers).is_success
    flip = {k: "A" if cursor[k] != "A" else "B" for k in (0, len(cursor) // 2, -1)}
    changed = [cursor[:k] + c + (cursor[k + 1 :] if k != -1 else "") for k, c in flip.items()]
    changed += [cursor[:-2], cursor + "AAAA"]
    # what today's positions would have spelled, and junk
    forged = [base64.urlsafe_b64encode(f"seq:{n}".encode()).decode().rstrip("=") for n in (1, 99)]
    for bad in [*changed, *forged, "%%%", "é", "A" * 10_000]:
        _refused(sb.get("/v2/profiles", params={"page_cursor": bad}, headers=headers))
    # a cursor of another tenant's list of the same table, and of another table
    theirs = sb.get("/v2/profiles", params={"limit": 2}, headers=other).json()["next_page_cursor"]
    _refused(sb.get("/v2/profiles", params={"page_cursor": theirs}, headers=headers))
    _refused(sb.get("/v2/profiles", params={"page_cursor": cursor}, headers=other))
    _refused(sb.get("/v2/transfer/transfers", params={"page_cursor": cursor}, headers=headers))
    _refused(sb.get("/v2/events", params={"page_cursor": cursor}, headers=headers))


def test_a_cursor_survives_a_restart(sandbox_factory: Any) -> None:
    sb = sandbox_factory("kept.db")
    for i in range(3):
        sb.post("/v2/profiles", {"nickname": f"p{i}"})
    first = sb.get("/v2/profiles", params={"limit": 2}).json()
    rest = sb.get("/v2/profiles", params={"limit": 2, "page_cursor": first["next_page_cursor"]})
    sb.close()
    again = sandbox_factory("kept.db")
    later = again.get("/v2/profiles", params={"limit": 2, "page_cursor": first["next_page_cursor"]})
    assert later.status_code == 200 and later.json() == rest.json()


# -- uuids (issue 20) ----------------------------------------------------------------


def _millis(text: str) -> int:
    return to_millis(parse_time(text))


def test_uuids_show_their_time_and_grow_with_it_whatever_others_did(sandbox_factory: Any) -> None:
    """A tenant's order ids and feed ids are version-7 UUIDs led by their `created_at` in
    milliseconds: later ones sort later (an index grows at its end), and another tenant's
    activity in between changes nothing a comparison of them can read (the time is the
    same; tests/unit/test_ids.py shows the rest of the bits tell nothing either)."""
    sb = still(sandbox_factory)
    set_price(sb, "40000")
    (me, mine), (them, theirs) = _trading_tenant(sb), _trading_tenant(sb)
    first = placed(sb, mine, me, **limit("BUY", "30000", "0.0001"))
    for _ in range(5):
        placed(sb, theirs, them, **limit("BUY", "30000", "0.0001"))
    second = placed(sb, mine, me, **limit("BUY", "30000", "0.0001"))
    sb.advance(2)
    third = placed(sb, mine, me, **limit("BUY", "30000", "0.0001"))
    made = [uuid.UUID(o["id"]) for o in (first, second, third)]
    assert all(u.version == 7 and u.variant == uuid.RFC_4122 for u in made)
    assert [u.int >> 80 for u in made] == [_millis(o["created_at"]) for o in (first, second, third)]
    assert made[0].int >> 80 == made[1].int >> 80 == (made[2].int >> 80) - 2000
    assert made[2].int > max(made[0].int, made[1].int)
    r = sb.get("/v2/events", headers=me)
    assert r.status_code == 200, r.text
    feed = r.json()["events"]
    assert len(feed) >= 4  # the deposit's and the three orders'
    for item in feed:
        u = uuid.UUID(item["id"])
        assert u.version == 7 and u.int >> 80 == _millis(item["created_at"])


# -- execution ids -------------------------------------------------------------------


def _buy(sb: Any, headers: Any, profile: str) -> None:
    placed(sb, profile, headers, side="BUY", type="MARKET", market="BTCUSD", quote_amount="10.00")


def _execution_ids(sb: Any, headers: Any, **params: Any) -> list[str]:
    r = sb.get("/v2/executions", params={"limit": 1000, **params}, headers=headers)
    assert r.status_code == 200, r.text
    return [e["execution_id"] for e in r.json()["items"]]


def _trading_tenant(sb: Any) -> tuple[dict[str, str], str]:
    headers, made = sb.tenant()
    sb.deposit("USD", "1000", profile=made["profile_id"], headers=headers)
    return headers, made["profile_id"]


def test_execution_ids_do_not_count_other_tenants_executions(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    set_price(sb, "40000")
    (me, mine), (them, theirs) = _trading_tenant(sb), _trading_tenant(sb)
    _buy(sb, me, mine)
    for _ in range(5):
        _buy(sb, them, theirs)
    _buy(sb, me, mine)
    newer, older = _execution_ids(sb, me)
    their_ids = _execution_ids(sb, them)
    everyone = [int(i) for i in [newer, older, *their_ids]]
    assert len(set(everyone)) == 7  # unique
    assert all(text.isdigit() for text in [newer, older]) and all(0 < i < LIMIT for i in everyone)
    # the engine's counter ran 1..7; none of it shows, and my two ids are not 6 apart
    assert int(newer) - int(older) != 6
    assert all(i > 2**32 for i in everyone)  # a random 63-bit number: below 2**32 once in 2**31
    # and the order of my own list is still the order of my executions
    assert _execution_ids(sb, me, since_execution_id=older) == [newer]
    assert _execution_ids(sb, me, since_execution_id=newer) == []
    assert _execution_ids(sb, me, since_execution_id="0") == [newer, older]  # before them all


def test_since_execution_id_out_of_range_is_a_400_naming_it(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    for bad in (str(LIMIT), str(2**64 - 1)):
        r = sb.get("/v2/executions", params={"since_execution_id": bad})
        assert r.status_code == 400, r.text
        assert r.json()["meta"]["field"] == "since_execution_id"


def test_execution_ids_stay_the_same_after_a_restart_and_a_rebuild(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory, "kept.db")
    set_price(sb, "40000")
    sb.deposit("USD", "1000")
    for _ in range(3):
        _buy(sb, sb.headers, "default")
    before = _execution_ids(sb, sb.headers)
    page = sb.get("/v2/executions", params={"limit": 2}).json()
    sb.close()
    again = still(sandbox_factory, "kept.db")
    assert _execution_ids(again, again.headers) == before
    cursor = page["next_page_cursor"]
    rest = again.get("/v2/executions", params={"limit": 2, "page_cursor": cursor}).json()
    assert [e["execution_id"] for e in page["items"] + rest["items"]] == before
    assert again.verify() == []


def _one_execution(sandbox_factory: Any, name: str, **settings: Any) -> str:
    sb = still(sandbox_factory, name, **settings)
    set_price(sb, "40000")
    sb.deposit("USD", "1000")
    _buy(sb, sb.headers, "default")
    (only,) = _execution_ids(sb, sb.headers)
    return only


def test_the_key_is_random_per_database_unless_seeded(sandbox_factory: Any) -> None:
    """The same seed and commands: random keys give other ids (the seed, which a tenant
    may guess, does not give them away); seeded keys give the same ids."""
    first = _one_execution(sandbox_factory, "a.db")
    second = _one_execution(sandbox_factory, "b.db")
    assert first != second
    seeded = [_one_execution(sandbox_factory, f"s{i}.db", execution_ids="seeded") for i in (1, 2)]
    assert seeded[0] == seeded[1] and seeded[0] not in (first, second)


def test_scenarios_run_with_seeded_execution_ids() -> None:
    assert engine_settings({"seed": 3}).execution_ids == "seeded"
    text = "version: 1\npurpose: x\nsettings: {execution_ids: random}\nsteps: []"
    with pytest.raises(ScenarioError, match="execution_ids is not a scenario setting"):
        load(text, "mine.yaml")


# -- the permutation -----------------------------------------------------------------


def test_the_permutation_is_a_bijection_with_an_inverse() -> None:
    ids = ExecutionIds(bytes.fromhex(new_key("random", 0)))
    numbers = list(range(1, 5001)) + [LIMIT - 1, LIMIT - 2, 2**32, 2**32 - 1]
    public = [ids.public(n) for n in numbers]
    assert len(set(public)) == len(numbers)
    assert all(0 < p < LIMIT for p in public)
    assert [ids.number(p) for p in public] == numbers
    assert ids.number(0) == 0  # no execution: before every one
    for bad in (-1, LIMIT, 2**64):
        with pytest.raises(ValueError):
            ids.public(bad)
        with pytest.raises(ValueError):
            ids.number(bad)
    other = ExecutionIds(bytes.fromhex(new_key("random", 0)))
    assert [other.public(n) for n in range(1, 100)] != public[:99]
    seeded = new_key("seeded", 7)
    assert seeded == new_key("seeded", 7) != new_key("seeded", 8)


# -- uuids, deposit addresses and memos: keyed unless a seed is set (issue 29) --------


def _a_tenants_ids(db: Path, settings: Settings) -> tuple[list[tuple[int, Any]], dict[str, str]]:
    """A new database's first tenant, a wire memo and a deposit address: what each
    command started at (position, engine time), and what it drew."""
    with open_engine(db, settings) as engine:
        starts = [(1, engine.clock.now())]
        made = engine.execute(CreateCustomer(client_id="me", client_secret="pw", bootstrap=True))
        me = Actor(made["customer_id"], "me")
        starts.append((engine.state.position + 1, engine.clock.now()))
        memo = engine.execute(CreateFiatDepositInstructions(actor=me, profile_id="default"))
        starts.append((engine.state.position + 1, engine.clock.now()))
        address = engine.execute(
            CreateDepositAddress(actor=me, profile_id="default", crypto_network="ETHEREUM")
        )
    drawn = {
        "customer": made["customer_id"],
        "profile": made["profile_id"],
        "memo": memo["memo_id"],
        "address": address["address"],
    }
    return starts, drawn


def _computable(starts: list[tuple[int, Any]], seed: int) -> set[str]:
    """Everything the public algorithm draws from `seed` for commands that start there:
    what a tenant who knows the seed computes of other tenants' ids."""
    out: set[str] = set()
    for position, now in starts:
        ids = IdSource(seed)
        ids.start(position, now)
        for rank in range(12):
            ids._rank = rank
            out.add(ids.uuid())
            ids._rank = rank
            out.add(ids.code(10))
            ids._rank = rank
            out.add(make_address("ETHEREUM", bytes.fromhex(ids.hex())))
    return out


def test_ids_are_keyed_per_database_unless_a_seed_is_set(tmp_path: Path) -> None:
    """By default (no seed set), ids, memos and addresses come through the key file's id
    key: seed 0 computes none of them, and two databases given the same commands differ.
    A seed set explicitly (replays, scenarios, backtests) still reproduces them, and seed
    0 set explicitly computes them as before."""
    default = make_settings().model_dump(exclude={"seed"})
    keyed = [_a_tenants_ids(tmp_path / f"k{i}.db", Settings(**default)) for i in (1, 2)]
    seeded = [_a_tenants_ids(tmp_path / f"s{i}.db", make_settings(seed=0)) for i in (1, 2)]
    for starts, drawn in keyed:
        assert not set(drawn.values()) & _computable(starts, 0)
    assert not set(keyed[0][1].values()) & set(keyed[1][1].values())
    assert seeded[0][1] == seeded[1][1]
    assert set(seeded[0][1].values()) <= _computable(seeded[0][0], 0)
    # the key is in the key file beside the database, never in the database itself
    key = bytes.fromhex(json.loads((tmp_path / "k1.db.key").read_text())["id_key"])
    assert len(key) == 32 and key not in database_bytes(tmp_path / "k1.db")
    KeyFile.open(tmp_path / "k1.db").rotate()  # a new signing key; the id key stays
    assert json.loads((tmp_path / "k1.db.key").read_text())["id_key"] == key.hex()
    with open_engine(tmp_path / "k1.db", make_settings(seed=3)) as engine:
        assert engine.ids.keyed  # fixed when the database was made: a later seed changes nothing
