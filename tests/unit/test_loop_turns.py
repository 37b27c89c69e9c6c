"""The bearer check reads the key file once per turn of the event loop, not once per
request (api_adapter/auth.py: LoopTurns), and every time outside a loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sandex.api_adapter.auth import AuthError, LoopTurns, Tokens
from sandex.engine.runtime.key_file import KeyFile


class CountedKeys:
    """A key file whose reads are counted."""

    def __init__(self, keys: KeyFile) -> None:
        self.keys = keys
        self.reads = 0

    def current(self) -> object:
        self.reads += 1
        return self.keys.current()


def test_the_first_check_of_each_turn_and_every_check_outside_a_loop() -> None:
    turns = LoopTurns()
    assert turns.first() and turns.first()  # no loop running

    async def run() -> list[bool]:
        seen = [turns.first(), turns.first(), turns.first()]
        await asyncio.sleep(0)
        seen += [turns.first(), turns.first()]
        return seen

    assert asyncio.run(run()) == [True, False, False, True, False]


def test_tokens_read_the_key_file_once_a_turn(tmp_path: Path) -> None:
    keys = CountedKeys(KeyFile.open(tmp_path / "t.db"))
    tokens = Tokens(keys, 3600)  # type: ignore[arg-type]
    token = tokens.issue("sandex", ["a"])

    async def run() -> int:
        before = keys.reads
        for _ in range(10):
            tokens.verify(token)
        await asyncio.sleep(0)
        tokens.verify(token)
        return keys.reads - before

    assert asyncio.run(run()) == 2
    before = keys.reads
    tokens.verify(token)
    tokens.verify(token)
    assert keys.reads - before == 2


def test_a_rotation_refuses_old_tokens_from_the_next_turn(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    tokens = Tokens(KeyFile.open(db), 3600)
    token = tokens.issue("sandex", ["a"])

    async def run() -> None:
        tokens.verify(token)
        KeyFile.open(db).rotate()  # another process: `sandex keys rotate`
        await asyncio.sleep(0)
        with pytest.raises(AuthError):
            tokens.verify(token)

    asyncio.run(run())
