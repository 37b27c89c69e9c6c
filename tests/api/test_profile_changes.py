"""Issue 19: a profile's nickname changed (UpdateProfile) and a profile deactivated
(DeactivateProfile): the service's rules, what a deactivated profile refuses, and how
the reads show it."""

from __future__ import annotations

from typing import Any

BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


def _put(sandbox: Any, path: str, json: Any = None, **kw: Any) -> Any:
    kw.setdefault("headers", sandbox.headers)
    return sandbox.http.put(path, json=json, **kw)


def _normal(sandbox: Any, nickname: str = "desk") -> dict[str, Any]:
    r = sandbox.post("/v2/profiles", {"nickname": nickname})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_update_changes_the_nickname_everywhere_it_is_read(sandbox: Any) -> None:
    desk = _normal(sandbox)
    r = _put(sandbox, f"/v2/profiles/{desk['id']}", {"nickname": "main desk"})
    assert r.status_code == 200, r.text
    assert r.json() == {**desk, "nickname": "main desk"}
    assert sandbox.get(f"/v2/profiles/{desk['id']}").json()["nickname"] == "main desk"
    listed = sandbox.get("/v2/profiles", params={"nickname": "main desk"}).json()["items"]
    assert [p["id"] for p in listed] == [desk["id"]]
    default = _put(sandbox, "/v2/profiles/default", {"nickname": "house"}).json()
    assert default["type"] == "DEFAULT" and default["nickname"] == "house"
    assert sandbox.verify() == []


def test_update_refuses_a_taken_nickname_a_blank_one_and_a_missing_one(http_sandbox: Any) -> None:
    desk = _normal(http_sandbox)
    other = _normal(http_sandbox, "other")
    r = _put(http_sandbox, f"/v2/profiles/{desk['id']}", {"nickname": "other"})
    assert r.status_code == 409
    assert r.json()["meta"]["existing"] == other
    for body, status in (({"nickname": " "}, 400), ({}, 400), ({"nickname": 5}, 400)):
        r = _put(http_sandbox, f"/v2/profiles/{desk['id']}", body)
        assert r.status_code == status, r.text
        assert r.json()["meta"]["field"] == "nickname"
    same = _put(http_sandbox, f"/v2/profiles/{desk['id']}", {"nickname": "desk"})
    assert same.status_code == 200 and same.json() == desk


def test_another_customers_profile_is_not_found_for_update_and_deactivate(
    http_sandbox: Any,
) -> None:
    desk = _normal(http_sandbox)
    headers, _ = http_sandbox.tenant()
    r = _put(http_sandbox, f"/v2/profiles/{desk['id']}", {"nickname": "mine"}, headers=headers)
    assert r.status_code == 404
    assert (
        _put(http_sandbox, f"/v2/profiles/{desk['id']}/deactivate", headers=headers).status_code
        == 404
    )
    assert http_sandbox.get(f"/v2/profiles/{desk['id']}").json()["nickname"] == "desk"


def test_update_and_deactivate_need_the_write_scope(http_sandbox: Any) -> None:
    desk = _normal(http_sandbox)
    narrow = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="funding:read_profile"
    )
    assert (
        _put(
            http_sandbox, f"/v2/profiles/{desk['id']}", {"nickname": "x"}, headers=narrow
        ).status_code
        == 403
    )
    assert (
        _put(http_sandbox, f"/v2/profiles/{desk['id']}/deactivate", headers=narrow).status_code
        == 403
    )


def test_deactivate_hides_the_profile_unless_asked_for(sandbox: Any) -> None:
    desk = _normal(sandbox)
    r = _put(sandbox, f"/v2/profiles/{desk['id']}/deactivate")
    assert r.status_code == 200, r.text
    assert r.json() == {}
    assert sandbox.get(f"/v2/profiles/{desk['id']}").status_code == 404
    shown = sandbox.get(f"/v2/profiles/{desk['id']}", params={"include_deactivated": "true"})
    assert shown.status_code == 200 and shown.json() == desk
    listed = [p["id"] for p in sandbox.get("/v2/profiles").json()["items"]]
    assert desk["id"] not in listed
    every = sandbox.get("/v2/profiles", params={"include_deactivated": "true"}).json()["items"]
    assert desk["id"] in [p["id"] for p in every]
    again = _put(sandbox, f"/v2/profiles/{desk['id']}/deactivate")
    assert again.status_code == 200
    assert sandbox.verify() == []


def test_the_default_profile_and_a_profile_with_a_balance_are_not_deactivated(
    http_sandbox: Any,
) -> None:
    r = _put(http_sandbox, "/v2/profiles/default/deactivate")
    assert r.status_code == 400
    assert r.json()["type"] == "about:blank"
    assert "default profile cannot be deactivated" in r.json()["detail"]
    desk = _normal(http_sandbox)
    http_sandbox.deposit("BTC", "0.1", profile=desk["id"])
    r = _put(http_sandbox, f"/v2/profiles/{desk['id']}/deactivate")
    assert r.status_code == 400
    body = r.json()
    assert "non-zero balance" in body["detail"]
    assert body["meta"] == {
        "field": "profile_id",
        "profile_id": desk["id"],
        "balances": {"BTC": "0.1"},
    }
    assert http_sandbox.get(f"/v2/profiles/{desk['id']}").status_code == 200


def test_funds_held_for_an_order_count_as_a_balance(http_sandbox: Any) -> None:
    desk = _normal(http_sandbox)
    http_sandbox.deposit("USD", "100", profile=desk["id"])
    order = http_sandbox.post(
        f"/v2/profiles/{desk['id']}/orders",
        {
            "side": "BUY",
            "market": "BTCUSD",
            "type": "LIMIT",
            "base_amount": "0.001",
            "price": "1000",
        },
    )
    assert order.status_code == 200, order.text
    move = http_sandbox.post(
        "/v2/transfer/internal",
        {"from_profile_id": desk["id"], "to_profile_id": "default", "asset": "USD", "amount": "99"},
    )
    assert move.status_code == 200, move.text
    r = _put(http_sandbox, f"/v2/profiles/{desk['id']}/deactivate")
    assert r.status_code == 400
    assert r.json()["meta"]["balances"] == {"USD": "1"}


def test_a_deactivated_profile_refuses_orders_and_transfers(sandbox: Any) -> None:
    desk = _normal(sandbox)
    sandbox.deposit("USD", "50")
    assert _put(sandbox, f"/v2/profiles/{desk['id']}/deactivate").status_code == 200
    pid = desk["id"]
    tries = {
        "order": sandbox.post(
            f"/v2/profiles/{pid}/orders",
            {"side": "BUY", "market": "BTCUSD", "type": "MARKET", "quote_amount": "10"},
        ),
        "deposit": sandbox.post(
            f"/v2/sandbox/profiles/{pid}/deposit", {"asset": "USD", "amount": "1"}
        ),
        "to": sandbox.post(
            "/v2/transfer/internal",
            {"from_profile_id": "default", "to_profile_id": pid, "asset": "USD", "amount": "1"},
        ),
        "from": sandbox.post(
            "/v2/transfer/internal",
            {"from_profile_id": pid, "to_profile_id": "default", "asset": "USD", "amount": "1"},
        ),
        "withdrawal": sandbox.post(
            "/v2/transfer/crypto-withdrawals",
            {
                "profile_id": pid,
                "asset": "BTC",
                "destination_address": BTC_ADDRESS,
                "crypto_network": "BITCOIN",
                "amount": "0.001",
            },
        ),
        "instructions": sandbox.post(
            "/v2/transfer/fiat-deposit-instructions", {"profile_id": pid, "fiat_network": "WIRE"}
        ),
    }
    fields = {"to": "to_profile_id", "from": "from_profile_id"}
    for name, r in tries.items():
        assert r.status_code == 400, (name, r.text)
        assert "is deactivated" in r.json()["detail"], name
        assert r.json()["meta"]["field"] == fields.get(name, "profile_id"), name
    assert sandbox.balance("USD")["available"] == "50"
    assert sandbox.verify() == []


def test_deactivation_survives_a_restart(sandbox_factory: Any) -> None:
    first = sandbox_factory("restart.db")
    desk = _normal(first)
    assert _put(first, f"/v2/profiles/{desk['id']}/deactivate").status_code == 200
    first.close()
    second = sandbox_factory("restart.db")
    assert second.get(f"/v2/profiles/{desk['id']}").status_code == 404
    r = second.post(f"/v2/sandbox/profiles/{desk['id']}/deposit", {"asset": "USD", "amount": "1"})
    assert r.status_code == 400
