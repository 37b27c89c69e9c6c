"""Settled records are stored compactly and read back exactly as they were written."""

from __future__ import annotations

import copy
import pickle

from engine.kernel.compact_records import Records


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
