"""Settled records are stored compactly and read back exactly as they were written."""

from __future__ import annotations

import copy
import pickle
from decimal import Decimal

from sandex.engine.kernel.compact_records import Records


def _records() -> Records:
    records = Records()
    records["a"] = {"id": "a", "status": "COMPLETED", "amount": "1", "seq": 1, "extra": None}
    records["b"] = {"id": "b", "status": "PENDING", "amount": "2", "seq": 2}
    records["c"] = {"id": "c", "status": "COMPLETED", "amount": "3", "seq": 3, "extra": None}
    return records


def test_settling_changes_the_storage_not_what_readers_see() -> None:
    records = _records()
    before = {k: dict(records[k]) for k in records}
    assert records.settle(lambda r: r["status"] == "COMPLETED") == 2
    assert type(dict.__getitem__(records, "a")) is tuple
    assert type(dict.__getitem__(records, "b")) is dict  # open entries stay live dicts
    assert {k: records[k] for k in records} == before
    assert records.get("c") == before["c"] and records.get("missing") is None
    assert list(records.values()) == list(before.values())
    # key order is kept, and records of one shape share one keys tuple
    assert list(records["a"]) == ["id", "status", "amount", "seq", "extra"]
    assert dict.__getitem__(records, "a")[0] is dict.__getitem__(records, "c")[0]


def test_an_open_entry_read_is_the_stored_object_so_appliers_can_update_it() -> None:
    records = _records()
    records.settle(lambda r: r["status"] == "COMPLETED")
    records["b"]["status"] = "COMPLETED"
    assert records["b"]["status"] == "COMPLETED"


def test_pickle_and_deepcopy_keep_the_records_and_their_type() -> None:
    records = _records()
    records.settle(lambda r: r["status"] == "COMPLETED")
    for twin in (pickle.loads(pickle.dumps(records, 5)), copy.deepcopy(records)):
        assert type(twin) is Records
        assert {k: twin[k] for k in twin} == {k: records[k] for k in records}
    deep = copy.deepcopy(records)
    deep["b"]["status"] = "FAILED"  # a copy's open entry is its own
    assert records["b"]["status"] == "PENDING"


def _mixed(n: int) -> Records:
    """Settled records of two shapes, with values a column must give back exactly: equal
    Decimals of other digits, True beside 1, None, ints past 64 bits, an id equal to its key,
    and a dict left open among them."""
    records = Records()
    for i in range(n):
        key = f"t-{i}"
        records[key] = {
            "id": key,
            "status": "COMPLETED",
            "amount": Decimal("1.0") if i % 2 else Decimal("1.00"),
            "flag": True if i % 3 else 1,
            "note": None if i % 5 else "x",
            "big": 2**70 + i if i == 7 else i,
            "seq": i,
        }
        if i % 4 == 0:
            records[f"w-{i}"] = {"id": f"w-{i}", "status": "FAILED", "tags": [i]}
    records["open"] = {"id": "open", "status": "PENDING"}
    return records


def test_a_pickled_settled_record_comes_back_as_a_row_with_every_value_exact() -> None:
    records = _mixed(40)
    before = {k: copy.deepcopy(records[k]) for k in records}
    records.settle(lambda r: r["status"] != "PENDING")
    twin = pickle.loads(pickle.dumps(records, 5))
    assert list(twin) == list(before)  # key order kept
    assert type(dict.__getitem__(twin, "t-3")) is int
    assert type(dict.__getitem__(twin, "open")) is dict
    for k, record in before.items():
        read = twin[k]
        assert read == record
        assert [(type(v), str(v)) for v in read.values()] == [
            (type(v), str(v)) for v in record.values()
        ]
    assert [dict(r) for r in twin.values()] == list(before.values())
    assert twin.get("w-8") == before["w-8"] and twin.get("missing") is None


def test_records_loaded_from_columns_settle_pickle_and_copy_again() -> None:
    """The snapshot thread loads the previous snapshot, adds and settles, pickles again."""
    records = _mixed(20)
    records.settle(lambda r: r["status"] != "PENDING")
    loaded = pickle.loads(pickle.dumps(records, 5))
    loaded["new"] = {"id": "new", "status": "COMPLETED", "seq": 99}
    loaded["open"]["status"] = "COMPLETED"
    loaded.settle(lambda r: r["status"] != "PENDING")
    expected = {k: loaded[k] for k in loaded}
    again = pickle.loads(pickle.dumps(loaded, 5))
    assert {k: again[k] for k in again} == expected
    for twin in (copy.copy(again), copy.deepcopy(again)):
        assert {k: twin[k] for k in twin} == expected
