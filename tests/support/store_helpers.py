"""The event feed's table as an old release made it, and a database's indexes: shared by the migration and live-database tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

# The event feed's indexes as the schema before the merge into one index made them.
OLD_FEED_DDL = (
    "DROP INDEX idx_event_feed_customer_id_seq_type",
    "CREATE INDEX idx_event_feed_customer_id_seq ON event_feed (customer_id, seq)",
    "CREATE INDEX idx_event_feed_customer_id_type_seq ON event_feed (customer_id, type, seq)",
)


def indexes(db: Path, table: str) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {r[1] for r in conn.execute(f"PRAGMA index_list({table})") if r[3] == "c"}
    finally:
        conn.close()
