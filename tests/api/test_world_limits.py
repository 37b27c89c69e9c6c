"""What worlds may cost a server (docs/worlds.md), through HTTP: the default world's
health counts them, their creation spends a rate-limit budget of its own, and a world's
log is bounded by `world_max_events` (then every write is refused, reads go on, its
timers wait and its log stays whole)."""

from __future__ import annotations

from typing import Any

import pytest

from sandex.api_adapter.worlds.manager import location_of
from sandex.engine.tools.verify import verify
from tests.support.trading_helpers import get_order, limit
from tests.support.world_helpers import MANUAL, Front, World

pytestmark = pytest.mark.default_world_only(
    "the worlds of a server are made and counted from its default world"
)

DEPOSIT = "/v2/sandbox/profiles/default/deposit"
BTC = {"asset": "BTC", "amount": "1"}


def _events(front: Front, world: World) -> int:
    r = front.http.get(f"/v2/sandbox/worlds/{world.id}", headers=front.headers)
    assert r.status_code == 200, r.text
    return int(r.json()["events"])


def _bounded(settings: dict[str, Any]) -> dict[str, Any]:
    return {**MANUAL, "settings": {**MANUAL["settings"], **settings}}


def _assert_full(r: Any, most: int, events: int) -> None:
    assert r.status_code == 403, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert "world_max_events" in body["detail"]
    assert body["meta"] == {"limit": "world_max_events", "world_max_events": most, "events": events}


# -- health ------------------------------------------------------------------------------


def test_the_default_worlds_health_counts_the_worlds_and_a_worlds_own_names_none(
    sandbox_factory: Any,
) -> None:
    sandbox = sandbox_factory(max_worlds=5, max_loaded_worlds=2)
    front = Front(sandbox)
    first, second, _ = front.world(), front.world(), front.world()  # the first unloaded
    r = front.http.get("/healthz")  # no token, as ever; its shape is the OpenAPI's
    assert r.status_code == 200, r.text
    counts = {"total": 3, "loaded": 2, "max_worlds": 5, "max_loaded_worlds": 2}
    assert r.json()["worlds"] == counts
    own = first.get("/healthz", headers={})
    assert own.status_code == 200, own.text
    assert own.json()["status"] == "ok" and "worlds" not in own.json()
    deleted = front.http.delete(f"/v2/sandbox/worlds/{second.id}", headers=front.headers)
    assert deleted.status_code == 200, deleted.text
    assert front.http.get("/healthz").json()["worlds"] == {**counts, "total": 2}
    front.http.close()


# -- creation's rate limit ------------------------------------------------------------------


def test_creating_worlds_spends_a_budget_of_its_own_not_the_writes(sandbox_factory: Any) -> None:
    sandbox = sandbox_factory(rate_limits_enabled=True)
    front = Front(sandbox)
    r = front.create(MANUAL)
    assert r.status_code == 200, r.text
    assert (r.headers["ratelimit-limit"], r.headers["ratelimit-policy"]) == ("1500", "1500;w=300")
    assert r.headers["ratelimit-remaining"] == "1499"
    written = front.http.post(DEPOSIT, json=BTC, headers=front.headers)
    assert written.status_code == 200, written.text
    assert (written.headers["ratelimit-limit"], written.headers["ratelimit-remaining"]) == (
        "15000",
        "14999",  # this write alone: the creation was not charged to the writes
    )
    front.http.close()


def test_a_burst_of_world_creations_forks_too_is_429_once_over_its_budget(
    sandbox_factory: Any,
) -> None:
    # 0.01 a second: a budget of 3 in five minutes (the `rate_limits` setting, by family)
    sandbox = sandbox_factory(rate_limits_enabled=True, rate_limits={"worlds": 0.01})
    front = Front(sandbox)
    template = front.world()
    assert template.post("/v2/sandbox/snapshots", {"name": "start"}).status_code == 200
    fork = {"from_world": template.id, "from_snapshot": "start"}
    made = [front.create(MANUAL), front.create(fork)]
    assert [r.status_code for r in made] == [200, 200], made[-1].text
    assert (made[-1].headers["ratelimit-limit"], made[-1].headers["ratelimit-remaining"]) == (
        "3",
        "0",
    )
    for body in (fork, MANUAL):
        r = front.create(body)
        assert r.status_code == 429, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert (r.headers["retry-after"], r.headers["ratelimit-remaining"]) == ("300", "0")
        assert "world creations" in r.json()["detail"]
    assert front.http.get("/healthz").json()["worlds"]["total"] == 3
    # the address's other budgets are untouched: its writes, and each world's own
    assert front.http.post(DEPOSIT, json=BTC, headers=front.headers).status_code == 200
    assert template.post(DEPOSIT, BTC).status_code == 200
    front.http.close()


# -- world_max_events -------------------------------------------------------------------


def test_a_full_world_refuses_every_write_and_still_answers_reads(front: Front) -> None:
    held = _events(front, front.world())  # what a new world's log holds
    world = front.world(_bounded({"world_max_events": held + 1}))
    assert world.post(DEPOSIT, BTC).status_code == 200  # room for one more decision
    full = _events(front, world)
    # every write, the fast lane's (deposits, orders) and the routes' alike, is refused
    _assert_full(world.post(DEPOSIT, BTC), held + 1, full)
    order = {"market": "BTCUSD", **limit("SELL", "90000", "0.1")}
    _assert_full(world.post("/v2/profiles/default/orders", order), held + 1, full)
    _assert_full(world.post("/v2/sandbox/snapshots", {"name": "late"}), held + 1, full)
    _assert_full(world.post("/v2/sandbox/clock", {"advance_seconds": 60}), held + 1, full)
    _assert_full(world.post("/v2/profiles", {"nickname": "more"}), held + 1, full)
    assert _events(front, world) == full
    # reads, tokens and health go on, and the clock did not move
    assert world.balance("BTC") == "1"
    assert world.ok("GET", "/v2/profiles/default/orders")["items"] == []
    assert world.ok("GET", "/v2/sandbox/clock")["now"] == "2024-01-01T00:00:00.000000Z"
    world.login(world.made["client_id"], world.made["client_secret"])
    assert world.get("/healthz", headers={}).status_code == 200
    assert verify(location_of(front.sandbox.db, world.id).text) == []


def test_a_world_chooses_its_limit_within_its_servers(sandbox_factory: Any) -> None:
    sandbox = sandbox_factory(world_max_events=10_000)
    front = Front(sandbox)
    for beyond in (10_001, None):  # None: no limit, beyond any
        r = front.create(_bounded({"world_max_events": beyond}))
        assert r.status_code == 400, r.text
        assert r.json()["meta"] == {"field": "settings.world_max_events"}
    world = front.world(_bounded({"world_max_events": _events(front, front.world())}))
    _assert_full(world.post(DEPOSIT, BTC), _events(front, world), _events(front, world))
    front.http.close()


START_MS = 1704067200000  # the sandboxes' start, 2024-01-01T00:00:00Z


def _gtt_orders(sandbox: Any) -> list[dict[str, Any]]:
    """Two resting buys in the default world, expiring 600 s and 1200 s after the start."""
    sandbox.deposit("USD", "1000")
    made = []
    for after in (600, 1200):
        body = limit("BUY", "1000", "0.01", time_in_force="GTT")
        body["expiration_date"] = str(START_MS + after * 1000)
        r = sandbox.post("/v2/profiles/default/orders", {"market": "BTCUSD", **body})
        assert r.status_code == 200, r.text
        made.append(r.json())
    return made


def _statuses(sandbox: Any, orders: list[dict[str, Any]]) -> list[str]:
    return [get_order(sandbox, order)["status"] for order in orders]


def test_a_full_worlds_timers_wait_its_clock_moves_whole_and_they_fire_given_room(
    sandbox_factory: Any,
) -> None:
    still = {"market_volatility": "0"}
    probe = sandbox_factory("probe.db", **still)
    _gtt_orders(probe)
    probe.advance(700)  # the first expiry, then the clock's own event
    most = probe.get("/healthz").json()["position"] - 1
    # the default world, bounded: the first expiry fills its log
    sandbox = sandbox_factory("full.db", world_max_events=most, **still)
    orders = _gtt_orders(sandbox)
    # a clock move that begins with room ends where it was asked, its event recorded,
    # though its timers filled the log: the later expiry waits
    assert sandbox.advance(1800)["now"] == "2024-01-01T00:30:00.000000Z"
    full = sandbox.get("/healthz").json()["position"]
    assert full == most + 1
    assert _statuses(sandbox, orders) == ["CANCELLED", "OPEN"]
    assert sandbox.engine.next_deadline() is None  # nothing for the wall clock to wake
    # full: a clock move is refused before the clock moves, and so is any write
    _assert_full(sandbox.post("/v2/sandbox/clock", {"advance_seconds": 60}), most, full)
    _assert_full(sandbox.post(DEPOSIT, BTC), most, full)
    assert sandbox.get("/v2/sandbox/clock").json()["now"] == "2024-01-01T00:30:00.000000Z"
    assert sandbox.get("/healthz").json()["position"] == full
    sandbox.close()
    assert sandbox.verify() == []
    # given room (no limit), the waiting expiry fires with the next decision
    roomy = sandbox_factory("full.db", **still)
    assert roomy.get("/v2/sandbox/clock").json()["now"] == "2024-01-01T00:30:00.000000Z"
    roomy.advance(1)
    assert _statuses(roomy, orders) == ["CANCELLED", "CANCELLED"]
