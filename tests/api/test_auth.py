"""OAuth2 client credentials and the bearer check of every operation."""

from __future__ import annotations

from typing import Any

import pytest
from freezegun import freeze_time

from sandex.engine.config.settings import KNOWN_SCOPES
from sandex.engine.domain.customers import secret_matches

FORM = {"grant_type": "client_credentials", "client_id": "sandex", "client_secret": "sandex-secret"}


def _form(sb: Any) -> dict[str, str]:
    """A token request of `sb`'s bootstrap client (a plugin world's secret is its own)."""
    return {**FORM, "client_id": sb.client_id, "client_secret": sb.client_secret}


def test_a_token_grants_every_scope_of_the_client_when_none_is_asked(http_sandbox: Any) -> None:
    r = http_sandbox.http.post("/oauth2/token", data=_form(http_sandbox))
    assert r.status_code == 200
    body = r.json()
    assert body["token_type"] == "bearer"
    assert body["expires_in"] == 3599
    # every scope but the permission self_match_prevention_id needs, which is opt-in
    assert set(body["scope"].split()) == set(KNOWN_SCOPES) - {"exchange:self_match_prevention"}
    assert r.headers["cache-control"] == "no-store"


def test_a_token_grants_the_requested_subset_only(http_sandbox: Any) -> None:
    form = {**_form(http_sandbox), "scope": "funding:read_profile"}
    r = http_sandbox.http.post("/oauth2/token", data=form)
    assert r.json()["scope"] == "funding:read_profile"
    headers = {"Authorization": f"Bearer {r.json()['access_token']}"}
    assert http_sandbox.http.get("/v2/profiles", headers=headers).status_code == 200
    refused = http_sandbox.http.post("/v2/profiles", json={"nickname": "x"}, headers=headers)
    assert refused.status_code == 403
    assert refused.headers["content-type"] == "application/problem+json"
    assert "funding:write_profile" in refused.json()["detail"]


@pytest.mark.parametrize(
    ("spoiled", "status", "error"),
    [
        ({"client_secret": "wrong"}, 401, "invalid_client"),
        ({"client_id": "nobody"}, 401, "invalid_client"),
        ({"client_id": None, "client_secret": None}, 401, "invalid_client"),
        ({"grant_type": "password"}, 400, "unsupported_grant_type"),
        ({"grant_type": ""}, 400, "invalid_request"),
    ],
)
def test_bad_token_requests_get_oauth_errors(
    http_sandbox: Any, spoiled: dict[str, str | None], status: int, error: str
) -> None:
    """A good request with `spoiled`'s fields changed (None: left out)."""
    form = {k: v for k, v in {**_form(http_sandbox), **spoiled}.items() if v is not None}
    r = http_sandbox.http.post("/oauth2/token", data=form)
    assert r.status_code == status
    assert r.json()["error"] == error


def test_a_scope_the_client_lacks_is_invalid_scope(http_sandbox: Any) -> None:
    headers, creds = http_sandbox.tenant()
    r = http_sandbox.http.post(
        "/oauth2/token",
        data={
            "grant_type": "client_credentials",
            "client_id": creds["client_id"],
            "client_secret": creds["client_secret"],
            "scope": "sandbox:write_customer",
        },
    )
    assert r.status_code == 400
    assert r.json()["error"] == "invalid_scope"


def test_basic_auth_credentials_are_accepted(http_sandbox: Any) -> None:
    r = http_sandbox.http.post(
        "/oauth2/token",
        data={"grant_type": "client_credentials"},
        auth=(http_sandbox.client_id, http_sandbox.client_secret),
    )
    assert r.status_code == 200


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Basic abc", "Bearer not-a-token", "Bearer sdx1.e30.AAAA", "Bearer a.b.c.d"],
)
def test_missing_malformed_or_forged_tokens_are_401_problems(
    http_sandbox: Any, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    r = http_sandbox.http.get("/v2/profiles", headers=headers)
    assert r.status_code == 401
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["type"] == "about:blank"
    assert r.headers["www-authenticate"] == "Bearer"


def test_a_token_expires_after_its_lifetime(sandbox: Any) -> None:
    with freeze_time("2030-01-01 00:00:00"):
        r = sandbox.http.post("/oauth2/token", data=FORM)
        headers = {"Authorization": f"Bearer {r.json()['access_token']}"}
        assert sandbox.http.get("/v2/profiles", headers=headers).status_code == 200
    with freeze_time("2030-01-01 00:59:58"):
        assert sandbox.http.get("/v2/profiles", headers=headers).status_code == 200
    with freeze_time("2030-01-01 01:00:00"):
        r = sandbox.http.get("/v2/profiles", headers=headers)
        assert r.status_code == 401
        assert "expired" in r.json()["detail"]


def test_tokens_survive_a_restart_but_not_another_deployment(sandbox_factory: Any) -> None:
    first = sandbox_factory("one.db")
    headers = first.headers
    first.close()
    again = sandbox_factory("one.db")
    assert again.get("/v2/profiles", headers=headers).status_code == 200
    other = sandbox_factory("two.db")
    assert other.get("/v2/profiles", headers=headers).status_code == 401


def test_a_client_of_another_customer_cannot_see_or_use_foreign_profiles(http_sandbox: Any) -> None:
    headers, creds = http_sandbox.tenant()
    mine = http_sandbox.get("/v2/profiles/default").json()["id"]
    assert http_sandbox.get(f"/v2/profiles/{mine}", headers=headers).status_code == 404
    assert http_sandbox.get(f"/v2/profiles/{mine}/balances", headers=headers).status_code == 404
    r = http_sandbox.post(
        f"/v2/sandbox/profiles/{mine}/deposit", {"asset": "BTC", "amount": "1"}, headers=headers
    )
    assert r.status_code == 404
    assert (
        http_sandbox.get(f"/v2/profiles/{creds['profile_id']}", headers=headers).status_code == 200
    )
    assert http_sandbox.get(f"/v2/profiles/{creds['profile_id']}").status_code == 404


def test_a_principal_is_made_once_per_token_and_client_row(sandbox: Any) -> None:
    """The bearer check reuses a token's principal while its client row is the same, and
    makes it again from a row read anew (what a revocation or a scope change gives)."""
    from sandex.api_adapter.auth import principal_of
    from sandex.engine.read.clients import client

    state = sandbox.app.state
    clients = state.clients
    header = sandbox.login("sandex", "sandex-secret")["Authorization"]
    token = header.partition(" ")[2]
    row = client(clients.reads, "sandex")
    claims = state.tokens.verify(token)
    first = clients.principal(token, claims, row)
    assert clients.principal(token, claims, row) is first
    narrowed = {**row, "scopes": ("funding:read_profile",)}
    again = clients.principal(token, claims, narrowed)
    assert again is not first and again.scopes == frozenset({"funding:read_profile"})
    # outside a loop every check reads the row again, and the answer is unchanged
    assert principal_of(state.tokens, clients, header) == first


def test_a_secret_checked_right_once_skips_the_slow_check_but_a_wrong_one_never_does(
    sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worlds forked from one template share its client's salt and hash: their
    logins pay the slow PBKDF2 check once between them, while every wrong secret still
    pays it in full and is refused."""
    from sandex.api_adapter.routes import token

    slow: list[str] = []

    def counted(secret: str, salt: str, expected_hash: str) -> bool:
        slow.append(secret)
        return secret_matches(secret, salt, expected_hash)

    monkeypatch.setattr(token, "secret_matches", counted)
    assert sandbox.http.post("/oauth2/token", data=FORM).status_code == 200
    checked = len(slow)
    for _ in range(3):
        assert sandbox.http.post("/oauth2/token", data=FORM).status_code == 200
    assert len(slow) == checked
    wrong = sandbox.http.post("/oauth2/token", data={**FORM, "client_secret": "not-it"})
    assert wrong.status_code == 401
    assert slow[checked:] == ["not-it"]


def test_the_slow_secret_check_holds_no_event_loop(
    sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A token request's secret check (PBKDF2, before anyone is authenticated) runs on a
    worker thread: while one is under way, the same event loop answers other requests.
    The check here waits for the test to release it after `/healthz` has answered; run
    on the loop, it would hold that answer back and its wait would time out instead."""
    import asyncio
    import threading

    import httpx

    from sandex.api_adapter.routes import token

    token.VERIFIED._known.clear()  # the slow path, not a remembered secret
    entered, release = threading.Event(), threading.Event()
    released: list[bool] = []

    def held(secret: str, salt: str, expected_hash: str) -> bool:
        entered.set()
        released.append(release.wait(5))
        return secret_matches(secret, salt, expected_hash)

    monkeypatch.setattr(token, "secret_matches", held)

    async def scenario() -> int:
        transport = httpx.ASGITransport(app=sandbox.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://sandex") as client:
            login = asyncio.create_task(client.post("/oauth2/token", data=FORM))
            assert await asyncio.to_thread(entered.wait, 5)
            health = await client.get("/healthz")
            release.set()
            assert health.status_code == 200
            return (await login).status_code

    assert asyncio.run(scenario()) == 200
    assert released == [True]
