"""Execution ids: the public numbers of executions, which keep the engine's count hidden.

The engine numbers executions with one counter across every tenant: `TradeExecuted`
events carry it, and the read side orders and pages by it. Shown as it is, the counter
would let a tenant read the whole sandbox's trading volume off the gaps between its own
ids. The API shows each number through a keyed permutation instead: ids stay unsigned
64-bit integers in decimal text (the reference's `uint64` string), are unique, and look
unrelated to each other; `since_execution_id` maps back through the inverse.

The permutation is a format-preserving block cipher over 1..2**63-1: an alternating
Feistel network on a 31-bit and a 32-bit half, with keyed BLAKE2b as round function, and
one cycle-walking step that keeps 0 out. Its key belongs to the database (see
`database_key`): drawn from the OS CSPRNG when the database is created, or derived
from the seed when reproducible ids matter more than hiding volume (backtests and
scenario replays). The log keeps the counter, so the key never enters it and a log
replays the same whatever key reads it.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Literal

# Every public id lies in 1..2**63-1: a uint64 of the reference that also fits SQLite's
# signed 64-bit integers.
LIMIT = 1 << 63
_LOW_BITS = 32
_LOW_MASK = (1 << _LOW_BITS) - 1
_HIGH_MASK = (1 << (63 - _LOW_BITS)) - 1
# Alternating half-rounds: each half is mixed 6 times, past the 4 full rounds that
# Luby-Rackoff needs for a strong pseudorandom permutation.
_ROUNDS = 12

META_KEY = "execution_id_key"
KeyMode = Literal["random", "seeded"]


class ExecutionIds:
    """The permutation between execution numbers (the engine's) and ids (the API's)."""

    __slots__ = ("_rounds",)

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("an execution id key has at least 16 bytes")
        mac = hashlib.blake2b(key=hashlib.blake2b(key).digest(), digest_size=4)
        # one MAC per round, its round number already absorbed: a round copies it
        self._rounds: list[hashlib.blake2b] = []
        for i in range(_ROUNDS):
            keyed = mac.copy()
            keyed.update(bytes((i,)))
            self._rounds.append(keyed)

    def _encrypt(self, value: int) -> int:
        high, low = value >> _LOW_BITS, value & _LOW_MASK
        for i, keyed in enumerate(self._rounds):
            mac = keyed.copy()
            if i % 2:
                mac.update(high.to_bytes(4, "big"))
                low ^= int.from_bytes(mac.digest(), "big")  # 32 bits: the width of `low`
            else:
                mac.update(low.to_bytes(4, "big"))
                high ^= int.from_bytes(mac.digest(), "big") & _HIGH_MASK
        return (high << _LOW_BITS) | low

    def _decrypt(self, value: int) -> int:
        high, low = value >> _LOW_BITS, value & _LOW_MASK
        for i in range(_ROUNDS - 1, -1, -1):
            mac = self._rounds[i].copy()
            if i % 2:
                mac.update(high.to_bytes(4, "big"))
                low ^= int.from_bytes(mac.digest(), "big")
            else:
                mac.update(low.to_bytes(4, "big"))
                high ^= int.from_bytes(mac.digest(), "big") & _HIGH_MASK
        return (high << _LOW_BITS) | low

    def public(self, number: int) -> int:
        """The id the API shows for execution `number` (1 or more)."""
        if not 0 < number < LIMIT:
            raise ValueError(f"execution number {number} out of range")
        value = self._encrypt(number)
        while value == 0:  # cycle walking: 0 is no id, so step on to the next value
            value = self._encrypt(value)
        return value

    def number(self, public: int) -> int:
        """The execution number behind a public id; 0, which no execution has, stands
        before them all. ValueError for a value beyond every id."""
        if public == 0:
            return 0
        if not 0 < public < LIMIT:
            raise ValueError(f"execution id {public} out of range")
        value = self._decrypt(public)
        while value == 0:
            value = self._decrypt(value)
        return value


def new_key(mode: KeyMode, seed: int) -> str:
    """A database's key, in hex. `random` hides volume from everyone without the
    database file; `seeded` gives the same ids for the same seed and commands, and so
    shows the volume to whoever knows or guesses the seed."""
    if mode == "seeded":
        return hashlib.blake2b(f"sandex-execution-ids:{seed}".encode(), digest_size=32).hexdigest()
    return secrets.token_hex(32)


def database_key(text: str) -> ExecutionIds:
    """The permutation of a database, from the key its meta table holds."""
    return ExecutionIds(bytes.fromhex(text))
