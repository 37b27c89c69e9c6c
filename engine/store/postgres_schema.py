"""The PostgreSQL store's schema: created and migrated at open, in one transaction
serialised by an advisory lock (two processes opening a new database at once make it
once).

The tables are SQLite's, column for column: `events` (data and meta as JSON text, see
docs/operations.md for why text and not jsonb), `sandex_meta`, `checkpoint`,
`state_snapshots`, the read models with the indexes of engine/store/read_model_indexes.py,
and one table SQLite does without: `log_head`, the log's last position, a count of
commits and the writer's fencing epoch, which every append updates (the gapless check,
the change count that `data_version` reads, and the check that this writer still holds
the lease). The read side's SQL uses SQLite's `json_extract`; PostgreSQL gets
a function of that name, so the queries stay one text for both stores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

# pg_advisory_xact_lock key of the schema work (the writer lease uses another).
SCHEMA_LOCK = 0x5A4E_0001

_TYPES = {int: "bigint", str: "text", bytes: "bytea", float: "double precision", bool: "bigint"}

_BASE = """
CREATE TABLE IF NOT EXISTS events (
    position bigint PRIMARY KEY,
    stream text NOT NULL,
    version bigint NOT NULL,
    type text NOT NULL,
    schema integer NOT NULL,
    data text NOT NULL,
    meta text NOT NULL,
    occurred_at text NOT NULL,
    UNIQUE (stream, version)
);
CREATE TABLE IF NOT EXISTS sandex_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoint (name text PRIMARY KEY, position bigint NOT NULL);
INSERT INTO checkpoint (name, position) VALUES ('read_models', 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS log_head (
    name text PRIMARY KEY,
    position bigint NOT NULL,
    commits bigint NOT NULL
);
ALTER TABLE log_head ADD COLUMN IF NOT EXISTS epoch bigint NOT NULL DEFAULT 0;
INSERT INTO log_head (name, position, commits)
    SELECT 'log', coalesce(max(position), 0), 0 FROM events
    ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS state_snapshots (
    position bigint PRIMARY KEY,
    format text NOT NULL,
    event_check text NOT NULL,
    data bytea NOT NULL
);
CREATE OR REPLACE FUNCTION json_extract(doc text, path text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT (doc::jsonb) #>> string_to_array(substr(path, 3), '.') $$;
"""


def create(
    conn: psycopg.Connection[Any],
    tables: dict[str, dict[str, Any]],
    schema: str | None = None,
    *,
    fresh: bool = False,
) -> None:
    """The whole schema, made or brought up to date, all or nothing; `schema`: the SQL
    schema that the connection's search path names, made first if missing (a store of
    its own in a shared database, engine/store/locations.py). `fresh`: the schema is
    new and empty (a fork's), so there is nothing to migrate: tables made whole."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        if schema is not None:
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")  # type: ignore[arg-type]
        for statement in _BASE.split(";\n"):
            if statement.strip():
                conn.execute(statement)  # type: ignore[arg-type]
        for name, spec in tables.items():
            _create_table(conn, name, spec, fresh)


def _create_table(
    conn: psycopg.Connection[Any], name: str, spec: dict[str, Any], fresh: bool = False
) -> None:
    columns: dict[str, type] = spec["columns"]
    defs = ", ".join(f"{c} {_TYPES[t]}" for c, t in columns.items())
    conn.execute(  # type: ignore[call-overload]
        f"CREATE TABLE IF NOT EXISTS {name} ({defs}, PRIMARY KEY ({', '.join(spec['pk'])}))"
    )
    if fresh:
        for cols in spec.get("indexes", ()):
            conn.execute(  # type: ignore[call-overload]
                f"CREATE INDEX {_index_name(name, cols)} ON {name} ({', '.join(cols)})"
            )
        return
    for column, kind in columns.items():  # a column added to a read model since
        conn.execute(  # type: ignore[call-overload]
            f"ALTER TABLE {name} ADD COLUMN IF NOT EXISTS {column} {_TYPES[kind]}"
        )
    _migrate_indexes(conn, name, spec.get("indexes", ()))


def _index_name(table: str, cols: Sequence[str]) -> str:
    return f"idx_{table}_{'_'.join(cols)}"


def _migrate_indexes(
    conn: psycopg.Connection[Any], table: str, indexes: Sequence[Sequence[str]]
) -> None:
    """Exactly the sandex indexes the spec names, as on SQLite: an index of ours that is
    no longer named is dropped, one somebody else made is left alone."""
    wanted = {_index_name(table, cols): list(cols) for cols in indexes}
    have = {
        str(row[0])
        for row in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
            " AND tablename = %s AND indexname LIKE %s",
            (table, f"idx\\_{table}\\_%"),
        )
    }
    for name in sorted(have - wanted.keys()):
        conn.execute(f"DROP INDEX {name}")  # type: ignore[call-overload]
    for name, cols in wanted.items():
        if name not in have:
            conn.execute(  # type: ignore[call-overload]
                f"CREATE INDEX {name} ON {table} ({', '.join(cols)})"
            )
