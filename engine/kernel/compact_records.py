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

Pickled, the settled entries are stored by column (`_Columns`): per kind of record, each
field's values as one list, or, where few values recur, the distinct values and an
array of indexes, and a field that repeats the entry's key as a mark. Unpickled, such
an entry is its row number (an int), read from the columns on demand: a start-up from a
state snapshot then builds one key string and one int per settled record instead of a
tuple of a dozen fields and a second copy of its id, which was most of its cost.
"""

from __future__ import annotations

import copy
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson


class Records(dict[str, Any]):
    """`[]`, `get` and `values` read entries as dicts; `items()` and pickling see them as
    stored: settled ones as tuples, or, after unpickling, as row numbers in `_columns`."""

    __slots__ = ("_columns",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._columns: _Columns | None = None

    def __getitem__(self, key: str) -> dict[str, Any]:
        value = dict.__getitem__(self, key)
        if type(value) is int:
            return self._row(key, value)
        return _read(value)

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        value = dict.get(self, key, default)
        if value is default:
            return value
        if type(value) is int:
            return self._row(key, value)
        return _read(value)

    def values(self) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        for key, value in dict.items(self):
            yield self._row(key, value) if type(value) is int else _read(value)

    def _row(self, key: str, row: int) -> dict[str, Any]:
        assert self._columns is not None  # an int entry is only ever unpickled with them
        return self._columns.record(key, row)

    def add_encoded(self, entries: Iterable[tuple[str, tuple[str, str, int]]]) -> None:
        """Store settled records, each `(key, (text, field, seq))`: the JSON `text` that
        holds the record at `field`, plus its `seq`; in order, in one update."""
        dict.update(self, entries)

    def settle(self, settled: Callable[[dict[str, Any]], bool]) -> int:
        """Store every dict entry for which `settled` is true, and every encoded one, as
        `(keys, values)`, with equal key tuples and equal short strings made one object;
        how many were. (An encoded entry would pickle its whole event's text.) Entries
        kept by row number are compact already."""
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
        return (_unpickle, _pack(self))

    def __copy__(self) -> Records:
        out = Records(self)
        out._columns = self._columns  # never changed once built: shared
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> Records:
        out = Records(
            {k: v if type(v) is not dict else copy.deepcopy(v, memo) for k, v in dict.items(self)}
        )
        out._columns = self._columns
        return out


_KEY = "k"  # a field equal to the entry's key
_SAME = "s"  # one value in every row
_CODED = "c"  # the distinct values, and each row's index into them
_INTS = "i"  # whole numbers, as an array
_PLAIN = "p"  # one value per row


class _Columns:
    """Settled records by column; row `r` of the whole is row `r - starts[k]` of kind
    `k`, whose field names are `kinds[k][0]` and columns `kinds[k][1]`."""

    __slots__ = ("starts", "kinds")

    def __init__(self, starts: list[int], kinds: list[tuple[tuple[str, ...], list[Any]]]):
        self.starts = starts
        self.kinds = kinds

    def expand(self, k: int, keys: list[str], rows: list[int]) -> list[Any]:
        """Kind `k`'s columns at its rows `rows` (whose keys are `keys`), as lists."""
        n = len(rows)
        out: list[Any] = []
        for column in self.kinds[k][1]:
            how = column[0]
            if how == _KEY:
                out.append(keys)
            elif how == _SAME:
                out.append([column[1]] * n)
            elif how == _CODED:
                out.append(list(map(column[1].__getitem__, map(column[2].__getitem__, rows))))
            else:
                out.append(list(map(column[1].__getitem__, rows)))
        return out

    def record(self, key: str, row: int) -> dict[str, Any]:
        k = bisect_right(self.starts, row) - 1
        fields, columns = self.kinds[k]
        i = row - self.starts[k]
        values = []
        for column in columns:
            how = column[0]
            if how == _KEY:
                values.append(key)
            elif how == _SAME:
                values.append(column[1])
            elif how == _CODED:
                values.append(column[1][column[2][i]])
            else:
                values.append(column[1][i])
        return dict(zip(fields, values, strict=True))


def _pack(records: Records) -> tuple[Any, ...]:
    """What `_unpickle` rebuilds `records` from: its keys in order, each entry's row
    number (-1 for a dict kept whole: not settled), those dicts with their places, and
    the settled entries' columns. The snapshot thread packs a million records every
    snapshot: the per-record work is kept to C loops (map, zip) where it can be, and
    the rows of the columns the records were loaded with stay columns."""
    keys = list(dict.keys(records))
    whole: list[tuple[int, dict[str, Any]]] = []
    by_kind: dict[tuple[str, ...], tuple[list[int], list[str], list[tuple[Any, ...]]]] = {}
    loaded: dict[int, list[tuple[int, str, int]]] = {}  # rows of `records._columns`, by kind
    old = records._columns
    for n, (key, value) in enumerate(dict.items(records)):
        kind = type(value)
        if kind is dict:
            whole.append((n, value))
            continue
        if kind is int:
            assert old is not None
            k = bisect_right(old.starts, value) - 1
            loaded.setdefault(k, []).append((n, key, value - old.starts[k]))
            continue
        if len(value) == 3:
            record = _read(value)
            fields, values = tuple(record), tuple(record.values())
        else:
            fields, values = value
        places, names, rows = by_kind.setdefault(fields, ([], [], []))
        places.append(n)
        names.append(key)
        rows.append(values)
    parts: dict[tuple[str, ...], list[tuple[list[int], list[str], list[Any]]]] = {}
    for fields, (places, names, rows) in by_kind.items():
        parts.setdefault(fields, []).append((places, names, list(zip(*rows, strict=True))))
    for k, entries in loaded.items():
        assert old is not None
        names = [key for _, key, _ in entries]
        columns = old.expand(k, names, [i for _, _, i in entries])
        parts.setdefault(old.kinds[k][0], []).append(([n for n, _, _ in entries], names, columns))
    numbers = array("q", [-1]) * len(keys)
    starts: list[int] = []
    kinds: list[tuple[tuple[str, ...], list[Any]]] = []
    total = 0
    for fields, pieces in parts.items():
        names = [key for _, piece, _ in pieces for key in piece]
        columns = [
            [v for _, _, piece in pieces for v in piece[c]] if len(pieces) > 1 else pieces[0][2][c]
            for c in range(len(fields))
        ]
        starts.append(total)
        kinds.append((fields, _columns(names, columns)))
        for places, _, _ in pieces:
            for n in places:
                numbers[n] = total
                total += 1
    return (keys, numbers.tobytes(), whole, starts, kinds)


def _columns(keys: list[str], columns: list[Any]) -> list[Any]:
    """Each field's column, in the most compact form that gives back the very values:
    only texts, None and booleans are coded (a Decimal equal to another may differ in
    its digits, and 1 == True; texts, None and booleans never equal one another)."""
    out: list[Any] = []
    for column in columns:
        types = set(map(type, column))
        if types == {str} and list(column) == keys:
            out.append((_KEY,))
            continue
        if types == {int}:
            try:
                out.append((_INTS, array("q", column)))
                continue
            except OverflowError:
                pass
        if types <= _CODABLE:
            distinct = dict.fromkeys(column)
            if len(distinct) == 1:
                out.append((_SAME, column[0]))
                continue
            if len(distinct) * 2 <= len(column):
                number = {v: i for i, v in enumerate(distinct)}
                size = "B" if len(number) <= 1 << 8 else "H" if len(number) <= 1 << 16 else "I"
                out.append((_CODED, list(distinct), array(size, map(number.__getitem__, column))))
                continue
        out.append((_PLAIN, list(column)))
    return out


_CODABLE = {str, type(None), bool}


def _unpickle(
    keys: list[str],
    rows: bytes,
    whole: list[tuple[int, dict[str, Any]]],
    starts: list[int],
    kinds: list[tuple[tuple[str, ...], list[Any]]],
) -> Records:
    numbers = array("q")
    numbers.frombytes(rows)
    values: list[Any] = numbers.tolist()
    for n, record in whole:
        values[n] = record
    out = Records(zip(keys, values, strict=True))
    out._columns = _Columns(starts, kinds) if starts else None
    return out


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
