"""Issue 31's wire faults (`api_adapter.wire_faults`): what a client gets when a fault
rule drops, resets, empties or truncates an answer. In process: the app a `World`
builds, through Starlette's TestClient and httpx's ASGITransport."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from api_adapter.bootstrap import fixed
from api_adapter.wire_faults import KINDS, arm
from api_adapter.world import World
from tests.conftest import make_settings

PAD = 1000


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """A started world whose app has a test-only route that arms a wire fault."""
    made = World.open(
        tmp_path / "wire.db",
        make_settings(),
        bootstrap=fixed("sandex", "sandex-secret"),
        background=False,
    ).start()

    async def wired(kind: str, request: Request) -> dict[str, str]:
        if kind in KINDS:
            arm(request.scope, kind)
        return {"pad": "x" * PAD}  # the same body whatever the kind

    made.app.add_api_route("/test/wire/{kind}", wired, include_in_schema=False)
    try:
        yield made
    finally:
        made.stop()


def test_in_process_drop_and_reset_raise_what_a_connection_would(world: World) -> None:
    client = TestClient(world.app)
    with pytest.raises(httpx.RemoteProtocolError):
        client.get("/test/wire/drop")
    with pytest.raises(httpx.ReadError):
        client.get("/test/wire/reset")
    assert client.get("/v2/sandbox/clock").status_code == 200

    async def through_asgi_transport() -> None:
        transport = httpx.ASGITransport(app=world.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://sandex") as http:
            with pytest.raises(httpx.RemoteProtocolError):
                await http.get("/test/wire/drop")

    asyncio.run(through_asgi_transport())


def test_in_process_empty_and_truncate_change_the_body(world: World) -> None:
    client = TestClient(world.app)
    whole = len(client.get("/test/wire/none").content)
    empty = client.get("/test/wire/empty")
    assert (empty.status_code, empty.headers["content-length"], empty.content) == (200, "0", b"")
    cut = client.get("/test/wire/truncate")
    assert (cut.status_code, cut.headers["content-length"]) == (200, str(whole))
    assert len(cut.content) == whole // 2


def test_a_kind_outside_the_list_is_refused() -> None:
    with pytest.raises(ValueError, match="one of drop, reset, empty, truncate"):
        arm({"type": "http"}, "slow")
