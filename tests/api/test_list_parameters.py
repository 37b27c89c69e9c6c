"""List and filter parameters as the reference declares them: every enum and boolean
value is checked (an unknown one is a 400 naming the parameter, never a silent 200)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.reference import document

# The interface names these transfer types PLATFORM_TRANSFER_*, and it wins over the
# OpenAPI document where the two disagree (the reference's README).
RENAMED = {"PAXOS_TRANSFER_DEBIT", "PAXOS_TRANSFER_CREDIT"}
LIMIT_ORDER = {
    "side": "SELL",
    "market": "BTCUSD",
    "type": "LIMIT",
    "price": "90000",
    "base_amount": "0.1",
}


def _refused(r: Any, name: str) -> None:
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["detail"].startswith(f"{name} invalid: "), body
    assert body["meta"] == {"field": name}


@pytest.mark.parametrize(
    ("path", "name", "value"),
    [
        ("/v2/transfer/transfers", "type", "NOPE"),
        ("/v2/transfer/transfers", "statuses", "NOPE"),
        ("/v2/transfer/transfers", "secondary_statuses", "NOPE"),
        ("/v2/profiles", "include_deactivated", "maybe"),
        ("/v2/profiles/default", "include_deactivated", "maybe"),
        ("/v2/profiles", "order_by", "AAA"),
        ("/v2/orders", "status", "NOPE"),
        ("/v2/orders", "market", "NOPE"),
        ("/v2/profiles/default/orders", "market", "NOPE"),
    ],
)
def test_an_unknown_filter_value_is_a_400_naming_the_parameter(
    http_sandbox: Any, path: str, name: str, value: str
) -> None:
    _refused(http_sandbox.get(path, params={name: value}), name)


def test_one_unknown_value_among_known_ones_is_refused(http_sandbox: Any) -> None:
    r = http_sandbox.get(
        "/v2/transfer/transfers", params=[("statuses", "PENDING"), ("statuses", "X")]
    )
    _refused(r, "statuses")
    assert "PENDING, COMPLETED, FAILED" in r.json()["detail"]


def test_known_filter_values_filter(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    listed = http_sandbox.get(
        "/v2/transfer/transfers", params={"type": "WIRE_DEPOSIT", "statuses": "COMPLETED"}
    ).json()["items"]
    assert len(listed) == 1
    held = http_sandbox.get(
        "/v2/transfer/transfers", params={"secondary_statuses": "TRAVEL_RULE_INFO_REQUESTED"}
    )
    assert held.json() == {"items": []}  # no wire is held for the travel rule
    for flag in ("true", "false"):
        assert http_sandbox.get(
            "/v2/profiles/default", params={"include_deactivated": flag}
        ).is_success


def _list_operations() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path, operations in document()["paths"].items():
        op = operations.get("get")
        if op is not None and any(p["in"] == "query" for p in op.get("parameters", [])):
            sandex = "/v2" + path.replace("{profile_id}", "default").replace("{market}", "BTCUSD")
            found.append((sandex, op))
    return found


def _enum(schema: dict[str, Any]) -> tuple[list[str] | None, bool]:
    """The values of an enum parameter (or of its items), and whether it is a boolean."""
    items = schema.get("items", schema)
    return items.get("enum"), items.get("type") == "boolean"


def test_every_enum_and_boolean_query_parameter_of_the_reference_is_checked(
    http_sandbox: Any,
) -> None:
    http_sandbox.deposit("BTC", "1")
    checked = 0
    for path, op in _list_operations():
        for param in op["parameters"]:
            if param["in"] != "query":
                continue
            name = param["name"]
            values, boolean = _enum(param["schema"])
            if boolean:
                values = ["true", "false"]
            if values is None:
                continue
            _refused(http_sandbox.get(path, params={name: "NOT_A_VALUE"}), name)
            for value in values:
                if value in RENAMED:
                    continue
                r = http_sandbox.get(path, params={name: value})
                assert r.status_code == 200, f"{path}?{name}={value}: {r.text}"
            checked += 1
    assert checked >= 9  # profiles 3, orders 4, transfers 4, fiat instructions 1, ...


def test_profiles_are_listed_oldest_first_by_default(http_sandbox: Any) -> None:
    for name in ("p0", "p1"):
        http_sandbox.post("/v2/profiles", {"nickname": name})
    names = [p["nickname"] for p in http_sandbox.get("/v2/profiles").json()["items"]]
    assert names == ["default", "p0", "p1"]  # the reference: "Defaults to ASC"
    desc = http_sandbox.get("/v2/profiles", params={"order": "DESC"}).json()["items"]
    assert [p["nickname"] for p in desc] == ["p1", "p0", "default"]
    page = http_sandbox.get("/v2/profiles", params={"limit": 2}).json()
    rest = http_sandbox.get("/v2/profiles", params={"page_cursor": page["next_page_cursor"]}).json()
    assert [p["nickname"] for p in page["items"] + rest["items"]] == names


@pytest.mark.parametrize(
    ("path", "newest_first"),
    [
        ("/v2/transfer/transfers", True),  # "Otherwise defaults to DESC"
        ("/v2/transfer/fiat-deposit-instructions", True),  # "Defaults to DESC"
        ("/v2/events", False),  # "always ... in created_at ascending order"
    ],
)
def test_the_other_lists_keep_the_reference_default_order(
    http_sandbox: Any, path: str, newest_first: bool
) -> None:
    for _ in range(2):
        http_sandbox.deposit("BTC", "1")
        http_sandbox.post(
            "/v2/transfer/fiat-deposit-instructions",
            {"profile_id": "default", "fiat_network": "WIRE"},
        )
        http_sandbox.advance(1)
    body = http_sandbox.get(path).json()
    items = body.get("items", body.get("events"))
    times = [item["created_at"] for item in items]
    assert len(times) >= 2
    assert times == sorted(times, reverse=newest_first)


# Path parameters and required query parameters of sandex's list operations, to call them.
_PATH_VALUES = {"{profile_id}": "default", "{market}": "BTCUSD"}
_REQUIRED = {"/v2/markets/{market}/historical-prices": {"increment": "ONE_HOUR"}}


def _paged_lists(sandbox: Any) -> list[tuple[str, str, dict[str, str]]]:
    """Every GET of sandex's own document that takes a page size: (path, name, required)."""
    found = []
    for template, operations in sandbox.app.openapi()["paths"].items():
        if not sandbox.serves(template):
            continue
        for param in operations.get("get", {}).get("parameters", []):
            if param["in"] == "query" and param["name"] in ("limit", "pagination.limit"):
                path = template
                for name, value in _PATH_VALUES.items():
                    path = path.replace(name, value)
                found.append((path, param["name"], _REQUIRED.get(template, {})))
    return found


def test_a_limit_of_0_is_no_limit_and_a_negative_one_is_below_1(sandbox: Any) -> None:
    """0 is the unset value of the service's wire format: the list's default page size.
    A negative limit is an integer, refused for its value."""
    sandbox.deposit("BTC", "1")
    sandbox.post("/v2/profiles/default/orders", {**LIMIT_ORDER, "ref_id": "r"})
    lists = _paged_lists(sandbox)
    assert len(lists) >= 10, lists
    for path, name, required in lists:
        unset = sandbox.get(path, params=required)
        assert unset.status_code == 200, f"{path}: {unset.text}"
        zero = sandbox.get(path, params={**required, name: "0"})
        assert zero.status_code == 200, f"{path}?{name}=0: {zero.text}"
        assert zero.json() == unset.json(), path
        negative = sandbox.get(path, params={**required, name: "-1"})
        assert negative.status_code == 400, f"{path}?{name}=-1: {negative.text}"
        body = negative.json()
        assert body["detail"] == f"{name} invalid: must be at least 1", (path, body)
        assert body["meta"] == {"field": name}
