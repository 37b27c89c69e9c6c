"""Event stores: the log that is the only source of truth.

`EventStore` is the port; `SqliteEventStore` the embedded implementation,
`PostgresEventStore` (engine/store/postgres.py, imported when a URL asks for it) the
server one, and `MemoryEventStore` one for unit tests; `open_store` picks by `--db`. Every implementation passes the contract suite
(tests/store_contract.py, run by tests/test_store_contract.py).
"""

from engine.store.lease import LeaseHeld
from engine.store.locations import display, is_server_url, local_base
from engine.store.memory import MemoryEventStore
from engine.store.opening import (
    UNFINISHED_COPY,
    holds_events,
    open_reader,
    open_store,
    unfinished_copy,
)
from engine.store.port import (
    Concurrency,
    EventStore,
    NoSuchTable,
    SqlReader,
    StoreUnavailable,
    TableWrites,
)
from engine.store.sqlite import SqliteEventStore, connect_read_only, in_memory

__all__ = [
    "UNFINISHED_COPY",
    "Concurrency",
    "EventStore",
    "LeaseHeld",
    "MemoryEventStore",
    "NoSuchTable",
    "SqlReader",
    "SqliteEventStore",
    "StoreUnavailable",
    "TableWrites",
    "connect_read_only",
    "display",
    "holds_events",
    "in_memory",
    "is_server_url",
    "local_base",
    "open_reader",
    "open_store",
    "unfinished_copy",
]
