"""An engine with nothing to write gives back the memory its store keeps for speed: a
server holds many loaded worlds, most of them idle."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from sandex.engine.kernel.commands import Actor, CreateCustomer, SandboxDeposit
from sandex.engine.runtime import writer
from sandex.engine.runtime.composition import open_engine
from tests.conftest import make_settings
from tests.support.engine_helpers import release_watched


def _committers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "sandex-commit"}


def test_an_idle_writer_ends_its_committer_thread_and_releases_its_stores_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "_IDLE_SECONDS", 0.05)
    engine = open_engine(tmp_path / "idle.db", make_settings())
    released = release_watched(engine, monkeypatch)
    others = _committers()
    engine.start()
    try:
        made = engine.execute(CreateCustomer(client_id="c", client_secret="s", bootstrap=True))
        assert released.wait(10), "the idle writer kept its store's cache"
        assert _committers() == others, "the idle writer kept its committer thread"
        actor = Actor(made["customer_id"], "c")
        for amount in ("1", "2"):  # the cache fills again from the file
            engine.execute(
                SandboxDeposit(actor=actor, profile_id="default", asset="BTC", amount=amount)
            )
        assert engine.store.last_position() == engine.state.position  # all committed
    finally:
        engine.stop()
