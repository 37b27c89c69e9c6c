"""A database written by an earlier schema opens with the current one and verifies."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sandex.engine import Engine, open_engine
from sandex.engine.kernel.commands import Actor, CreateCustomer, CreateOrder, SandboxDeposit
from sandex.engine.runtime.composition import TABLES
from sandex.engine.store.read_model_indexes import with_indexes
from sandex.engine.store.sqlite import SqliteEventStore
from sandex.engine.tools.verify import rebuild, verify
from tests.conftest import make_settings
from tests.support.store_helpers import OLD_FEED_DDL, indexes


def _trade(engine: Engine, client: str) -> None:
    made = engine.execute(CreateCustomer(client_id=client, client_secret="s", bootstrap=True))
    actor = Actor(made["customer_id"], client)
    engine.execute(SandboxDeposit(actor=actor, profile_id="default", asset="USD", amount="100000"))
    for price in ("30000", "30001", "45000"):
        engine.execute(
            CreateOrder(
                actor=actor,
                profile_id="default",
                side="BUY",
                market="BTCUSD",
                type="LIMIT",
                price=price,
                base_amount="0.0001",
            )
        )


def test_a_database_with_the_old_feed_indexes_opens_with_the_current_ones(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    with open_engine(db, make_settings()) as engine:
        _trade(engine, "first")
    conn = sqlite3.connect(db)
    for statement in OLD_FEED_DDL:
        conn.execute(statement)
    conn.commit()
    conn.close()
    assert indexes(db, "event_feed") == {
        "idx_event_feed_customer_id_seq",
        "idx_event_feed_customer_id_type_seq",
    }

    with open_engine(db, make_settings()) as engine:
        _trade(engine, "second")
    for table, spec in with_indexes(TABLES).items():
        assert indexes(db, table) == {
            f"idx_{table}_{'_'.join(cols)}" for cols in spec.get("indexes", ())
        }, table
    assert verify(str(db)) == []
    rebuild(str(db))
    assert verify(str(db)) == []


def test_an_index_somebody_added_by_hand_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "theirs.db"
    with open_engine(db, make_settings()) as engine:
        _trade(engine, "first")
    conn = sqlite3.connect(db)
    conn.execute("CREATE INDEX by_status ON orders (status)")
    conn.commit()
    conn.close()

    with open_engine(db, make_settings()) as engine:
        _trade(engine, "second")
    assert "by_status" in indexes(db, "orders")
    assert verify(str(db)) == []


def test_the_read_models_name_no_index_and_a_new_database_has_the_store_s(
    tmp_path: Path,
) -> None:
    """Index tuning is the store's (sandex.engine.store.read_model_indexes): the read models
    name none, and a new database has the indexes the read side's queries use."""
    for name, spec in TABLES.items():
        assert "indexes" not in spec and "fixed" not in spec, name
    db = tmp_path / "fresh.db"
    with open_engine(db, make_settings()) as engine:
        _trade(engine, "first")
    assert indexes(db, "orders") == {"idx_orders_customer_id_seq", "idx_orders_profile_id_seq"}
    assert indexes(db, "executions") == {
        "idx_executions_customer_id_seq",
        "idx_executions_profile_id_seq",
        "idx_executions_order_id",
    }


def test_a_postgresql_database_of_an_older_schema_opens_with_the_current_one(
    postgres_url: str,
) -> None:
    """At open the PostgreSQL store migrates as SQLite's does: an index of ours the spec
    no longer names is dropped, a missing one and a missing column are added, an index
    somebody else made is kept; the database verifies."""
    import psycopg

    with open_engine(postgres_url, make_settings()) as engine:
        _trade(engine, "first")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP INDEX idx_orders_profile_id_seq")
        conn.execute("CREATE INDEX idx_orders_status ON orders (status)")  # ours, unnamed now
        conn.execute("CREATE INDEX by_market ON orders (market)")  # theirs
        conn.execute("ALTER TABLE orders DROP COLUMN account_id")

    with open_engine(postgres_url, make_settings()) as engine:
        _trade(engine, "second")
    with psycopg.connect(postgres_url) as conn:
        names = {
            r[0]
            for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'orders'")
        }
        columns = {
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'orders'"
            )
        }
    assert {"idx_orders_customer_id_seq", "idx_orders_profile_id_seq", "by_market"} <= names
    assert "idx_orders_status" not in names
    assert columns == set(TABLES["orders"]["columns"])
    rebuild(postgres_url)  # the dropped column's values came back only by a rebuild
    assert verify(postgres_url) == []


def test_a_new_database_is_the_blank_one_made_once_and_has_the_schema_ddl_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new world's database is the process's blank database of its tables written at
    once (no DDL, no journaled switch to WAL): the same schema, in WAL mode, whole; and a
    database of that schema opens again without its tables looked at one by one."""
    tables = with_indexes(TABLES)
    made_by_ddl = SqliteEventStore(":memory:", tables=tables)
    expected = _schema(made_by_ddl.conn)
    made_by_ddl.close()
    SqliteEventStore(tmp_path / "first.db", tables=tables).close()  # the blank made, if not yet

    def no_ddl(*args: object) -> None:
        raise AssertionError("a schema statement or a look at a table's indexes")

    monkeypatch.setattr(SqliteEventStore, "_schema_tool", no_ddl)
    monkeypatch.setattr(SqliteEventStore, "_migrate_indexes", no_ddl)
    for _ in range(2):  # made, then opened again
        store = SqliteEventStore(tmp_path / "new.db", tables=tables)
        assert _schema(store.conn) == expected
        assert store.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert store.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert store.checkpoint() == 0
        store.close()
    monkeypatch.undo()
    with open_engine(tmp_path / "new.db", make_settings()) as engine:
        _trade(engine, "first")
    assert verify(str(tmp_path / "new.db")) == []


def _schema(conn: sqlite3.Connection) -> set[tuple[str, str, str, str]]:
    return {
        tuple(row) for row in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
    }
