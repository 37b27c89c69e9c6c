"""A store that wrote its whole log folds the log's hash as it writes
(`SqliteEventStore.fold_log`): the same hash `log_hash` reads back from the file, credential
fields masked, and a write that fails leaves no trace in it either (nor in the rows set
aside)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandex.engine import open_engine
from sandex.engine.store import SqliteEventStore
from sandex.engine.store.port import Concurrency
from sandex.engine.tools.time_travel import log_hash, store_log_hash
from tests.conftest import make_settings
from tests.support.command_helpers import funded_actor, limit_buy_command


@pytest.mark.parametrize("aside", [False, True])
def test_the_folded_hash_is_the_log_hash_of_what_was_written(tmp_path: Path, aside: bool) -> None:
    """With `aside` the rows wait in a file until the log is read (here by `read`, the
    failed write's own check and `store_log_hash`): the same log either way."""
    db = tmp_path / "fold.db"
    engine = open_engine(db, make_settings())
    store = engine.store
    assert isinstance(store, SqliteEventStore)
    try:
        assert store.fold_log(aside=aside)
        me = funded_actor(engine.run_inline, "9")
        with engine.one_transaction():
            for price in ("41000", "41500"):
                engine.run_inline(limit_buy_command(me, price, "0.0001"))
        # a write that fails (a position taken; aside, a table it cannot write) is
        # undone, in the hash and the file too
        last = list(store.read(after=store.last_position() - 1))
        with pytest.raises((Concurrency, KeyError)):
            store.commit(last, {"no_such_table": ([{}], [])}, store.checkpoint())
        folded = store.log_fold()
        assert folded == store_log_hash(store)
    finally:
        engine.stop()
    assert folded == log_hash(db)
    again = open_engine(db, make_settings())
    try:  # a log this connection did not write whole is not folded
        assert isinstance(again.store, SqliteEventStore) and not again.store.fold_log()
        assert again.store.log_fold() is None
    finally:
        again.stop()
