"""Event stores: the log that is the only source of truth.

`EventStore` is the port (engine/store/port.py, by capability); `SqliteEventStore` the
embedded implementation, `PostgresEventStore` (engine/store/postgres.py, imported when a
URL asks for it) the server one, and `MemoryEventStore` one for unit tests. `locate`
says what a `--db` names and `open_store` opens its backend (engine/store/opening.py's
registry): the one place that reads a `--db`'s text. Every implementation passes the
contract suite (tests/support/store_contract.py, run by tests/contract/test_store_contract.py).
"""

from sandex.engine.store.lease import LeaseHeld
from sandex.engine.store.locations import Location, display, is_server_url, local_base, locate
from sandex.engine.store.memory import MemoryEventStore
from sandex.engine.store.opening import (
    UNFINISHED_COPY,
    backend,
    database_contents,
    drop_store,
    holds_events,
    open_reader,
    open_sql_reader,
    open_store,
    store_size,
    take_lease,
    unfinished_copy,
)
from sandex.engine.store.port import (
    BulkLoad,
    Concurrency,
    EventLog,
    EventStore,
    Forking,
    Lifecycle,
    LogFolding,
    MemoryRelease,
    MetaValues,
    NoSuchTable,
    ReadModelTables,
    SqlReader,
    SqlRows,
    StateBlobs,
    StoreUnavailable,
    TableWrites,
    capability,
)
from sandex.engine.store.sqlite import SqliteEventStore, connect_read_only, in_memory

__all__ = [
    "UNFINISHED_COPY",
    "BulkLoad",
    "Concurrency",
    "EventLog",
    "EventStore",
    "Forking",
    "LeaseHeld",
    "Lifecycle",
    "Location",
    "LogFolding",
    "MemoryEventStore",
    "MemoryRelease",
    "MetaValues",
    "NoSuchTable",
    "ReadModelTables",
    "SqlReader",
    "SqlRows",
    "SqliteEventStore",
    "StateBlobs",
    "StoreUnavailable",
    "TableWrites",
    "backend",
    "capability",
    "connect_read_only",
    "database_contents",
    "display",
    "drop_store",
    "holds_events",
    "in_memory",
    "is_server_url",
    "local_base",
    "locate",
    "open_reader",
    "open_sql_reader",
    "open_store",
    "store_size",
    "take_lease",
    "unfinished_copy",
]
