"""Seeded, reproducible identifiers.

An id is a hash of the database's seed, the log position at which the command that
draws it starts, and its rank within that command. The same seed and the same sequence
of commands therefore give the same ids on every run, and nothing needs persisting:
after a restart the next position is read from the log.

Anyone who knows the seed and a position can compute these ids, so they are never
secrets: secrets come from the OS (engine/kernel/credentials.py).
"""

from __future__ import annotations

import hashlib


class IdSource:
    __slots__ = ("seed", "_position", "_rank")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._position = 0
        self._rank = 0

    def start(self, position: int) -> None:
        """Begin drawing for the command whose first event will sit at `position`."""
        self._position = position
        self._rank = 0

    def _digest(self, salt: str) -> bytes:
        self._rank += 1
        key = f"{self.seed}:{self._position}:{self._rank}:{salt}".encode()
        return hashlib.blake2b(key, digest_size=32).digest()

    def uuid(self) -> str:
        """What `str(uuid.UUID(bytes=..., version=4))` gives, without the object."""
        b = bytearray(self._digest("uuid")[:16])
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        h = b.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def hex(self, nbytes: int = 32) -> str:
        return self._digest("hex")[:nbytes].hex()

    def code(self, length: int = 10) -> str:
        """Upper-case code for things a human types (fiat deposit memos)."""
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        return "".join(alphabet[b % len(alphabet)] for b in self._digest("code")[:length])
