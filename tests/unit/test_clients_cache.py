"""The bearer check's clients (api_adapter/auth.py: Clients): after a commit, a client
whose record did not change keeps its row object, and so its principals; a revoked
one is seen at the next turn of the loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sandex.api_adapter.auth import Clients
from sandex.engine import open_engine
from sandex.engine.kernel.commands import Actor, CreateCustomer, CreateProfile, RevokeClient
from sandex.engine.read.connections import ReadConnections
from tests.conftest import make_settings


def test_a_commit_that_leaves_a_client_keeps_its_row_and_a_revocation_does_not(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.db"
    engine = open_engine(db, make_settings()).start()
    made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
    actor = Actor(made["customer_id"], "c")
    reads = ReadConnections(str(db))
    clients = Clients(reads)
    claims = {"c": "c", "s": ["exchange:read_order"]}

    async def run() -> None:
        first = clients.get("c")
        assert first is not None and not first["revoked"]
        principal = clients.principal("token", claims, first)
        await asyncio.sleep(0)
        engine.execute(CreateProfile(actor=actor, nickname="other"))  # a commit
        await asyncio.sleep(0)
        again = clients.get("c")
        kept = again is first  # read again at the new data version: the same record
        assert kept  # (a row is not printed: it holds the secret's hash)
        assert clients.principal("token", claims, again) is principal
        engine.execute(RevokeClient(actor=actor, client_id="c"))
        held = clients.get("c") is first  # the same turn still holds what it read
        assert held
        await asyncio.sleep(0)
        revoked = clients.get("c")
        assert revoked is not None and revoked["revoked"]
        assert clients.get("unknown") is None

    try:
        asyncio.run(run())
    finally:
        reads.close()
        engine.stop()
