"""What worlds may cost a server (docs/worlds.md), through HTTP: the default world's
health counts them, their creation spends a rate-limit budget of its own, and a world's
log is bounded by `world_max_events` (then every write is refused, reads go on, its
timers wait and its log stays whole)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.test_worlds import MANUAL, Front, World

pytestmark = pytest.mark.sqlite_only("worlds are SQLite files beside the default database")

DEPOSIT = "/v2/sandbox/profiles/default/deposit"
BTC = {"asset": "BTC", "amount": "1"}


@pytest.fixture
def front(sandbox: Any) -> Iterator[Front]:
    made = Front(sandbox)
    yield made
    made.http.close()


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
