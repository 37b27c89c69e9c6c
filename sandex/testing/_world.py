"""A world of the session's sandbox as a test sees it: what a user's own Paxos client
needs (its URLs, bootstrap client and DEFAULT profile) and helpers for the sandbox's
own operations, sent through `sandex.client` (without its retries: a fault a test armed
is what the test meets)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from decimal import Decimal
from typing import Any

import httpx

from sandex.client import NO_RETRIES, Client, Event, Request
from sandex.testing._defaults import DEFAULT_BALANCES

# Where `wait_for` reads a resource's status, by kind.
_STATUS_PATHS = {
    "transfer": "/transfer/transfers/{id}",
    "order": "/profiles/{profile_id}/orders/{id}",
}


class Clock:
    """The world's engine clock."""

    def __init__(self, client: Client) -> None:
        self._api = client

    def now(self) -> str:
        """The engine's time (RFC 3339)."""
        return str(self._api.request("GET", "/sandbox/clock")["now"])

    @property
    def mode(self) -> str:
        return str(self._api.request("GET", "/sandbox/clock")["mode"])

    def advance(self, seconds: int) -> str:
        """Move a manual clock on by `seconds` (timers due on the way fire); the new time."""
        answer = self._api.request("POST", "/sandbox/clock", json={"advance_seconds": seconds})
        return str(answer["now"])

    def set(self, to: str) -> str:
        """Move a manual clock to `to` (RFC 3339); the new time."""
        return str(self._api.request("POST", "/sandbox/clock", json={"set_to": to})["now"])


class Faults:
    """The world's fault rules (docs/faults.md)."""

    def __init__(self, client: Client) -> None:
        self._api = client

    def arm(self, match: dict[str, Any], action: dict[str, Any], **rule: Any) -> dict[str, Any]:
        """Arm a rule (`when`, `times`, `skip`, `probability`, `until`, `ttl_seconds` as
        keywords); its answer, with its `id`."""
        body = {"match": match, "action": action, **rule}
        armed: dict[str, Any] = self._api.request("POST", "/sandbox/faults", json=body)
        return armed

    def list(self) -> list[dict[str, Any]]:
        return _items(self._api.request("GET", "/sandbox/faults"))

    def disarm(self, rule_id: str) -> None:
        self._api.request("DELETE", f"/sandbox/faults/{rule_id}")


class SandexWorld:
    """One world: made fresh (a template) or forked from a template's snapshot."""

    def __init__(
        self, made: dict[str, Any], client_id: str, client_secret: str, http: httpx.Client
    ) -> None:
        """`made` is the world's creation answer; a fork's clients are its template's."""
        self.id: str = made["id"]
        self.base_url: str = made["base_url"]
        self.token_url: str = made["token_url"]
        self.client_id = client_id
        self.client_secret = client_secret
        self.profile_id: str = made["profile_id"]
        self.client = Client(
            self.base_url, self.token_url, client_id, client_secret, http=http, retries=NO_RETRIES
        )
        self.clock = Clock(self.client)
        self.faults = Faults(self.client)
        # set at teardown when the plugin keeps the world (a failed test's, by default)
        self.kept = False

    def __repr__(self) -> str:
        return f"<SandexWorld {self.id} {self.base_url}>"

    def token(self) -> str:
        """A new bearer token of the world's bootstrap client."""
        return self.client.token()

    def get(self, path: str, **params: Any) -> Any:
        """GET `base_url` + `path` as the bootstrap client: its JSON."""
        return self.client.request("GET", path, params=params or None)

    def post(self, path: str, body: Any = None) -> Any:
        """POST `body` to `base_url` + `path` as the bootstrap client: its JSON."""
        return self.client.request("POST", path, json=body)

    def set_price(self, market: str, price: Decimal | str, *, gap: bool = False) -> Any:
        """The market's price moves to `price` (walking, or jumping with `gap`)."""
        body = {"price": str(price), "gap": gap}
        return self.post(f"/sandbox/markets/{market}/price", body)

    def deposit(
        self, asset: str, amount: Decimal | str, *, profile_id: str | None = None, **fields: Any
    ) -> Any:
        """A sandbox deposit of `amount` of `asset` into a profile (the DEFAULT one)."""
        body = {"asset": asset, "amount": str(amount), **fields}
        return self.post(f"/sandbox/profiles/{profile_id or self.profile_id}/deposit", body)

    def events(self, **params: Any) -> list[Event]:
        """The world's events (`GET /v2/events`), every page."""
        return list(self.client.iter_events(**params))

    def requests(self, **params: Any) -> list[Request]:
        """The world's recent requests (`GET /v2/sandbox/requests`), every page."""
        return list(self.client.iter_requests(**params))

    def snapshot(self, name: str) -> Any:
        return self.post("/sandbox/snapshots", {"name": name})

    def restore(self, name: str) -> Any:
        return self.post(f"/sandbox/snapshots/{name}/restore")

    def wait_for(
        self,
        kind: str,
        resource_id: str,
        status: str | Collection[str],
        *,
        timeout_seconds: int = 3600,
        step_seconds: int = 1,
        profile_id: str | None = None,
    ) -> dict[str, Any]:
        """The `kind` ("transfer" or "order") once its status is `status` (or one of
        them). The timeout is in engine time: a manual clock is advanced by
        `step_seconds` at a time up to it; a wall clock is waited for."""
        wanted = {status} if isinstance(status, str) else set(status)
        path = _STATUS_PATHS[kind].format(id=resource_id, profile_id=profile_id or self.profile_id)
        manual = self.clock.mode == "manual"
        waited = 0
        started = time.monotonic()
        while True:
            found: dict[str, Any] = self.get(path)
            if found.get("status") in wanted:
                return found
            if waited >= timeout_seconds:
                raise TimeoutError(
                    f"{kind} {resource_id} is {found.get('status')}, not {sorted(wanted)},"
                    f" after {waited} s of engine time"
                )
            if manual:
                self.clock.advance(step_seconds)
                waited += step_seconds
            else:
                time.sleep(0.05)  # a wall clock: its engine time is the real time
                waited = int(time.monotonic() - started)


# How a template is built: called once with the template world, before its snapshot.
Template = Callable[[SandexWorld], None]


def default_template(world: SandexWorld) -> None:
    """The default baseline: the bootstrap customer's DEFAULT profile holds
    `DEFAULT_BALANCES`."""
    for asset, amount in DEFAULT_BALANCES.items():
        world.deposit(asset, amount)


def _items(answer: Any) -> list[dict[str, Any]]:
    if isinstance(answer, list):
        return answer
    return list(answer.get("items") or [])
