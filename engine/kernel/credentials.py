"""Credential material: secrets drawn from the OS, hashed or sealed before they reach the
log, and the event fields that hold them, which every output redacts.

Ids come from the seeded id source, so anyone who knows the seed and a log position can
compute them; that is what makes a run reproducible, and why no secret may come from
there. A client secret and its salt, and a webhook secret, are drawn from the operating
system's CSPRNG (`secrets`) through `Secrets`, the one port of the engine that is not
reproducible. Decisions draw through it (`Ctx.secrets`) and record only what a replay
needs: a client secret's salted hash, a webhook secret sealed with AES-256-GCM under the
deployment's sealing key (engine/runtime/key_file.py; the deliverer opens it to sign). A replay
applies those recorded values and never draws.

Those fields therefore differ from run to run of the same scenario: the event catalogue
(engine/kernel/event_catalogue.py) names them, `EVENT_FIELDS` gathers them, `redact` replaces them with `REDACTED` wherever events are shown, and the
log hash (engine/tools/time_travel.py) masks them the same way.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from Crypto.Cipher import AES

from sandex.engine.kernel.event_catalogue import CATALOGUE

REDACTED = "<redacted>"

# Event type -> the fields of its data that hold credential material.
EVENT_FIELDS: dict[str, frozenset[str]] = {
    t: s.credentials for t, s in CATALOGUE.items() if s.credentials
}
# Event type -> its URL fields, shown without their credentials.
_URL_FIELDS: dict[str, frozenset[str]] = {
    t: s.credential_urls for t, s in CATALOGUE.items() if s.credential_urls
}

_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"  # no 0/O, 1/l/I
_SEALED = "sealed1:"
_NONCE = 12
_TAG = 16


class SealError(ValueError):
    """A sealed secret that this key cannot open (another key file, or altered)."""


class Secrets:
    """Where a decision gets secrets: the OS CSPRNG, and the key that seals what must be
    recovered later. Injected into the engine's context, so the domain asks for a secret
    instead of reaching for the OS itself."""

    __slots__ = ("_sealing_key",)

    def __init__(self, sealing_key: bytes) -> None:
        self._sealing_key = sealing_key

    def token(self, length: int) -> str:
        """A secret of `length` characters easy to copy (57 symbols: 5.8 bits each)."""
        return "".join(secrets.choice(_ALPHABET) for _ in range(length))

    def salt(self) -> str:
        return secrets.token_hex(16)

    def seal(self, secret: str, context: str) -> str:
        return seal(self._sealing_key, secret, context)


def seal(key: bytes, secret: str, context: str) -> str:
    """`secret` encrypted and authenticated under `key`, bound to `context` (the
    webhook's id: a sealed value moved to another record does not open)."""
    nonce = secrets.token_bytes(_NONCE)
    cipher = AES.new(key, AES.MODE_GCM, nonce=nonce, mac_len=_TAG)
    cipher.update(context.encode())
    sealed, tag = cipher.encrypt_and_digest(secret.encode())
    return _SEALED + base64.urlsafe_b64encode(nonce + sealed + tag).decode().rstrip("=")


def unseal(key: bytes, value: str, context: str) -> str:
    """The secret `seal` sealed. A value without the sealed prefix is a secret that an
    older sandex kept in clear, and is answered as it is."""
    if not value.startswith(_SEALED):
        return value
    text = value[len(_SEALED) :]
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        if len(raw) < _NONCE + _TAG:
            raise ValueError("too short")
        cipher = AES.new(key, AES.MODE_GCM, nonce=raw[:_NONCE], mac_len=_TAG)
        cipher.update(context.encode())
        return cipher.decrypt_and_verify(raw[_NONCE:-_TAG], raw[-_TAG:]).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise SealError("the sealed secret does not open with this key") from exc


def redact(type: str, data: dict[str, Any]) -> dict[str, Any]:
    """`data` of an event of `type` with its credential fields replaced by `REDACTED`,
    and a webhook URL without its credentials (the same dict when it has none)."""
    fields = EVENT_FIELDS.get(type)
    if not fields:
        return data
    shown = {k: REDACTED if k in fields else v for k, v in data.items()}
    for name in _URL_FIELDS.get(type, ()):
        if isinstance(shown.get(name), str):  # a webhook URL's user:pass and query
            shown[name] = redact_url(shown[name], query=False)
    return shown


def redact_url(url: str, *, query: bool = True) -> str:
    """`url` fit to show or log: credentials (`user:pass@`) become `***@`, and without
    `query` the query string becomes `?***`, since receivers often put a token there."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    if query:
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return urlunsplit((parts.scheme, netloc, parts.path, "***" if parts.query else "", ""))
