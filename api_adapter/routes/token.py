"""The token endpoint: OAuth2 client credentials (RFC 6749 section 4.4)."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from sandex.api_adapter.auth import Tokens, unb64
from sandex.api_adapter.pipeline import route
from sandex.api_adapter.rate_limits import TOKEN_FAILURES, RateLimiter
from sandex.api_adapter.recent_requests import CALLER
from sandex.api_adapter.responses import JSONResponse
from sandex.engine.domain.customers import secret_matches
from sandex.engine.read import clients as client_rows


def _oauth_error(status: int, error: str, description: str) -> JSONResponse:
    return JSONResponse(
        {"error": error, "error_description": description},
        status_code=status,
        headers={"Cache-Control": "no-store"},
    )


class VerifiedSecrets:
    """The secrets this process has already checked right, by their stored hash: a
    keyed HMAC of each (its key drawn here, never stored), so that the next login with
    the same secret skips the slow PBKDF2 check. A fork's bootstrap client keeps its
    template's salt and hash, so a suite's worlds pay that check once between them. A
    secret not seen right before (every wrong guess) still pays the slow check in full."""

    MAX = 4096

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)
        self._known: dict[tuple[str, str], bytes] = {}

    def _mac(self, secret: str) -> bytes:
        return hmac.digest(self._key, secret.encode(), hashlib.sha256)

    def matches(self, secret: str, salt: str, expected_hash: str) -> bool:
        known = self._known.get((salt, expected_hash))
        if known is not None and hmac.compare_digest(known, self._mac(secret)):
            return True
        if not secret_matches(secret, salt, expected_hash):
            return False
        if len(self._known) >= self.MAX:
            self._known.clear()
        self._known[(salt, expected_hash)] = self._mac(secret)
        return True


# One per process: the worlds of a server share it.
VERIFIED = VerifiedSecrets()

router = APIRouter(tags=["OAuth2"])


@route(router, "IssueToken", summary="Issue an access token (client credentials)")
async def issue_token(request: Request) -> JSONResponse:
    try:
        form = await request.form()
    except Exception:  # noqa: BLE001 - any unreadable body is the client's fault
        return _oauth_error(400, "invalid_request", "the body must be form-encoded")
    grant_type = form.get("grant_type")
    client_id = form.get("client_id")
    client_secret = form.get("client_secret")
    header = request.headers.get("authorization", "")
    if header.lower().startswith("basic ") and client_id is None:
        try:
            client_id, _, client_secret = unb64(header[6:].strip()).decode().partition(":")
        except (ValueError, UnicodeError):
            return _oauth_error(401, "invalid_client", "malformed basic credentials")
    if grant_type != "client_credentials":
        if not grant_type:
            return _oauth_error(400, "invalid_request", "grant_type is required")
        return _oauth_error(400, "unsupported_grant_type", "only client_credentials is supported")
    if not isinstance(client_id, str) or not isinstance(client_secret, str):
        return _oauth_error(401, "invalid_client", "client_id and client_secret are required")
    # Every token request was charged to its address's `token` budget before this
    # handler ran. A failed one is charged besides to the address's `token-failures`
    # budget, whose penalty is checked before the deliberately slow secret check: that
    # check is no amplifier of an unauthenticated flood, and whoever names a client
    # without its secret throttles their own address, never the client's.
    limiter: RateLimiter | None = request.app.state.limiter
    if limiter is not None:
        limiter.hold(request.scope, TOKEN_FAILURES)
    client = client_rows.client(request.app.state.queries, client_id)
    # The slow check runs on a worker thread (PBKDF2 gives up the GIL): a burst of
    # token requests, none of them authenticated yet, never holds the event loop.
    if (
        client is None
        or client["revoked"]
        or not await run_in_threadpool(
            VERIFIED.matches, client_secret, client["salt"], client["secret_hash"]
        )
    ):
        if limiter is not None:
            limiter.charge(request.scope, TOKEN_FAILURES)
        return _oauth_error(401, "invalid_client", "unknown client or wrong secret")
    requested = form.get("scope")
    if isinstance(requested, str) and requested.strip():
        scopes = requested.split()
        missing = [s for s in scopes if s not in client["scopes"]]
        if missing:
            return _oauth_error(400, "invalid_scope", f"scope not granted to client: {missing[0]}")
    else:
        scopes = list(client["scopes"])
    tokens: Tokens = request.app.state.tokens
    request.scope["state"][CALLER] = client["customer_id"], client_id  # the request log's
    return JSONResponse(
        {
            "access_token": tokens.issue(client_id, scopes),
            "expires_in": tokens.ttl,
            "scope": " ".join(scopes),
            "token_type": "bearer",
        },
        headers={"Cache-Control": "no-store"},
    )
