"""Paging cursors: opaque tokens that say where the next page starts.

A cursor holds the `seq` of the last row of a page, which is a log position: shown as it
is, it would tell a tenant how much the whole sandbox wrote between two of its pages. So
a cursor is that position sealed with a key of the deployment, and bound to the list it
came from (its table and its customer): a client learns nothing from it, cannot forge
one, and a cursor of another list or another tenant's list is refused, not obeyed.

The seal is AES-SIV (RFC 5297, pycryptodome) with the list as associated data: a
deterministic authenticated encryption, so the same position of the same list always
gives the same cursor, which reveals only that two cursors are equal. The key comes from
the caller (the API derives it from the sealing key of the database's key file,
`sandex.api_adapter.app`, which is never rotated); a cursor sealed under another key (another
database, a lost key file) is a 400 naming `page_cursor`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from typing import Any

from Crypto.Cipher import AES

from sandex.engine.kernel.errors import Invalid

_TAG = 16
_POSITION = 8


def _subkey(key: bytes) -> bytes:
    """A 256-bit AES-SIV key for cursors alone, independent of `key`'s other uses."""
    return hmac.new(key, b"sandex-cursor:siv", hashlib.sha256).digest()


class Cursors:
    """Seals positions into cursors and opens them again, for one deployment key."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes | None = None) -> None:
        """`key`: the deployment's key material; None draws one that lives as long as
        this object (cursors then die with it)."""
        if key is None:
            key = secrets.token_bytes(32)
        self._key = _subkey(key)

    def _cipher(self, scope: tuple[str, ...]) -> Any:
        cipher = AES.new(self._key, AES.MODE_SIV)
        cipher.update("\x00".join(scope).encode())
        return cipher

    def encode(self, position: int, *scope: str) -> str:
        """The cursor of `position` in the list named by `scope` (table, customer)."""
        return self._seal(position.to_bytes(_POSITION, "big"), scope)

    def decode(self, cursor: str, *scope: str) -> int:
        """The position a cursor of this list holds; Invalid (400, `page_cursor`) for
        anything this deployment did not issue for this very list."""
        return self._open(cursor, 1, scope)[0]

    def encode_pair(self, first: int, second: int, *scope: str) -> str:
        """The cursor of a list keyed by two numbers (a list by `updated_at`: the time in
        microseconds and the seq), bound to `scope` as `encode` is."""
        raw = first.to_bytes(_POSITION, "big") + second.to_bytes(_POSITION, "big")
        return self._seal(raw, scope)

    def decode_pair(self, cursor: str, *scope: str) -> tuple[int, int]:
        first, second = self._open(cursor, 2, scope)
        return first, second

    def _seal(self, raw: bytes, scope: tuple[str, ...]) -> str:
        sealed, tag = self._cipher(scope).encrypt_and_digest(raw)
        return base64.urlsafe_b64encode(tag + sealed).decode().rstrip("=")

    def _open(self, cursor: str, count: int, scope: tuple[str, ...]) -> list[int]:
        """The `count` numbers a cursor of this list seals; a cursor of another length
        (another kind of list) fails as a forged one does."""
        length = _TAG + _POSITION * count
        sealed = b""
        if len(cursor) <= 2 * length:  # a long text is refused before any decoding
            try:
                padded = cursor.encode("ascii") + b"=" * (-len(cursor) % 4)
                sealed = base64.urlsafe_b64decode(padded)
            except (ValueError, binascii.Error):
                pass
        if len(sealed) == length:
            cipher = self._cipher(scope)
            try:
                raw = cipher.decrypt_and_verify(sealed[_TAG:], sealed[:_TAG])
            except ValueError:
                raw = b""
            numbers = [
                int.from_bytes(raw[i : i + _POSITION], "big") for i in range(0, len(raw), _POSITION)
            ]
            if raw and all(n < 1 << 63 for n in numbers):  # SQLite integers are signed 64-bit
                return numbers
        raise Invalid("page_cursor invalid: not a cursor this server issued", field="page_cursor")
