"""Seeded, reproducible identifiers, ordered by engine time.

A uuid is laid out as a version-7 UUID (RFC 9562): its first 48 bits are the engine
time of the command that draws it, in milliseconds since the Unix epoch, and its other
74 free bits a hash of the database's seed, the log position at which that command
starts, and the rank of the draw within it. Ids drawn later sort later, so each index
on an id takes its new entries on its last pages, which a commit writes once for the
whole group, instead of one page anywhere in the index per id (random ids wrote 2.6
times the bytes per order, docs/performance.md). The same seed, engine times and
commands give the same ids on every run, and nothing needs persisting: after a restart
the next position is read from the log.

What an id shows a tenant is the time its object was made (its `created_at` says as
much) and bits that look random: two ids of one millisecond are in no telling order, and
the ids of other tenants made in between leave no trace, unlike a log position or a
counter would. Whose bits those are depends on the database: one created without a
seed draws them through a secret id key (keyed BLAKE2b; the key lives in the key file,
engine/runtime/key_file.py), so nobody without that file can compute them; one created
with a seed set (replays, scenarios, backtests) draws them from the seed alone, so
anyone who knows the seed and a position can compute them. Ids are never secrets
either way: secrets come from the OS (engine/kernel/credentials.py).
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from sandex.engine.kernel.clock import to_millis

# The database's meta entry that says its ids are keyed (by the key file's id key);
# without it, they are drawn from the seed.
META_KEY = "ids"
KEYED = "keyed"
_MS_BITS = (1 << 48) - 1
# A hex digit with its top two bits set to 10: the variant of an RFC 9562 UUID.
_VARIANT = {f"{k:x}": f"{(k & 0x3) | 0x8:x}" for k in range(16)}


def time_prefix(ms: int) -> str:
    """The first 13 characters of a time-ordered uuid: `ms` (mod 2**48) as 12 hex
    digits, the hyphen after the eighth and the one after the twelfth."""
    h = f"{ms & _MS_BITS:012x}"
    return f"{h[:8]}-{h[8:]}-"


def time_ordered_uuid(prefix: str, random_hex: str) -> str:
    """A version-7 UUID's text: `prefix` (from `time_prefix`) then 74 bits of
    `random_hex` (19 hex digits or more; the variant takes two bits of its fourth)."""
    r = random_hex
    return f"{prefix}7{r[:3]}-{_VARIANT[r[3]]}{r[4:7]}-{r[7:19]}"


class IdSource:
    __slots__ = ("seed", "_key", "_position", "_rank", "_now", "_prefix")

    def __init__(self, seed: int, key: bytes | None = None) -> None:
        """`key`: the database's secret id key, or None to draw from `seed` alone."""
        self.seed = seed
        self._key = key
        self._position = 0
        self._rank = 0
        self._now: datetime | None = None
        self._prefix = time_prefix(0)

    @property
    def keyed(self) -> bool:
        """Whether the ids are drawn through a secret id key rather than the seed."""
        return self._key is not None

    def start(self, position: int, now: datetime) -> None:
        """Begin drawing for the command whose first event will sit at `position`,
        decided at engine time `now`."""
        self._position = position
        self._rank = 0
        if now != self._now:  # on a manual clock, many commands in a row share it
            self._now = now
            self._prefix = time_prefix(to_millis(now))

    def _digest(self, salt: str) -> bytes:
        self._rank += 1
        if self._key is not None:
            data = f"{self._position}:{self._rank}:{salt}".encode()
            return hashlib.blake2b(data, digest_size=32, key=self._key).digest()
        data = f"{self.seed}:{self._position}:{self._rank}:{salt}".encode()
        return hashlib.blake2b(data, digest_size=32).digest()

    def uuid(self) -> str:
        """A version-7 UUID: the command's engine time, then seeded bits."""
        return time_ordered_uuid(self._prefix, self._digest("uuid")[:10].hex())

    def hex(self, nbytes: int = 32) -> str:
        return self._digest("hex")[:nbytes].hex()

    def code(self, length: int = 10) -> str:
        """Upper-case code for things a human types (fiat deposit memos)."""
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        return "".join(alphabet[b % len(alphabet)] for b in self._digest("code")[:length])
