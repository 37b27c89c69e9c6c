"""Profiles and balances through the HTTP API."""

from __future__ import annotations

from typing import Any

from sandex.engine.kernel.money import ASSETS


def test_the_bootstrap_customer_has_a_default_profile_reachable_by_alias(http_sandbox: Any) -> None:
    items = http_sandbox.get("/v2/profiles").json()["items"]
    assert [p["type"] for p in items] == ["DEFAULT"]
    by_alias = http_sandbox.get("/v2/profiles/default").json()
    assert by_alias == items[0]
    assert http_sandbox.get(f"/v2/profiles/{by_alias['id']}").json() == by_alias


def test_create_profile_answers_the_profile_and_lists_it(http_sandbox: Any) -> None:
    r = http_sandbox.post("/v2/profiles", {"nickname": "desk", "description": "prop desk"})
    assert r.status_code == 200
    created = r.json()
    assert created["nickname"] == "desk"
    assert created["type"] == "NORMAL"
    assert created["description"] == "prop desk"
    listed = http_sandbox.get("/v2/profiles", params={"nickname": "desk"}).json()["items"]
    assert listed == [created]


def test_a_duplicate_nickname_is_409_already_exists_with_the_existing_profile(
    http_sandbox: Any,
) -> None:
    first = http_sandbox.post("/v2/profiles", {"nickname": "desk"}).json()
    r = http_sandbox.post("/v2/profiles", {"nickname": "desk"})
    assert r.status_code == 409
    body = r.json()
    assert body["type"] == "https://developer.paxos.com/docs/v2/problems/already-exists"
    assert body["title"] == "Already Exists"
    assert body["meta"]["existing"] == first


def test_the_same_nickname_is_fine_for_another_customer(http_sandbox: Any) -> None:
    headers, _ = http_sandbox.tenant()
    assert http_sandbox.post("/v2/profiles", {"nickname": "desk"}).status_code == 200
    assert (
        http_sandbox.post("/v2/profiles", {"nickname": "desk"}, headers=headers).status_code == 200
    )


def test_profile_nickname_is_required_and_not_blank(http_sandbox: Any) -> None:
    r = http_sandbox.post("/v2/profiles", {})
    assert r.status_code == 400
    assert r.json()["meta"]["field"] == "nickname"
    assert http_sandbox.post("/v2/profiles", {"nickname": "  "}).status_code == 400


def test_balances_list_every_asset_with_zeros(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "0.5")
    items = http_sandbox.get("/v2/profiles/default/balances").json()["items"]
    assert [b["asset"] for b in items] == list(ASSETS)
    by_asset = {b["asset"]: b for b in items}
    assert by_asset["BTC"] == {"asset": "BTC", "available": "0.5", "trading": "0"}
    assert by_asset["USD"] == {"asset": "USD", "available": "0", "trading": "0"}


def test_a_single_balance_and_an_unknown_asset(http_sandbox: Any) -> None:
    http_sandbox.deposit("ETH", "1.000000000000000001")
    assert http_sandbox.balance("ETH")["available"] == "1.000000000000000001"
    assert http_sandbox.get("/v2/profiles/default/balances/DOGE").status_code == 404


def test_profiles_page_with_a_cursor(http_sandbox: Any) -> None:
    for i in range(5):
        http_sandbox.post("/v2/profiles", {"nickname": f"p{i}"})
    first = http_sandbox.get("/v2/profiles", params={"limit": 4, "order": "ASC"}).json()
    assert len(first["items"]) == 4
    rest = http_sandbox.get(
        "/v2/profiles",
        params={"limit": 4, "order": "ASC", "page_cursor": first["next_page_cursor"]},
    ).json()
    assert "next_page_cursor" not in rest
    names = [p["nickname"] for p in first["items"] + rest["items"]]
    assert names == ["default", "p0", "p1", "p2", "p3", "p4"]


def test_a_bad_limit_or_cursor_is_a_400_naming_the_field(http_sandbox: Any) -> None:
    r = http_sandbox.get("/v2/profiles", params={"limit": -1})
    assert r.status_code == 400 and r.json()["meta"]["field"] == "limit"
    r = http_sandbox.get("/v2/profiles", params={"limit": 1001})
    assert r.status_code == 400
    r = http_sandbox.get("/v2/profiles", params={"page_cursor": "garbage!"})
    assert r.status_code == 400 and "page_cursor" in r.json()["detail"]


def test_the_nickname_filter_matches_a_prefix_ignoring_case(http_sandbox: Any) -> None:
    """The reference: prefix matching, case insensitive, no wildcards."""
    desk = http_sandbox.post("/v2/profiles", {"nickname": "Desk Ünter"}).json()
    other = http_sandbox.post("/v2/profiles", {"nickname": "deskette"}).json()
    http_sandbox.post("/v2/profiles", {"nickname": "my desk"})

    def names(prefix: str) -> list[str]:
        r = http_sandbox.get("/v2/profiles", params={"nickname": prefix})
        assert r.status_code == 200
        return [p["nickname"] for p in r.json()["items"]]

    assert names("DESK") == [desk["nickname"], other["nickname"]]
    assert names("desk ün") == [desk["nickname"]]
    assert names("desk%") == []
    assert names("nobody") == []
