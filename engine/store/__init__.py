"""Event stores: the log that is the only source of truth.

`EventStore` is the port; `SqliteEventStore` the embedded implementation. Every
implementation must pass `tests/test_store_contract.py`.
"""

from engine.store.lease import LeaseHeld
from engine.store.port import Concurrency, EventStore, StoreUnavailable
from engine.store.sqlite import SqliteEventStore

__all__ = ["Concurrency", "EventStore", "LeaseHeld", "SqliteEventStore", "StoreUnavailable"]
