"""Paging cursors: opaque tokens that say where the next page starts.

A cursor holds the `seq` of the last row of a page, which is a log position: shown as it
is, it would tell a tenant how much the whole sandbox wrote between two of its pages. So
a cursor is that position sealed with a key of the deployment, and bound to the list it
came from (its table and its customer): a client learns nothing from it, cannot forge
one, and a cursor of another list or another tenant's list is refused, not obeyed.

The seal is a deterministic authenticated encryption in the SIV style, with keyed
BLAKE2b for both parts: a 96-bit tag is the MAC of the list and the position, and the
position travels XORed with a pad that the tag and a second key give. Deterministic
means the same position of the same list always gives the same cursor, which reveals
only that two cursors are equal. The key comes from the caller (the API derives it from
its signing key, `api_adapter.app`): rotating that key invalidates outstanding cursors,
which a client then meets as a 400 naming `page_cursor`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

from engine.errors import Invalid

_TAG = 12
_POSITION = 8
_LENGTH = _TAG + _POSITION


def _subkey(key: bytes, label: bytes) -> bytes:
    """A key for one use, independent of `key`'s other uses (token signing)."""
    return hmac.new(key, b"sandex-cursor:" + label, hashlib.sha256).digest()


class Cursors:
    """Seals positions into cursors and opens them again, for one deployment key."""

    __slots__ = ("_mac", "_pad")

    def __init__(self, key: bytes | None = None) -> None:
        """`key`: the deployment's key material; None draws one that lives as long as
        this object (cursors then die with it)."""
        if key is None:
            key = secrets.token_bytes(32)
        self._mac = hashlib.blake2b(key=_subkey(key, b"mac"), digest_size=_TAG)
        self._pad = hashlib.blake2b(key=_subkey(key, b"pad"), digest_size=_POSITION)

    def _tag(self, scope: bytes, position: bytes) -> bytes:
        mac = self._mac.copy()
        mac.update(len(scope).to_bytes(4, "big") + scope + position)
        return mac.digest()

    def _masked(self, tag: bytes, position: bytes) -> bytes:
        pad = self._pad.copy()
        pad.update(tag)
        return bytes(a ^ b for a, b in zip(position, pad.digest(), strict=True))

    def encode(self, position: int, *scope: str) -> str:
        """The cursor of `position` in the list named by `scope` (table, customer)."""
        raw = position.to_bytes(_POSITION, "big")
        tag = self._tag("\x00".join(scope).encode(), raw)
        sealed = tag + self._masked(tag, raw)
        return base64.urlsafe_b64encode(sealed).decode().rstrip("=")

    def decode(self, cursor: str, *scope: str) -> int:
        """The position a cursor of this list holds; Invalid (400, `page_cursor`) for
        anything this deployment did not issue for this very list."""
        sealed = b""
        if len(cursor) <= 2 * _LENGTH:  # a long text is refused before any decoding
            try:
                padded = cursor.encode("ascii") + b"=" * (-len(cursor) % 4)
                sealed = base64.urlsafe_b64decode(padded)
            except (ValueError, binascii.Error):
                pass
        if len(sealed) == _LENGTH:
            tag = sealed[:_TAG]
            raw = self._masked(tag, sealed[_TAG:])
            if hmac.compare_digest(tag, self._tag("\x00".join(scope).encode(), raw)):
                position = int.from_bytes(raw, "big")
                if position < 1 << 63:  # SQLite integers are signed 64-bit
                    return position
        raise Invalid("page_cursor invalid: not a cursor this server issued", field="page_cursor")
