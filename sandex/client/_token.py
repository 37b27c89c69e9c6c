"""A client's bearer token, kept until shortly before it expires."""

from __future__ import annotations

import time
from typing import Any

from sandex.client import _models as m

# Fetched again this long before it expires, so no request carries one that expires on
# the way.
_MARGIN_SECONDS = 5.0


class TokenCache:
    def __init__(self) -> None:
        self._value: str | None = None
        self._until = 0.0

    def valid(self) -> str | None:
        return self._value if self._value and time.monotonic() < self._until else None

    def keep(self, answer: dict[str, Any]) -> str:
        self._value = str(answer["access_token"])
        self._until = time.monotonic() + float(answer.get("expires_in", 60)) - _MARGIN_SECONDS
        return self._value

    def drop(self) -> None:
        self._value = None


def token_form(client_id: str, secret: str) -> dict[str, str]:
    return {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}


def world_fields(
    world: m.WorldCreated | dict[str, Any], client_secret: str | None
) -> tuple[str, str, str, str]:
    """(base_url, token_url, client_id, client_secret) of a world's creation answer."""
    made = world if isinstance(world, m.WorldCreated) else m.WorldCreated.model_validate(world)
    secret = client_secret or made.client_secret
    if secret is None:
        raise ValueError(
            f"world {made.id} is a fork: its answer has no client_secret; give its template's"
        )
    return made.base_url, made.token_url, made.client_id, secret
