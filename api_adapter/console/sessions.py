"""The console's sign-ins: a server-side session per browser, named by a random id in an
HttpOnly, same-site cookie. The bearer token stays on the server (never in a page or a
URL); every form carries the session's own token, checked on each action."""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass, field

# The cookie of a signed-in browser, and of one about to sign in (the sign-in form's
# own token: a form posted from another site carries neither).
COOKIE = "sandex_console"
SIGNIN_COOKIE = "sandex_console_signin"
# Field of every form (and header of htmx's requests) carrying the form token.
FORM_FIELD = "csrf"
# Sessions a world keeps at most; the oldest goes first.
MAX_SESSIONS = 1000


@dataclass
class Session:
    """A signed-in client: its bearer token (from the world's own token endpoint), who
    it is, and the token its forms carry."""

    token: str
    client_id: str
    customer_id: str
    operator: bool
    expires_at: float
    form_token: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def admits(self, form_token: str | None) -> bool:
        """Whether a posted form carries this session's token."""
        return bool(form_token) and hmac.compare_digest(
            self.form_token.encode(), str(form_token).encode()
        )


class Sessions:
    """One world's console sessions, in memory: a restart signs everyone out."""

    def __init__(self) -> None:
        self._held: dict[str, Session] = {}

    def open(self, session: Session) -> str:
        """A new session id for `session`, drawn from the OS."""
        if len(self._held) >= MAX_SESSIONS:
            self._held.pop(next(iter(self._held)))
        sid = secrets.token_urlsafe(32)
        self._held[sid] = session
        return sid

    def get(self, sid: str | None) -> Session | None:
        """The live session of `sid`, or None (unknown, or its token expired)."""
        if not sid:
            return None
        session = self._held.get(sid)
        if session is not None and session.expires_at <= time.time():
            self._held.pop(sid, None)
            return None
        return session

    def close(self, sid: str | None) -> None:
        if sid:
            self._held.pop(sid, None)


def same(expected: str | None, given: str | None) -> bool:
    """Whether a sign-in form's token is its cookie's."""
    return bool(expected) and bool(given) and hmac.compare_digest(str(expected), str(given))
