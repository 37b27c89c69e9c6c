"""What a read-model table is: its columns and keys for the store, and how its rows come
from the writer's state. Domain modules declare theirs in their `Registration` (the
registry gathers them); engine/runtime/projection.py turns them into the store's tables
and the rows of a commit, so no module registers a table by importing it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sandex.engine.kernel.state import State

# One row of the table from the state, by key; None when the entity is gone (a delete).
RowBuilder = Callable[[State, Any], dict[str, Any] | None]
# Every key of the table's kind in a state (for a full rebuild).
KeyLister = Callable[[State], Iterable[Any]]


@dataclass(frozen=True, slots=True)
class ReadModelTable:
    """A table whose rows are a pure function of one entity of the state each, written
    for the entities that appliers mark dirty as `kind`. How a store finds rows fast
    (indexes, columns an update may leave out) is the store's tuning, not part of the
    table (engine/store/read_model_indexes.py).

    An append-only table (the event feed) has no kind, row builder or keys: appliers hand
    its rows over through `State.append`; `append_position` is the SQL expression of the
    log position that produced a row (time travel cuts the table there)."""

    name: str
    columns: Mapping[str, type]
    pk: tuple[str, ...]
    kind: str = ""
    row: RowBuilder | None = None
    key_columns: tuple[str, ...] = ()
    keys: KeyLister | None = None
    append_position: str = ""
