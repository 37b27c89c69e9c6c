"""Event stores: the log that is the only source of truth.

`EventStore` is the port; `SqliteEventStore` the embedded implementation and
`MemoryEventStore` one for unit tests. Every implementation passes the contract suite
(tests/store_contract.py, run by tests/test_store_contract.py).
"""

from engine.store.lease import LeaseHeld
from engine.store.memory import MemoryEventStore
from engine.store.port import (
    Concurrency,
    EventStore,
    NoSuchTable,
    StoreUnavailable,
    TableWrites,
)
from engine.store.sqlite import SqliteEventStore, connect_read_only, in_memory

__all__ = [
    "Concurrency",
    "EventStore",
    "LeaseHeld",
    "MemoryEventStore",
    "NoSuchTable",
    "SqliteEventStore",
    "StoreUnavailable",
    "TableWrites",
    "connect_read_only",
    "in_memory",
]
