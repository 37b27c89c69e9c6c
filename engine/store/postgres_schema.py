"""The PostgreSQL store's schema: created and migrated at open, in one transaction
serialised by an advisory lock (two processes opening a new database at once make it
once).

The tables are SQLite's, column for column: `events` (data and meta as JSON text, see
docs/operations.md for why text and not jsonb), `sandex_meta`, `checkpoint`,
`state_snapshots`, the read models with the indexes of engine/store/read_model_indexes.py,
and one table SQLite does without: `log_head`, the log's last position, a count of
commits and the writer's fencing epoch, which every append updates (the gapless check,
the change count that `data_version` reads, and the check that this writer still holds
the lease). The read side's SQL uses SQLite's `json_extract` and `instr`; PostgreSQL
gets functions of those names, so the queries stay one text for both stores."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from sandex.engine.kernel.logs import get_logger

log = get_logger("sandex.store")

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
CREATE OR REPLACE FUNCTION instr(haystack text, needle text) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT strpos(haystack, needle) $$;
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
        if fresh:
            conn.execute(fresh_script(tables))  # type: ignore[call-overload]
            return
        for statement in _BASE.split(";\n"):
            if statement.strip():
                conn.execute(statement)  # type: ignore[arg-type]
        for name, spec in tables.items():
            _create_table(conn, name, spec)


_SCRIPTS: dict[str, str] = {}


def fresh_script(tables: dict[str, dict[str, Any]]) -> str:
    """Every statement that makes a new, empty schema of `tables`, as one text sent in
    one round trip (a query without parameters may hold several statements): a fork's
    schema took a round trip per table and per index. Made once per set of tables."""
    key = repr(tables)
    script = _SCRIPTS.get(key)
    if script is None:
        statements = [s for s in _BASE.split(";\n") if s.strip()]
        for name, spec in tables.items():
            statements.append(_table_sql(name, spec))
            statements += [
                f"CREATE INDEX {_index_name(name, cols)} ON {name} ({', '.join(cols)})"
                for cols in spec.get("indexes", ())
            ]
        script = _SCRIPTS[key] = ";\n".join(s.strip() for s in statements) + ";"
    return script


# Schemas made ahead for forks (`make_spare`): this prefix, then the digest of the script
# that made them (a spare of other tables is never taken), then a random part.
SPARE_PREFIX = "sandex_spare_"
# How many spares a database keeps ready for forks of one set of tables.
SPARES = 1


def _spare_prefix(tables: dict[str, dict[str, Any]]) -> str:
    digest = hashlib.sha256(fresh_script(tables).encode()).hexdigest()[:12]
    return f"{SPARE_PREFIX}{digest}_"


def _spares(conn: psycopg.Connection[Any], prefix: str) -> list[str]:
    return [
        str(row[0])
        for row in conn.execute(
            "SELECT nspname FROM pg_namespace WHERE left(nspname, %s) = %s ORDER BY nspname",
            (len(prefix), prefix),
        )
    ]


def claim_spare(
    conn: psycopg.Connection[Any], tables: dict[str, dict[str, Any]], name: str
) -> bool:
    """In the open transaction, rename a spare schema of `tables` to `name`: True if one
    was taken. Two forks that reach for one spare at once: one renames it, the other
    fails on it and tries the next (or makes its schema itself)."""
    for spare in _spares(conn, _spare_prefix(tables)):
        try:
            with conn.transaction():  # a savepoint: a spare taken meanwhile is skipped
                conn.execute(f'ALTER SCHEMA "{spare}" RENAME TO {name}')  # type: ignore[call-overload]
        except psycopg.Error:
            continue
        return True
    return False


def make_spare(
    connect: Callable[[], psycopg.Connection[Any]],
    tables: dict[str, dict[str, Any]],
    made: list[str] | None = None,
) -> None:
    """Make a spare schema of `tables` for a next fork, unless `SPARES` are ready: the
    whole of `fresh_script` in a schema no store names yet, committed at once. Its
    name is appended to `made`, so whoever made it drops it when done (`drop_spares`)."""
    prefix = _spare_prefix(tables)
    try:
        conn = connect()
    except Exception as exc:  # noqa: BLE001 - unreachable now: the next fork makes its own
        log.info("no spare schema made", error=str(exc).strip())
        return
    try:
        with conn.transaction():
            if len(_spares(conn, prefix)) >= SPARES:
                return
            name = prefix + secrets.token_hex(4)
            conn.execute(f"CREATE SCHEMA {name}")  # type: ignore[call-overload]
            conn.execute(f"SET LOCAL search_path = {name}")  # type: ignore[call-overload]
            conn.execute(fresh_script(tables))  # type: ignore[call-overload]
        if made is not None:
            made.append(name)
    except psycopg.Error as exc:  # the next fork makes its schema itself
        log.info("no spare schema made", error=str(exc).strip())
    finally:
        conn.close()


def drop_spares(conn: psycopg.Connection[Any], names: Sequence[str]) -> None:
    """Drop the spare schemas `names` that no fork took (a taken one was renamed), so a
    stopped server leaves no schema behind but its worlds'."""
    for name in names:
        if not name.startswith(SPARE_PREFIX):
            continue
        try:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')  # type: ignore[call-overload]
        except psycopg.Error as exc:  # a fork taking it at this moment has it
            log.info("spare schema not dropped", schema=name, error=str(exc).strip())


def _table_sql(name: str, spec: dict[str, Any]) -> str:
    columns: dict[str, type] = spec["columns"]
    defs = ", ".join(f"{c} {_TYPES[t]}" for c, t in columns.items())
    return f"CREATE TABLE IF NOT EXISTS {name} ({defs}, PRIMARY KEY ({', '.join(spec['pk'])}))"


def _create_table(conn: psycopg.Connection[Any], name: str, spec: dict[str, Any]) -> None:
    columns: dict[str, type] = spec["columns"]
    conn.execute(_table_sql(name, spec))  # type: ignore[call-overload]
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
