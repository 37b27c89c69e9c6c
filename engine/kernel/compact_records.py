"""Records by id whose settled entries are kept as two tuples: their keys and values.

A long-lived sandbox holds every transfer it ever made, and a settled one never changes
again. As a dict of a dozen fields each costs about a kilobyte, and unpickling a million
of them dominated start-up from a state snapshot. Settled, an entry is `(keys, values)`:
records of one kind share one `keys` tuple, and pickle writes shared objects once, so a
settled entry loads as one small tuple. Reading an entry (`[]`, `get`, `values`) gives
a dict either way, so no reader needs to know; a settled entry read is a fresh dict,
which is harmless since nothing changes a settled record.

Entries are settled by `settle`, which the snapshot thread runs on its own state
before pickling: the live writer keeps dicts (no encoding cost per command), and a
start-up from a snapshot starts with the compact form.

A replay of the log stores a record that is settled from its creation (a deposit) in a
third form, `(text, field, seq)`: the JSON text of the event it came from, whose object
at `field` is the record, and the `seq` added to it (`add_encoded`). The text is the
one read from the log, so keeping it costs nothing, where the decoded record, a dozen
objects and a kilobyte and a half, dominated a start-up replay: memory a process
touches for the first time costs more than the decoding. Reading decodes it again,
which gives exactly what the replay decoded.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson


class Records(dict[str, Any]):
    """`[]`, `get` and `values` read entries as dicts; `items()` and pickling see them as
    stored, settled ones as tuples (which is what pickles small)."""

    __slots__ = ()

    def __getitem__(self, key: str) -> dict[str, Any]:
        return _read(dict.__getitem__(self, key))

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        value = dict.get(self, key, default)
        return value if value is default else _read(value)

    def values(self) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        for value in dict.values(self):
            yield _read(value)

    def add_encoded(self, entries: Iterable[tuple[str, tuple[str, str, int]]]) -> None:
        """Store settled records, each `(key, (text, field, seq))`: the JSON `text` that
        holds the record at `field`, plus its `seq`; in order, in one update."""
        dict.update(self, entries)

    def settle(self, settled: Callable[[dict[str, Any]], bool]) -> int:
        """Store every dict entry for which `settled` is true, and every encoded one, as
        `(keys, values)`, with equal key tuples and equal short strings made one object;
        how many were. (An encoded entry would pickle its whole event's text.)"""
        keys_pool: dict[tuple[str, ...], tuple[str, ...]] = {}
        strings: dict[str, str] = {}
        count = 0
        for key, value in dict.items(self):
            if type(value) is tuple and len(value) == 3:
                value = _read(value)
            elif type(value) is not dict or not settled(value):
                continue
            keys = tuple(value)
            keys = keys_pool.setdefault(keys, keys)
            values = tuple(
                strings.setdefault(v, v) if type(v) is str and len(v) <= 40 else v
                for v in value.values()
            )
            dict.__setitem__(self, key, (keys, values))
            count += 1
        return count

    def __reduce__(self) -> tuple[Any, ...]:
        return (Records, (dict(self),))

    def __copy__(self) -> Records:
        return Records(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Records:
        return Records(
            {k: v if type(v) is not dict else copy.deepcopy(v, memo) for k, v in dict.items(self)}
        )


def _read(value: Any) -> Any:
    """An entry as a dict: itself, or a fresh one from a settled form."""
    if type(value) is not tuple:
        return value
    if len(value) == 2:
        return dict(zip(*value, strict=True))
    text, field, seq = value
    record = orjson.loads(text)[field]
    record["seq"] = seq
    return record
