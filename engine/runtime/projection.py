"""The projection stage of the runtime: the read-model tables, written in the writer's
transaction (and rebuilt from a replayed state), which the read side (engine/read) queries.

Each table row is a pure function of one entity of the in-memory state, so a live
table and one rebuilt from the log are equal row for row. `body` holds the public JSON
object; the other columns exist to filter and order on.

A table's spec here is its columns and key; its indexes and the columns an update may
leave out are the store's tuning (engine/store/read_model_indexes.py). The tables are a
registry's (each module's `Registration.tables`, engine/kernel/read_model_spec.py),
handed in by whoever built the registry: a `Projection` turns them into the store's
tables and the rows of a commit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sandex.engine.kernel.read_model_spec import ReadModelTable, RowBuilder
from sandex.engine.kernel.state import State

Writes = dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]


def _store_spec(table: ReadModelTable) -> dict[str, Any]:
    return {"columns": dict(table.columns), "pk": list(table.pk)}


class Projection:
    """One registry's read-model tables: what the store creates, and the rows a commit
    or a rebuild writes. Built once per engine from the registry it was given, so two
    engines with different registries project their own tables."""

    __slots__ = ("tables", "rows", "keys", "append_only")

    def __init__(self, tables: Iterable[ReadModelTable]) -> None:
        tables = tuple(tables)
        # table -> its columns and keys, as the store creates it
        self.tables: dict[str, dict[str, Any]] = {t.name: _store_spec(t) for t in tables}
        # kind of dirty mark -> (table, row function, key columns)
        self.rows: dict[str, tuple[str, RowBuilder, tuple[str, ...]]] = {
            t.kind: (t.name, t.row, t.key_columns) for t in tables if t.row is not None
        }
        # kind -> function listing every key of that kind in a state (for a full rebuild)
        self.keys = {t.kind: t.keys for t in tables if t.keys is not None}
        # Append-only tables: rows that events produce once and nothing changes or
        # deletes (the event feed). The writer's state does not keep them; appliers hand
        # them over through `State.append`. table -> SQL expression of the log position
        # that produced a row.
        self.append_only: dict[str, str] = {
            t.name: t.append_position for t in tables if t.append_position
        }

    def rows_for(self, state: State, dirty: set[tuple[str, Any]]) -> Writes:
        """The upserts and deletes that bring the tables in line with `dirty` entities
        and the rows appended since the last commit."""
        writes: Writes = {}
        for table, appended in state.appended or ():
            writes.setdefault(table, ([], []))[0].append(appended)
        rows = self.rows
        for kind, key in dirty:
            table, row_fn, key_columns = rows[kind]
            upserts, deletes = writes.setdefault(table, ([], []))
            row = row_fn(state, key)
            if row is None:
                values = key if isinstance(key, tuple) else (key,)
                deletes.append(dict(zip(key_columns, values, strict=True)))
            else:
                upserts.append(row)
        return writes

    def all_rows(self, state: State) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every row of every table; append-only rows only if `state` collected them."""
        yield from state.appended or ()
        keys = self.keys
        for kind, (table, row_fn, _) in self.rows.items():
            for key in keys[kind](state):
                row = row_fn(state, key)
                if row is not None:
                    yield table, row
