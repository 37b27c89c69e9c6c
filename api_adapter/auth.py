"""OAuth2 client credentials: the token endpoint and the bearer check of every operation.

Tokens are stateless and signed with the signing key of the database's key file
(engine/runtime/key_file.py), so they survive a restart and are worthless against another
deployment. `sandex keys rotate` replaces the key: the file is checked (a stat) on every
token signed, and on the first token verified in each turn of the event loop (every token
outside one), so tokens signed before stop working at once, in a running server too
(`LoopTurns` says why once a turn is enough). Token lifetime is wall time (an HTTP
concern): a manual engine clock moved a day forward does not log clients out.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import time
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi.openapi.models import OAuthFlowClientCredentials, OAuthFlows
from fastapi.security import OAuth2

from sandex.api_adapter.problems import AuthError
from sandex.engine.config.settings import KNOWN_SCOPES
from sandex.engine.read import clients as client_rows
from sandex.engine.read.connections import ReadConnections
from sandex.engine.runtime.key_file import KeyFile

_PREFIX = "sdx1"

oauth2_scheme = OAuth2(
    flows=OAuthFlows(
        clientCredentials=OAuthFlowClientCredentials(
            tokenUrl="/oauth2/token", scopes={s: s for s in KNOWN_SCOPES}
        )
    ),
    auto_error=False,
)


@dataclass(frozen=True, slots=True)
class Principal:
    customer_id: str
    client_id: str
    scopes: frozenset[str]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def unb64(text: str) -> bytes:
    """Base64url without its padding, decoded (tokens, HTTP Basic credentials)."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class LoopTurns:
    """Whether a check is the first of the running event loop's turn (iteration).

    What such a check reads (the key file, the clients table) holds for the rest of the
    turn: it is read in the first check of a turn, after the loop has read from its
    sockets every byte that the turn's requests are made of (a request's handler runs in
    a task scheduled by the read that completed it, and the turn's reset is scheduled
    behind the reads that came before it). So a request sent after a change was made
    (a key rotated, a client revoked, by this process or another) is checked against the
    change. Outside a running loop every check is a first one."""

    __slots__ = ("_loop",)

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def first(self) -> bool:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return True
        if self._loop is loop:
            return False
        self._loop = loop
        loop.call_soon(self._next_turn)
        return True

    def _next_turn(self) -> None:
        self._loop = None


# Tokens whose signature and payload have been checked, kept until the cache fills up.
# Only the signature check is cached: expiry is compared on every request, and the
# client's revocation is looked up on every request (`principal_of`).
_VERIFIED_MAX = 4096


class Tokens:
    def __init__(self, keys: KeyFile, ttl_seconds: int) -> None:
        self._keys = keys
        self._keyset = keys.current()
        self._key = self._keyset.signing
        self.ttl = ttl_seconds
        self._verified: dict[str, dict[str, Any]] = {}
        self._turns = LoopTurns()

    def _current(self) -> None:
        """Follow a rotation of the signing key: the tokens checked under the old key
        are forgotten, so none of them passes again."""
        keyset = self._keys.current()
        if keyset is not self._keyset:
            self._keyset = keyset
            if keyset.signing != self._key:
                self._key = keyset.signing
                self._verified.clear()

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest())

    def issue(self, client_id: str, scopes: list[str]) -> str:
        self._current()
        now = int(time.time())
        payload = _b64(orjson.dumps({"c": client_id, "s": scopes, "i": now, "e": now + self.ttl}))
        return f"{_PREFIX}.{payload}.{self._sign(payload)}"

    def verify(self, token: str) -> dict[str, Any]:
        """The token's claims, or AuthError 401 when forged, malformed or expired.

        A token's signature is checked once (an HMAC and a decode cost more than the rest
        of the bearer check); its expiry on every call, and the key file once a turn of
        the event loop (`LoopTurns`)."""
        if self._turns.first():
            self._current()
        claims = self._verified.get(token)
        if claims is None:
            claims = self._checked(token)
            if len(self._verified) >= _VERIFIED_MAX:
                self._verified.clear()
            self._verified[token] = claims
        if int(claims.get("e", 0)) <= time.time():
            raise AuthError(401, "access token expired")
        return claims

    def _checked(self, token: str) -> dict[str, Any]:
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != _PREFIX:
            raise AuthError(401, "malformed access token")
        if not hmac.compare_digest(self._sign(parts[1]), parts[2]):
            raise AuthError(401, "invalid access token")
        try:
            claims = orjson.loads(unb64(parts[1]))
        except (ValueError, orjson.JSONDecodeError) as exc:
            raise AuthError(401, "malformed access token") from exc
        if not isinstance(claims, dict):
            raise AuthError(401, "malformed access token")
        return claims


class Clients:
    """The clients table as the bearer check reads it: the database is asked whether it
    changed at most once per event-loop iteration, and a client's row only after it did.

    The question is the data version of the loop thread's read connection, which
    changes whenever any other connection commits: the writer of this process (a client
    created or revoked) or another process (`sandex clients revoke` on a live
    database). A revocation therefore still takes effect at once: the answer is taken
    in the first bearer check of an iteration, after the loop has read from its sockets
    every byte that iteration handles, so a request sent after a revocation committed is
    checked against the database as it stood after the commit. Within the iteration the
    requests share that answer and the rows read since (the writer commits every few
    milliseconds, so a row is read about once per group commit instead of once per
    request: each read of SQLite is a read transaction and hands the GIL to the writer).
    A row read again after a commit that left its record as it was is the row held
    before, the same object: its principals (`principal`) are not made again. Outside a
    running loop every call reads the database.
    """

    _MAX_ROWS = 4096

    def __init__(self, reads: ReadConnections) -> None:
        self.reads = reads
        # client id -> its stored record and the row made of it
        self._rows: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}
        # the clients whose records were read at the data version `_version`
        self._current: set[str] = set()
        # the principal of a token, with the client row it was made from
        self._principals: dict[str, tuple[dict[str, Any], Principal]] = {}
        self._version: tuple[object, int] | None = None
        self._turns = LoopTurns()

    def get(self, client_id: str) -> dict[str, Any] | None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return client_rows.client(self.reads, client_id)
        if self._turns.first():
            version = self.reads.data_version()
            if version != self._version:
                self._current.clear()
                self._version = version
        held = self._rows.get(client_id)
        if held is not None and client_id in self._current:
            return held[1]
        stored = client_rows.record(self.reads, client_id)
        if stored is None:
            self._rows.pop(client_id, None)
            return None
        row = held[1] if held is not None and held[0] == stored else client_rows.row_of(stored)
        if held is not None or len(self._rows) < self._MAX_ROWS:
            self._rows[client_id] = (stored, row)
            self._current.add(client_id)
        return row

    def principal(self, token: str, claims: dict[str, Any], client: dict[str, Any]) -> Principal:
        """The principal of a verified token whose client `client` is not revoked.

        Made once per token and client row: the scopes granted are the token's that the
        client still holds, a set built from both on every request otherwise. A row read
        again (after any commit, or on every call outside a loop) is a new object, so the
        principal is made again from it."""
        cached = self._principals.get(token)
        if cached is not None and cached[0] is client:
            return cached[1]
        granted = frozenset(s for s in claims.get("s", ()) if s in client["scopes"])
        principal = Principal(client["customer_id"], client["client_id"], granted)
        if len(self._principals) >= self._MAX_ROWS:
            self._principals.clear()
        self._principals[token] = (client, principal)
        return principal


def principal_of(tokens: Tokens, clients: Clients, authorization: str | None) -> Principal:
    """Who holds the bearer token of an Authorization header, or AuthError 401."""
    if not authorization:
        raise AuthError(401, "missing bearer token")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthError(401, "malformed Authorization header: expected 'Bearer <token>'")
    token = token.strip()
    claims = tokens.verify(token)
    client = clients.get(claims.get("c", ""))
    if client is None or client["revoked"]:
        raise AuthError(401, "the client of this token is revoked or unknown")
    return clients.principal(token, claims, client)
