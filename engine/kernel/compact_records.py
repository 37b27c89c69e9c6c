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
    the settled entries' columns."""
    keys = list(dict.keys(records))
    rows = array("q")
    whole: list[tuple[int, dict[str, Any]]] = []
    by_kind: dict[tuple[str, ...], list[tuple[str, tuple[Any, ...]]]] = {}
    order: list[tuple[tuple[str, ...], int]] = []  # (kind, index in it) per settled entry
    for key, value in dict.items(records):
        if type(value) is dict:
            whole.append((len(rows), value))
            rows.append(-1)
            continue
        record = records._row(key, value) if type(value) is int else _read(value)
        if type(value) is tuple and len(value) == 2:
            fields, values = value
        else:
            fields, values = tuple(record), tuple(record.values())
        entries = by_kind.setdefault(fields, [])
        order.append((fields, len(entries)))
        entries.append((key, values))
        rows.append(0)
    starts: list[int] = []
    kinds: list[tuple[tuple[str, ...], list[Any]]] = []
    first: dict[tuple[str, ...], int] = {}
    total = 0
    for fields, entries in by_kind.items():
        first[fields] = total
        starts.append(total)
        kinds.append((fields, _columns([k for k, _ in entries], [v for _, v in entries])))
        total += len(entries)
    settled = iter(order)
    for n in range(len(rows)):
        if rows[n] == 0:
            fields, index = next(settled)
            rows[n] = first[fields] + index
    return (keys, rows.tobytes(), whole, starts, kinds)


def _columns(keys: list[str], rows: list[tuple[Any, ...]]) -> list[Any]:
    """Each field's column, in the most compact form that gives back the very values:
    only texts, None and booleans are coded (a Decimal equal to another may differ in
    its digits, and 1 == True)."""
    out: list[Any] = []
    for column in zip(*rows, strict=True):
        types = {type(v) for v in column}
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
            distinct: dict[Any, int] = {}
            for v in column:
                distinct.setdefault((type(v), v), len(distinct))
            if len(distinct) == 1:
                out.append((_SAME, column[0]))
                continue
            if len(distinct) * 2 <= len(column):
                size = "B" if len(distinct) <= 1 << 8 else "H" if len(distinct) <= 1 << 16 else "I"
                index = array(size, [distinct[(type(v), v)] for v in column])
                out.append((_CODED, [v for _, v in distinct], index))
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
