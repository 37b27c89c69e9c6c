"""Internal transfers between two profiles of one customer: POST /v2/transfer/internal."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.reference import component_schemas
from tests.support.transfer_helpers import problem, profile_id, usd_below_the_cent

PATH = "/v2/transfer/internal"


def _desk(sandbox: Any, nickname: str = "desk", **kw: Any) -> str:
    r = sandbox.post("/v2/profiles", {"nickname": nickname}, **kw)
    assert r.status_code == 200, r.text
    return r.json()["id"]  # type: ignore[no-any-return]


def _move(sandbox: Any, to: str, amount: str = "0.25", asset: str = "BTC", **kw: Any) -> Any:
    body = {"from_profile_id": "default", "to_profile_id": to, "asset": asset, "amount": amount}
    body.update(kw)
    return sandbox.post(PATH, body)


def test_moves_funds_at_once_as_a_completed_pair_sharing_a_group_id(http_sandbox: Any) -> None:
    desk = _desk(http_sandbox)
    http_sandbox.deposit("BTC", "1")
    r = _move(
        http_sandbox,
        desk,
        ref_id="move-1",
        metadata={"mine": "1"},
        recipient_metadata={"yours": "2"},
    )
    assert r.status_code == 200, r.text
    debit = r.json()
    schema = component_schemas()
    assert set(schema["Transfer"]["required"]) <= set(debit)
    assert set(debit) <= set(schema["Transfer"]["properties"])
    expected = {
        "profile_id": profile_id(http_sandbox),
        "type": "INTERNAL_TRANSFER_DEBIT",
        "direction": "DEBIT",
        "status": "COMPLETED",
        "amount": "0.25",
        "total": "0.25",
        "fee": "0",
        "asset": "BTC",
        "ref_id": "move-1",
        "metadata": {"mine": "1"},
    }
    assert {k: debit[k] for k in expected} == expected
    assert http_sandbox.balance("BTC")["available"] == "0.75"
    assert http_sandbox.balance("BTC", profile=desk)["available"] == "0.25"
    pair = http_sandbox.get(
        "/v2/transfer/transfers", params={"group_ids": debit["group_id"]}
    ).json()
    credit, listed_debit = pair["items"]
    assert listed_debit == debit
    assert credit["type"] == "INTERNAL_TRANSFER_CREDIT"
    assert credit["direction"] == "CREDIT"
    assert credit["status"] == "COMPLETED"
    assert credit["profile_id"] == desk
    assert credit["metadata"] == {"yours": "2"}
    assert (credit["amount"], credit["asset"], credit["group_id"]) == (
        "0.25",
        "BTC",
        debit["group_id"],
    )


def test_both_sides_are_listed_by_type(http_sandbox: Any) -> None:
    desk = _desk(http_sandbox)
    http_sandbox.deposit("USD", "100")
    assert _move(http_sandbox, desk, "12.50", "USD").status_code == 200
    for kind in ("INTERNAL_TRANSFER_DEBIT", "INTERNAL_TRANSFER_CREDIT"):
        items = http_sandbox.get("/v2/transfer/transfers", params={"type": kind}).json()["items"]
        assert [t["amount"] for t in items] == ["12.50"]


def test_a_second_transfer_with_the_same_ref_id_is_refused(http_sandbox: Any) -> None:
    desk = _desk(http_sandbox)
    http_sandbox.deposit("BTC", "1")
    first = _move(http_sandbox, desk, ref_id="once").json()
    body = problem(_move(http_sandbox, desk, ref_id="once"), 409, "already-exists")
    assert body["meta"]["existing"] == first
    assert http_sandbox.balance("BTC")["available"] == "0.75"
    assert http_sandbox.balance("BTC", profile=desk)["available"] == "0.25"


def test_insufficient_funds_is_403_and_moves_nothing(http_sandbox: Any) -> None:
    desk = _desk(http_sandbox)
    http_sandbox.deposit("BTC", "0.1")
    body = problem(_move(http_sandbox, desk), 403, "insufficient-funds")
    assert body["meta"] == {
        "profile_id": profile_id(http_sandbox),
        "asset": "BTC",
        "available": "0.1",
        "needed": "0.25",
    }
    assert http_sandbox.balance("BTC", profile=desk)["available"] == "0"
    assert http_sandbox.get("/v2/transfer/transfers", params={"profile_ids": desk}).json() == {
        "items": []
    }


def test_profiles_of_another_customer_are_not_found(http_sandbox: Any) -> None:
    headers, creds = http_sandbox.tenant()
    http_sandbox.deposit("BTC", "1")
    assert problem(_move(http_sandbox, creds["profile_id"]), 404)["detail"] == (
        f"profile not found with id {creds['profile_id']}"
    )
    theirs = {
        "from_profile_id": creds["profile_id"],
        "to_profile_id": profile_id(http_sandbox),
        "asset": "BTC",
        "amount": "0.1",
    }
    problem(http_sandbox.post(PATH, theirs), 404)
    assert http_sandbox.balance("BTC")["available"] == "1"


def test_a_transfer_to_the_same_profile_is_refused(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    assert "to_profile_id" in problem(_move(http_sandbox, profile_id(http_sandbox)), 400)["detail"]


@pytest.mark.parametrize(
    ("asset", "amount", "needle", "slug"),
    [
        ("BTC", "0.000000001", "precision", "exceed-precision"),
        ("USD", "1.001", "precision", "exceed-precision"),
        ("DOGE", "1", "asset", None),
        ("BTC", "0", "amount", None),
        ("BTC", "-1", "amount", None),
    ],
)
def test_asset_and_amount_are_checked(
    http_sandbox: Any, asset: str, amount: str, needle: str, slug: str | None
) -> None:
    desk = _desk(http_sandbox)
    http_sandbox.deposit("BTC", "1")
    assert needle in problem(_move(http_sandbox, desk, amount, asset), 400, slug)["detail"]


@pytest.mark.parametrize("field", ["metadata", "recipient_metadata"])
def test_metadata_limits_apply_to_both_sides(http_sandbox: Any, field: str) -> None:
    desk = _desk(http_sandbox)
    http_sandbox.deposit("BTC", "1")
    r = _move(http_sandbox, desk, **{field: {f"k{i}": "v" for i in range(7)}})
    assert field in problem(r, 400)["detail"]


def test_the_scope_is_required(http_sandbox: Any) -> None:
    desk = _desk(http_sandbox)
    headers = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="transfer:write_crypto_withdrawal"
    )
    body = {"from_profile_id": "default", "to_profile_id": desk, "asset": "BTC", "amount": "1"}
    assert http_sandbox.post(PATH, body, headers=headers).status_code == 403


def test_a_balance_a_trade_left_below_the_cent_moves_whole(http_sandbox: Any) -> None:
    """Trades settle the quote at full precision, as the reference's executions show; what a
    balance shows, it can move: as many places as it holds, not the asset's two."""
    held = usd_below_the_cent(http_sandbox)
    desk = _desk(http_sandbox)
    finer = problem(
        _move(http_sandbox, desk, amount=held + "1", asset="USD"), 400, "exceed-precision"
    )
    assert finer["detail"] == "max precision allowed for asset USD is 2"
    r = _move(http_sandbox, desk, amount=held, asset="USD")
    assert r.status_code == 200, r.text
    assert r.json()["amount"] == held
    assert http_sandbox.balance("USD")["available"] == "0"
    assert http_sandbox.balance("USD", profile=desk)["available"] == held
