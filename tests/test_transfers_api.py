"""Listing transfers: filters, time ranges, cursor paging, tenancy."""

from __future__ import annotations

from typing import Any


def _deposits(sandbox: Any) -> list[str]:
    ids = []
    for i, asset in enumerate(["BTC", "ETH", "USD", "BTC"]):
        ids.append(sandbox.deposit(asset, str(i + 1))["activity_id"])
        sandbox.advance(60)
    return ids


def test_transfers_are_listed_newest_first_by_default(sandbox: Any) -> None:
    ids = _deposits(sandbox)
    items = sandbox.get("/v2/transfer/transfers").json()["items"]
    assert [t["id"] for t in items] == ids[::-1]
    asc = sandbox.get("/v2/transfer/transfers", params={"order": "ASC"}).json()["items"]
    assert [t["id"] for t in asc] == ids


def test_paging_walks_every_transfer_once(sandbox: Any) -> None:
    ids = _deposits(sandbox)
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 3}
    while True:
        page = sandbox.get("/v2/transfer/transfers", params=params).json()
        seen += [t["id"] for t in page["items"]]
        if "next_page_cursor" not in page:
            break
        params["page_cursor"] = page["next_page_cursor"]
    assert seen == ids[::-1]


def test_filters_by_type_profile_id_and_time(sandbox: Any) -> None:
    ids = _deposits(sandbox)
    desk = sandbox.post("/v2/profiles", {"nickname": "desk"}).json()["id"]
    other = sandbox.deposit("SOL", "1", profile=desk)["activity_id"]
    by_profile = sandbox.get("/v2/transfer/transfers", params={"profile_ids": desk}).json()["items"]
    assert [t["id"] for t in by_profile] == [other]
    by_ids = sandbox.get("/v2/transfer/transfers", params=[("ids", ids[0]), ("ids", ids[1])]).json()
    assert {t["id"] for t in by_ids["items"]} == {ids[0], ids[1]}
    window = sandbox.get(
        "/v2/transfer/transfers",
        params={"created_at.gte": "2024-01-01T00:01:00Z", "created_at.lt": "2024-01-01T00:03:00Z"},
    ).json()["items"]
    assert [t["id"] for t in window] == [ids[2], ids[1]]
    wires = sandbox.get("/v2/transfer/transfers", params={"type": "WIRE_DEPOSIT"}).json()["items"]
    assert len(wires) == 5  # no network given: a wire deposit, whatever the asset
    none = sandbox.get("/v2/transfer/transfers", params={"type": "CRYPTO_WITHDRAWAL"}).json()
    assert none == {"items": []}


def test_another_customer_sees_none_of_them(sandbox: Any) -> None:
    ids = _deposits(sandbox)
    headers, _ = sandbox.tenant()
    assert sandbox.get("/v2/transfer/transfers", headers=headers).json() == {"items": []}
    assert sandbox.get(f"/v2/transfer/transfers/{ids[0]}", headers=headers).status_code == 404
