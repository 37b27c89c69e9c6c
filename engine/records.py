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
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any


class Records(dict[str, Any]):
    """`[]`, `get` and `values` read entries as dicts; `items()` and pickling see them as
    stored, settled ones as tuples (which is what pickles small)."""

    __slots__ = ()

    def __getitem__(self, key: str) -> dict[str, Any]:
        value = dict.__getitem__(self, key)
        return dict(zip(*value, strict=True)) if type(value) is tuple else value  # type: ignore[no-any-return]

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        value = dict.get(self, key, default)
        return dict(zip(*value, strict=True)) if type(value) is tuple else value

    def values(self) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        for value in dict.values(self):
            yield dict(zip(*value, strict=True)) if type(value) is tuple else value

    def settle(self, settled: Callable[[dict[str, Any]], bool]) -> int:
        """Store every dict entry for which `settled` is true as `(keys, values)`, with
        equal key tuples and equal short strings made one object; how many were."""
        keys_pool: dict[tuple[str, ...], tuple[str, ...]] = {}
        strings: dict[str, str] = {}
        count = 0
        for key, value in dict.items(self):
            if type(value) is dict and settled(value):
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
            {k: v if type(v) is tuple else copy.deepcopy(v, memo) for k, v in dict.items(self)}
        )
