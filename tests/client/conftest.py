"""The client against the real app in process: the default world's front (worlds and
all) through Starlette's TestClient, an httpx client, so every request is real HTTP
semantics without a socket. Waits between retries are recorded, not slept."""

from __future__ import annotations

from typing import Any

import pytest

from sandex.client import Client, WorldCreated
from tests.support.world_helpers import MANUAL

BASE = "http://testserver"


class Sleeps(list[float]):
    """A client's `sleep`: what it would have waited, in order."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def admin(front: Any, sleeps: Sleeps) -> Client:
    """The default world's bootstrap client (the worlds' operations are its)."""
    return Client(
        f"{BASE}/v2",
        f"{BASE}/oauth2/token",
        "sandex",
        "sandex-secret",
        http=front.http,
        sleep=sleeps,
    )


@pytest.fixture
def made(admin: Client) -> WorldCreated:
    return admin.create_world(**MANUAL)


@pytest.fixture
def world(front: Any, made: WorldCreated, sleeps: Sleeps) -> Client:
    """A fresh world on a manual clock, through its bootstrap client."""
    return Client.for_world(made, http=front.http, sleep=sleeps)
