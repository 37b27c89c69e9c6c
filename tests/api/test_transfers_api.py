"""Listing transfers: filters, time ranges, cursor paging, tenancy."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.identity_helpers import approved_account
from tests.support.transfer_helpers import withdraw


def _deposits(sandbox: Any) -> list[str]:
    ids = []
    for i, asset in enumerate(["BTC", "ETH", "USD", "BTC"]):
        ids.append(sandbox.deposit(asset, str(i + 1))["activity_id"])
        sandbox.advance(60)
    return ids


def test_transfers_are_listed_newest_first_by_default(http_sandbox: Any) -> None:
    ids = _deposits(http_sandbox)
    items = http_sandbox.get("/v2/transfer/transfers").json()["items"]
    assert [t["id"] for t in items] == ids[::-1]
    asc = http_sandbox.get("/v2/transfer/transfers", params={"order": "ASC"}).json()["items"]
    assert [t["id"] for t in asc] == ids


def test_paging_walks_every_transfer_once(http_sandbox: Any) -> None:
    ids = _deposits(http_sandbox)
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 3}
    while True:
        page = http_sandbox.get("/v2/transfer/transfers", params=params).json()
        seen += [t["id"] for t in page["items"]]
        if "next_page_cursor" not in page:
            break
        params["page_cursor"] = page["next_page_cursor"]
    assert seen == ids[::-1]


def test_filters_by_type_profile_id_and_time(http_sandbox: Any) -> None:
    ids = _deposits(http_sandbox)
    desk = http_sandbox.post("/v2/profiles", {"nickname": "desk"}).json()["id"]
    other = http_sandbox.deposit("SOL", "1", profile=desk)["activity_id"]
    by_profile = http_sandbox.get("/v2/transfer/transfers", params={"profile_ids": desk}).json()[
        "items"
    ]
    assert [t["id"] for t in by_profile] == [other]
    by_ids = http_sandbox.get(
        "/v2/transfer/transfers", params=[("ids", ids[0]), ("ids", ids[1])]
    ).json()
    assert {t["id"] for t in by_ids["items"]} == {ids[0], ids[1]}
    window = http_sandbox.get(
        "/v2/transfer/transfers",
        params={"created_at.gte": "2024-01-01T00:01:00Z", "created_at.lt": "2024-01-01T00:03:00Z"},
    ).json()["items"]
    assert [t["id"] for t in window] == [ids[2], ids[1]]
    wires = http_sandbox.get("/v2/transfer/transfers", params={"type": "WIRE_DEPOSIT"}).json()[
        "items"
    ]
    assert len(wires) == 5  # no network given: a wire deposit, whatever the asset
    none = http_sandbox.get("/v2/transfer/transfers", params={"type": "CRYPTO_WITHDRAWAL"}).json()
    assert none == {"items": []}


def test_another_customer_sees_none_of_them(http_sandbox: Any) -> None:
    ids = _deposits(http_sandbox)
    headers, _ = http_sandbox.tenant()
    assert http_sandbox.get("/v2/transfer/transfers", headers=headers).json() == {"items": []}
    assert http_sandbox.get(f"/v2/transfer/transfers/{ids[0]}", headers=headers).status_code == 404


def _ids(page: Any) -> list[str]:
    assert page.status_code == 200, page.text
    return [t["id"] for t in page.json()["items"]]


# Withdrawals that stay pending 600 s: `_changing`'s tests.
PENDING = pytest.mark.sandex(settings={"withdrawal_confirmation_seconds": {"BITCOIN": 600}})


def _changing(sandbox: Any) -> tuple[Any, list[str]]:
    """A deposit at 0 s, a withdrawal at 60 s (pending until 660 s), a deposit at 120 s."""
    first = sandbox.deposit("BTC", "1")["activity_id"]
    sandbox.advance(60)
    withdrawal = withdraw(sandbox)
    assert withdrawal.status_code == 200, withdrawal.text
    sandbox.advance(60)
    last = sandbox.deposit("BTC", "1")["activity_id"]
    return sandbox, [first, withdrawal.json()["id"], last]


@PENDING
def test_order_by_updated_at_lists_by_last_change_oldest_first(http_sandbox: Any) -> None:
    sandbox, (first, withdrawal, last) = _changing(http_sandbox)
    sandbox.advance(600)  # the withdrawal completes at 660 s
    path = "/v2/transfer/transfers"
    assert _ids(sandbox.get(path)) == [last, withdrawal, first]  # by creation, newest first
    by_update = _ids(sandbox.get(path, params={"order_by": "UPDATED_AT"}))
    assert by_update == [first, last, withdrawal]  # the reference's default there is ASC
    newest = _ids(sandbox.get(path, params={"order_by": "UPDATED_AT", "order": "DESC"}))
    assert newest == [withdrawal, last, first]
    since = {"order_by": "UPDATED_AT", "updated_at.gte": "2024-01-01T00:01:30Z"}
    assert _ids(sandbox.get(path, params=since)) == [last, withdrawal]


@PENDING
def test_paging_by_updated_at_meets_a_change_made_between_pages(http_sandbox: Any) -> None:
    sandbox, (first, withdrawal, last) = _changing(http_sandbox)
    params: dict[str, Any] = {"order_by": "UPDATED_AT", "limit": 1}
    page = sandbox.get("/v2/transfer/transfers", params=params).json()
    assert [t["id"] for t in page["items"]] == [first]
    sandbox.advance(600)  # the withdrawal, not yet seen, changes: it moves to the end
    seen = []
    while "next_page_cursor" in page:
        params["page_cursor"] = page["next_page_cursor"]
        page = sandbox.get("/v2/transfer/transfers", params=params).json()
        seen += [(t["id"], t["status"]) for t in page["items"]]
    assert seen == [(last, "COMPLETED"), (withdrawal, "COMPLETED")]


@PENDING
def test_order_by_must_agree_with_the_time_filter_and_its_cursor(http_sandbox: Any) -> None:
    sandbox, _ = _changing(http_sandbox)
    path = "/v2/transfer/transfers"
    mixed = sandbox.get(
        path, params={"order_by": "CREATED_AT", "updated_at.gte": "2024-01-01T00:00:00Z"}
    )
    assert mixed.status_code == 400 and mixed.json()["meta"] == {"field": "order_by"}
    assert "updated_at.gte" in mixed.json()["detail"]
    mixed = sandbox.get(
        path, params={"order_by": "UPDATED_AT", "created_at.lt": "2024-01-02T00:00:00Z"}
    )
    assert mixed.status_code == 400 and mixed.json()["meta"] == {"field": "order_by"}
    # without order_by, either filter is taken, as before
    assert sandbox.get(path, params={"updated_at.gte": "2024-01-01T00:00:00Z"}).status_code == 200
    by_creation = sandbox.get(path, params={"limit": 1}).json()["next_page_cursor"]
    r = sandbox.get(path, params={"order_by": "UPDATED_AT", "page_cursor": by_creation})
    assert r.status_code == 400 and r.json()["meta"] == {"field": "page_cursor"}
    by_update = sandbox.get(path, params={"order_by": "UPDATED_AT", "limit": 1}).json()
    r = sandbox.get(path, params={"page_cursor": by_update["next_page_cursor"]})
    assert r.status_code == 400 and r.json()["meta"] == {"field": "page_cursor"}


def test_filters_by_identity_and_account(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    person_1, account_1 = approved_account(http_sandbox)
    person_2, account_2 = approved_account(http_sandbox)
    mine = withdraw(http_sandbox, identity_id=person_1, account_id=account_1).json()["id"]
    withdraw(http_sandbox, identity_id=person_2, account_id=account_2)
    path = "/v2/transfer/transfers"
    assert _ids(http_sandbox.get(path, params={"identity_ids": person_1})) == [mine]
    assert _ids(http_sandbox.get(path, params={"account_ids": account_1})) == [mine]
    assert _ids(http_sandbox.get(path, params={"account_ids": "nobody"})) == []
