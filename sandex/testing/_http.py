"""A small httpx helper for the plugin's calls to one world: its bootstrap client's
bearer token, taken again when the world's clock has outlived it, and problems raised."""

from __future__ import annotations

from typing import Any

import httpx


class SandexError(Exception):
    """An answer of sandex that is not a success: its status and problem document."""

    def __init__(self, method: str, url: str, status: int, problem: Any) -> None:
        super().__init__(f"{method} {url}: {status} {problem}")
        self.status = status
        self.problem = problem


class Api:
    """One world's API (`base_url` ends in /v2) as its bootstrap client."""

    def __init__(
        self, http: httpx.Client, base_url: str, token_url: str, client_id: str, secret: str
    ) -> None:
        self.http = http
        self.base_url = base_url
        self.token_url = token_url
        self.client_id = client_id
        self.secret = secret
        self._token: str | None = None

    def token(self) -> str:
        """A new bearer token of the bootstrap client."""
        r = self.http.post(
            self.token_url,
            data={
                "grant_type": "client_credentials",
                "client_id": self.client_id,
                "client_secret": self.secret,
            },
        )
        _raise_for(r)
        self._token = str(r.json()["access_token"])
        return self._token

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """`method` on `base_url` + `path`; a 401 takes a new token once (a clock moved
        past the token's expiry), any other failure is `SandexError`."""
        url = self.base_url + path
        for attempt in (0, 1):
            token = self._token or self.token()
            r = self.http.request(
                method, url, headers={"Authorization": f"Bearer {token}"}, **kwargs
            )
            if r.status_code == 401 and attempt == 0:
                self._token = None
                continue
            break
        _raise_for(r)
        return r

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON answer of `call` (None when it has no body)."""
        r = self.call(method, path, **kwargs)
        return r.json() if r.content else None


def _raise_for(r: httpx.Response) -> None:
    if r.status_code < 400:
        return
    try:
        problem: Any = r.json()
    except ValueError:
        problem = r.text
    raise SandexError(r.request.method, str(r.request.url), r.status_code, problem)
