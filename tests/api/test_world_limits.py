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
