"""A world created with `record` records its requests as a scenario, and a fork's
recording begins with its template's up to the snapshot, so that `sandex replay` runs
it on an empty sandbox and meets every answer the world gave (docs/worlds.md)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest

from sandex.api_adapter.scenarios.recorder import state_path
from sandex.api_adapter.scenarios.runner import run_in_process
from sandex.api_adapter.worlds.dispatch import WorldDispatch
from sandex.engine.tools.scenario_file import load
from tests.support.trading_helpers import limit
from tests.support.world_helpers import MANUAL, Front, World

pytestmark = pytest.mark.default_world_only(
    "the worlds of a server are managed from its default world"
)

RECORDED = {**MANUAL, "seed": 7, "record": True}


def _recording(front: Front, world_id: str) -> str:
    r = front.http.get(f"/v2/sandbox/worlds/{world_id}/recording", headers=front.headers)
    assert r.status_code == 200, r.text
    assert r.json()["id"] == world_id
    return r.json()["scenario"]  # type: ignore[no-any-return]


def _replays(text: str) -> None:
    result = run_in_process(load(text, "recording.yaml"))
    assert result.ok, [(s.label, s.diffs) for s in result.failed]


def test_a_forks_recording_is_its_templates_then_its_own_and_replays_on_an_empty_sandbox(
    front: Front,
) -> None:
    template = front.world(RECORDED)
    template.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "500"})
    tenant = template.ok("POST", "/v2/sandbox/customers")
    as_tenant = template.login(tenant["client_id"], tenant["client_secret"])
    deposit = {"asset": "USD", "amount": "90"}
    r = template.post("/v2/sandbox/profiles/default/deposit", deposit, headers=as_tenant)
    assert r.status_code == 200, r.text
    template.ok("POST", "/v2/sandbox/snapshots", {"name": "ready"})
    # the template moves on after its snapshot: none of it is the fork's
    template.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "7"})
    made = front.create({"from_world": template.id, "from_snapshot": "ready", "record": True})
    assert made.status_code == 200, made.text
    fork = World(front.http, made.json())
    fork.headers = fork.login(template.made["client_id"], template.made["client_secret"])
    order = fork.order(**limit("BUY", "20000", "0.01"))
    fork.ok("POST", "/v2/sandbox/clock", {"advance_seconds": 60})
    # the template's customer, known to the fork's recording as the template's actor
    r = fork.get("/v2/profiles/default/balances/USD", headers=as_tenant)
    assert r.status_code == 401  # a fork's tokens are its own: log in there
    stale, as_tenant = as_tenant, fork.login(tenant["client_id"], tenant["client_secret"])
    r = fork.get("/v2/profiles/default/balances/USD", headers=as_tenant)
    assert r.status_code == 200 and r.json()["available"] == "90"

    recorded = _recording(front, fork.id)
    assert recorded.count("amount: '500'") == 1 and "amount: '7'" not in recorded
    assert "create_actor: customer1" in recorded and "actor: customer1" in recorded
    assert recorded.index("/v2/sandbox/snapshots") < recorded.index("/orders")
    sent = (stale, as_tenant, template.headers, fork.headers)
    tokens = [headers["Authorization"].split(" ")[1] for headers in sent]
    for secret in (tenant["client_secret"], template.made["client_secret"], *tokens):
        assert secret not in recorded
    # the template's token the fork refused: recorded without its signature
    assert tokens[0].rsplit(".", 1)[0] in recorded
    assert order["status"] == "OPEN"
    _replays(recorded)
    _replays(_recording(front, template.id))  # the template's own goes on past its snapshot


def test_a_snapshots_mark_is_saved_before_its_answer_ends(front: Front) -> None:
    """A client that forks the snapshot it was just answered (the pytest plugin's
    template, then its first test's world) finds the mark its fork's recording starts
    from: the request is recorded before the answer's last part is sent, not after."""
    template = front.world(RECORDED)
    state = state_path(front.sandbox.app.state.worlds._recording_of(template.id))
    body = orjson.dumps({"name": "ready"})
    path = f"/w/{template.id}/v2/sandbox/snapshots"
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    headers.append((b"authorization", template.headers["Authorization"].encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1"}
    scope.update(method="POST", scheme="http", path=path, raw_path=path.encode())
    scope.update(query_string=b"", root_path="", headers=headers)
    scope.update(server=("testserver", 80), client=("testclient", 50000))
    seen: dict[str, Any] = {}

    async def receive() -> dict[str, Any]:
        if "asked" not in seen:
            seen["asked"] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)  # no disconnect while it answers
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            seen["status"] = message["status"]
        elif message["type"] == "http.response.body" and not message.get("more_body"):
            seen["marks"] = list(orjson.loads(state.read_bytes())["marks"])

    asyncio.run(WorldDispatch(front.sandbox.app)(scope, receive, send))  # type: ignore[arg-type]
    assert seen["status"] == 200
    assert seen["marks"] == ["ready"]


def test_a_recorded_world_loaded_again_goes_on_with_its_recording(
    front: Front, sandbox: Any
) -> None:
    world = front.world(RECORDED)
    world.ok("POST", "/v2/sandbox/profiles/default/deposit", {"asset": "USD", "amount": "500"})
    manager = sandbox.app.state.worlds
    manager.sweep(time.time() + sandbox.engine.settings.world_idle_unload_seconds + 1)
    assert manager.describe(world.id)["loaded"] is False
    world.headers = world.login(world.made["client_id"], world.made["client_secret"])
    world.order(**limit("BUY", "20000", "0.01"))
    recorded = _recording(front, world.id)
    assert recorded.count("version: 1") == 1 and "/orders" in recorded
    _replays(recorded)


def test_a_recording_is_of_a_world_made_to_record(front: Front) -> None:
    plain = front.world()
    plain.ok("POST", "/v2/sandbox/snapshots", {"name": "ready"})
    r = front.http.get(f"/v2/sandbox/worlds/{plain.id}/recording", headers=front.headers)
    assert r.status_code == 404 and "record" in r.json()["detail"]
    r = front.create({"from_world": plain.id, "from_snapshot": "ready", "record": True})
    assert r.status_code == 400 and r.json()["meta"]["field"] == "record", r.text
    # a recorded world's snapshot: its fork's recording starts with the template's
    recorded = front.world(RECORDED)
    recorded.ok("POST", "/v2/sandbox/snapshots", {"name": "ready"})
    r = front.create({"from_world": recorded.id, "from_snapshot": "ready", "record": True})
    assert r.status_code == 200, r.text
    assert _recording(front, r.json()["id"]).count("/v2/sandbox/snapshots") == 1
    # a recorded world asked nothing yet: its recording is its header
    r = front.create(RECORDED)
    assert r.status_code == 200, r.text
    fresh = _recording(front, r.json()["id"])
    assert fresh.rstrip().endswith("steps: []")
    _replays(fresh)


def test_a_refused_customer_creation_is_recorded_as_the_request_it_was(
    front: Front, capfd: pytest.CaptureFixture[str]
) -> None:
    """Only a created customer becomes a `create_actor` step; a refused creation is a
    request with its problem, which the replay meets again."""
    world = front.world(RECORDED)
    r = world.post("/v2/sandbox/customers", {"scopes": None})
    assert r.status_code == 400, r.text
    world.ok("POST", "/v2/sandbox/customers")
    recorded = _recording(front, world.id)
    assert "could not record" not in capfd.readouterr().err
    assert recorded.count("/v2/sandbox/customers") == 1  # the refused one, as a request
    assert "create_actor: customer1" in recorded
    _replays(recorded)
