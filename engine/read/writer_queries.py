"""The HTTP API's queries on a writer's own connection, for a driver that is the only
writer (a backtest): that connection sees the commands of a transaction it holds open
(`Engine.one_transaction`), which a read-only connection would not see yet."""

from __future__ import annotations

from typing import Any

from sandex.engine.read.queries import Queries
from sandex.engine.store import EventStore


class WriterQueries(Queries):
    """`Queries` reading through the store's writer connection, never opening its own."""

    def __init__(self, store: EventStore) -> None:
        super().__init__(store.path)
        self._writer = store.own_reader()

    @property
    def conn(self) -> Any:
        return self._writer


__all__ = ["WriterQueries"]
