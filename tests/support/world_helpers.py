"""Worlds seen from a test: the default sandbox behind the worlds' dispatcher (`Front`),
and a world it made, driven under its prefix with its bootstrap client (`World`)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from sandex.api_adapter.worlds.dispatch import WorldDispatch

MANUAL = {
    "clock": "manual",
    "start_time": "2024-01-01T00:00:00Z",
    "settings": {"market_volatility": "0"},
}


class World:
    """A world seen through the server's front: its prefix and its bootstrap client."""

    def __init__(self, http: Any, made: dict[str, Any]) -> None:
        self.http = http
        self.made = made
        self.id = made["id"]
        self.prefix = f"/w/{self.id}"
        self.headers: dict[str, str] = {}
        if made.get("client_secret"):
            self.headers = self.login(made["client_id"], made["client_secret"])

    def login(self, client_id: str, secret: str) -> dict[str, str]:
        form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
        r = self.http.post(f"{self.prefix}/oauth2/token", data=form)
        assert r.status_code == 200, r.text
        return {"Authorization": f"Bearer {r.json()['access_token']}"}

    def get(self, path: str, **kw: Any) -> Any:
        kw.setdefault("headers", self.headers)
        return self.http.get(self.prefix + path, **kw)

    def post(self, path: str, json: Any = None, **kw: Any) -> Any:
        kw.setdefault("headers", self.headers)
        return self.http.post(self.prefix + path, json=json, **kw)

    def ok(self, method: str, path: str, json: Any = None) -> Any:
        r = self.http.request(method, self.prefix + path, json=json, headers=self.headers)
        assert r.status_code == 200, r.text
        return r.json()

    def order(self, **body: Any) -> dict[str, Any]:
        return self.ok("POST", "/v2/profiles/default/orders", {"market": "BTCUSD", **body})  # type: ignore[no-any-return]

    def balance(self, asset: str) -> str:
        return self.ok("GET", f"/v2/profiles/default/balances/{asset}")["available"]  # type: ignore[no-any-return]


class Front:
    """The default sandbox behind the worlds' dispatcher, as `sandex serve` mounts it."""

    def __init__(self, sandbox: Any) -> None:
        self.sandbox = sandbox
        self.http = TestClient(WorldDispatch(sandbox.app), raise_server_exceptions=False)
        self.headers = sandbox.headers

    def create(self, body: Any = None, headers: Any = None) -> Any:
        return self.http.post("/v2/sandbox/worlds", json=body, headers=headers or self.headers)

    def world(self, body: Any = MANUAL) -> World:
        r = self.create(body)
        assert r.status_code == 200, r.text
        return World(self.http, r.json())
