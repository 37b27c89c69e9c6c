"""Domain faults and pacing (issue 31, docs/faults.md): the triggers of
sandex.engine.domain.sandbox_triggers, each proved through HTTP; pending items released by hand
(/v2/sandbox/transfers/{id}/complete|fail); the world's pacing (/v2/sandbox/pacing)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sandex.engine.domain import sandbox_triggers
from sandex.engine.domain.ledger import withdrawing
from sandex.engine.kernel.clock import parse_time, to_millis
from tests.conftest import START
from tests.support.identity_helpers import IDENTITIES, person, set_status
from tests.support.trading_helpers import (
    events,
    get_order,
    limit,
    place,
    placed,
    set_price,
    still,
)
from tests.support.transfer_helpers import PERSON, WIRE, profile_id, withdraw

ROOT = Path(__file__).resolve().parents[2]
PACING = "/v2/sandbox/pacing"
TRANSFERS = "/v2/transfer/transfers"
ACCOUNTS = "/v2/transfer/fiat-accounts"
FIAT_WITHDRAWALS = "/v2/transfer/fiat-withdrawals"
ADDRESSES = "/v2/transfer/deposit-addresses"
CRYPTO_DEPOSITS = "/v2/sandbox/crypto-deposits"
CONVERSIONS = "/v2/conversion/stablecoins"


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _transfer(sb: Any, transfer_id: str) -> dict[str, Any]:
    return _ok(sb.get(f"{TRANSFERS}/{transfer_id}"))


def _release(
    sb: Any, item_id: str, outcome: str, body: Any = None, kind: str = "transfers", **kw: Any
) -> Any:
    return sb.post(f"/v2/sandbox/{kind}/{item_id}/{outcome}", body, **kw)


def _pace(sb: Any, **kinds: dict[str, Any]) -> dict[str, Any]:
    return _ok(sb.http.put(PACING, json=kinds, headers=sb.headers))


def _fiat_account(sb: Any, **kw: Any) -> dict[str, Any]:
    body = {"fiat_account_owner": PERSON, "fiat_network_instructions": {"wire": WIRE}, **kw}
    return _ok(sb.post(ACCOUNTS, body))


def _approved_account(sb: Any) -> dict[str, Any]:
    made = _fiat_account(sb)
    sb.advance(5)
    return _ok(sb.get(f"{ACCOUNTS}/{made['id']}"))


def _fiat_withdraw(sb: Any, account_id: str, **kw: Any) -> dict[str, Any]:
    body = {"profile_id": "default", "asset": "USD", "fiat_account_id": account_id}
    return _ok(sb.post(FIAT_WITHDRAWALS, {**body, "amount": "100.00", **kw}))


def _instructions(sb: Any, **kw: Any) -> str:
    body = {"profile_id": "default", "fiat_network": "WIRE", **kw}
    return _ok(sb.post("/v2/transfer/fiat-deposit-instructions", body))["memo_id"]  # type: ignore[no-any-return]


def _wire(sb: Any, memo: str, amount: str = "150.33") -> None:
    body = {
        "amount": amount,
        "asset": "USD",
        "memo_id": memo,
        "fiat_network_instructions": {"wire": WIRE},
    }
    _ok(sb.post("/v2/sandbox/fiat-deposits", body))


def _wire_transfers(sb: Any) -> list[dict[str, Any]]:
    listed = _ok(sb.get(TRANSFERS, params={"type": "WIRE_DEPOSIT", "limit": 100}))["items"]
    return [t for t in listed if "memo" in t]  # a wire to instructions, not a sandbox deposit


def _address(sb: Any) -> str:
    made = _ok(sb.post(ADDRESSES, {"profile_id": "default", "crypto_network": "BITCOIN"}))
    return made["address"]  # type: ignore[no-any-return]


def _crypto_deposit(sb: Any, address: str, **kw: Any) -> dict[str, Any]:
    body = {"address": address, "asset": "BTC", "amount": "0.1", **kw}
    return _ok(sb.post(CRYPTO_DEPOSITS, body))


def _hold(sb: Any) -> Decimal:
    return sb.engine.state.ledger.balance(withdrawing(profile_id(sb)), "BTC")  # type: ignore[no-any-return]


# -- the registry and its page --------------------------------------------------------


def test_the_triggers_page_is_generated_from_the_registry() -> None:
    page = (ROOT / "docs" / "sandbox-triggers.md").read_text()
    assert page == sandbox_triggers.page(), "run `sandex triggers > docs/sandbox-triggers.md`"


# Each row of the registry and the test below that proves its outcome through HTTP.
PROVEN = {
    (sandbox_triggers.FAIL, "memo"): "test_memo_sandbox_fail_fails_a_crypto_withdrawal",
    (sandbox_triggers.FAIL_WITH + "<reason>", "memo"): "test_memo_fail_with_a_reason",
    (sandbox_triggers.HOLD, "memo"): "test_memo_sandbox_hold_keeps_a_withdrawal_pending",
    (sandbox_triggers.REVIEW, "memo"): "test_memo_sandbox_review_holds_a_small_deposit",
    (sandbox_triggers.HOLD, "metadata value", "fiat deposit instructions"): (
        "test_instructions_held_keep_a_wire_pending"
    ),
    (sandbox_triggers.DELAY_WITH + "<seconds>", "metadata value"): "test_a_delayed_wire",
    (sandbox_triggers.REJECT, "metadata value"): "test_metadata_sandbox_reject_rejects",
    (sandbox_triggers.REJECT_WITH + "<reason>", "metadata value"): "test_an_order_rejected",
    (sandbox_triggers.HOLD, "metadata value", "LIMIT order (GTC or GTT)"): (
        "test_a_held_order_rests_while_the_price_crosses_until_released"
    ),
}


# A value of one kind that means different things where it is read: told by what it
# applies to.
TWICE = {(sandbox_triggers.HOLD, "metadata value")}


def test_every_trigger_has_a_test_of_its_outcome() -> None:
    rows = {
        (t.value, t.kind, t.applies_to) if (t.value, t.kind) in TWICE else (t.value, t.kind)
        for t in sandbox_triggers.TRIGGERS
    }
    assert rows == set(PROVEN)
    names = {name for name in globals() if name.startswith("test_")}
    assert set(PROVEN.values()) <= names


def test_the_cli_prints_the_page(capsys: pytest.CaptureFixture[str]) -> None:
    from sandex.api_adapter.cli import main

    assert main(["triggers"]) == 0
    assert capsys.readouterr().out == sandbox_triggers.page()


# -- each trigger's outcome -------------------------------------------------------------


def test_memo_sandbox_fail_fails_a_crypto_withdrawal(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    made = _ok(withdraw(http_sandbox, amount="0.001", memo="sandbox:fail"))
    http_sandbox.advance(6)
    failed = _transfer(http_sandbox, made["id"])
    assert failed["status"] == "FAILED"
    assert failed["status_details"]["sandbox_forced_failure"]["memo"] == "sandbox:fail"
    assert http_sandbox.balance("BTC")["available"] == "1"


def test_memo_fail_with_a_reason(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    http_sandbox.deposit("USD", "1000")
    crypto = _ok(withdraw(http_sandbox, amount="0.001", memo="sandbox:fail:address-blocked"))
    account = _approved_account(http_sandbox)
    fiat = _fiat_withdraw(http_sandbox, account["id"], memo="sandbox:fail:account-closed")
    http_sandbox.advance(60)
    for made, reason in ((crypto, "address-blocked"), (fiat, "account-closed")):
        failed = _transfer(http_sandbox, made["id"])
        assert failed["status"] == "FAILED", failed
        detail = failed["status_details"]["sandbox_forced_failure"]
        assert detail["reason"] == reason
        assert reason in detail["message"]
    assert http_sandbox.balance("BTC")["available"] == "1"
    assert http_sandbox.balance("USD")["available"] == "1000"


def test_memo_sandbox_hold_keeps_a_withdrawal_pending(sandbox: Any) -> None:
    sandbox.deposit("BTC", "1")
    sandbox.deposit("USD", "1000")
    crypto = _ok(withdraw(sandbox, amount="0.001", memo="sandbox:hold"))
    account = _approved_account(sandbox)
    fiat = _fiat_withdraw(sandbox, account["id"], memo="sandbox:hold")
    sandbox.advance(24 * 3600)
    assert _transfer(sandbox, crypto["id"])["status"] == "PENDING"
    assert _transfer(sandbox, fiat["id"])["status"] == "PENDING"
    done = _ok(_release(sandbox, crypto["id"], "complete"))
    assert done["status"] == "COMPLETED"
    assert done["crypto_tx_hash"]
    assert _hold(sandbox) == 0
    assert _ok(_release(sandbox, fiat["id"], "complete"))["status"] == "COMPLETED"
    assert sandbox.balance("USD")["available"] == "870"  # 100 and the wire fee of 30


def test_memo_sandbox_review_holds_a_small_deposit(http_sandbox: Any) -> None:
    address = _address(http_sandbox)
    sent = _crypto_deposit(http_sandbox, address, memo="sandbox:review")
    assert sent["secondary_status"]["name"] == "TRAVEL_RULE_INFO_REQUESTED"
    plain = _crypto_deposit(http_sandbox, address)
    assert "secondary_status" not in plain
    http_sandbox.advance(3600)
    assert _transfer(http_sandbox, sent["id"])["status"] == "PENDING"
    assert _transfer(http_sandbox, plain["id"])["status"] == "COMPLETED"
    refused = _release(http_sandbox, sent["id"], "complete")
    assert refused.status_code == 409, refused.text


def test_memo_sandbox_hold_keeps_a_crypto_deposit_pending(http_sandbox: Any) -> None:
    address = _address(http_sandbox)
    kept = _crypto_deposit(http_sandbox, address, memo="sandbox:hold")
    lost = _crypto_deposit(http_sandbox, address, memo="sandbox:hold")
    http_sandbox.advance(3600)
    assert _transfer(http_sandbox, kept["id"])["status"] == "PENDING"
    assert _ok(_release(http_sandbox, kept["id"], "complete"))["status"] == "COMPLETED"
    failed = _ok(_release(http_sandbox, lost["id"], "fail", {"reason": "reorged"}))
    assert failed["status"] == "FAILED"
    assert failed["status_details"]["reason"] == "reorged"
    assert http_sandbox.balance("BTC")["available"] == "0.1"


def test_instructions_held_keep_a_wire_pending(http_sandbox: Any) -> None:
    memo = _instructions(http_sandbox, metadata={"case": "sandbox:hold"})
    _wire(http_sandbox, memo)
    _wire(http_sandbox, memo, "99.00")
    http_sandbox.advance(3600)
    pending = _wire_transfers(http_sandbox)
    assert [t["status"] for t in pending] == ["PENDING", "PENDING"]
    assert http_sandbox.balance("USD")["available"] == "0"
    second, first = pending  # newest first
    assert _ok(_release(http_sandbox, first["id"], "complete"))["status"] == "COMPLETED"
    assert http_sandbox.balance("USD")["available"] == "120.33"  # less the wire fee of 30
    failed = _ok(_release(http_sandbox, second["id"], "fail", {"reason": "returned by the bank"}))
    assert failed["status_details"] == {"reason": "returned by the bank"}
    assert http_sandbox.balance("USD")["available"] == "120.33"


def test_a_delayed_wire(http_sandbox: Any) -> None:
    memo = _instructions(http_sandbox, metadata={"case": "sandbox:delay:600"})
    _wire(http_sandbox, memo)
    http_sandbox.advance(599)
    assert _wire_transfers(http_sandbox) == []
    http_sandbox.advance(1)
    assert [t["status"] for t in _wire_transfers(http_sandbox)] == ["COMPLETED"]


def test_metadata_sandbox_reject_rejects(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    made = _fiat_account(sb, metadata={"case": "sandbox:reject"})
    sb.advance(5)
    assert _ok(sb.get(f"{ACCOUNTS}/{made['id']}"))["status"] == "REJECTED"
    sb.deposit("USD", "100000")
    order = placed(sb, **limit("BUY", "43000", "0.1", metadata={"case": "sandbox:reject"}))
    assert order["status"] == "REJECTED"
    assert sb.balance("USD") == {**sb.balance("USD"), "available": "100000", "trading": "0"}
    (rejected,) = events(sb, "OrderRejected")
    assert rejected["data"]["reason"] == sandbox_triggers.ORDER_REJECTED


def test_an_order_rejected(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory, order_submission_latency_ms=500)
    sb.deposit("BTC", "1")
    metadata = {"case": "sandbox:reject:market closed"}
    order = placed(sb, **limit("SELL", "40000", "0.5", metadata=metadata))
    assert order["status"] == "PENDING_SUBMISSION"
    sb.advance(1)
    assert get_order(sb, order)["status"] == "REJECTED"  # at submission, not before
    assert get_order(sb, order)["amount_filled"] in ("0", "0.0", "0.00000000")
    assert sb.balance("BTC")["available"] == "1"
    (rejected,) = events(sb, "OrderRejected")
    assert rejected["data"]["reason"] == "market closed"
    plain = placed(sb, **limit("SELL", "40000", "0.5"))
    sb.advance(1)
    assert get_order(sb, plain)["status"] == "FILLED"


# -- an order held until released -------------------------------------------------------

HELD = {"case": sandbox_triggers.HOLD}


def _release_order(sb: Any, order: dict[str, Any], **kw: Any) -> Any:
    return sb.post(f"/v2/sandbox/orders/{order['id']}/release", None, **kw)


def test_a_held_order_rests_while_the_price_crosses_until_released(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory, "held.db")
    sb.deposit("USD", "100000")
    held = placed(sb, **limit("BUY", "42000", "0.1", metadata=HELD))
    plain = placed(sb, **limit("BUY", "42000", "0.1"))
    assert held["status"] == plain["status"] == "OPEN"
    set_price(sb, "41000")  # the house's ladder walks through both orders' price
    assert get_order(sb, plain)["status"] == "FILLED"
    assert get_order(sb, held)["status"] == "OPEN"
    assert get_order(sb, held)["amount_filled"] in ("0", "0.0", "0.00000000")
    sb.close()
    again = sandbox_factory("held.db")  # held in the log: a restart replays it held
    set_price(again, "40000")
    assert get_order(again, held)["status"] == "OPEN"
    released = _ok(_release_order(again, held))
    assert released["status"] == "FILLED"  # it met the ladder as it stands now
    assert get_order(again, held)["status"] == "FILLED"
    (trade,) = [
        e
        for e in events(again, "TradeExecuted")
        if e["data"].get("buy", {}).get("order_id") == held["id"]
    ]
    assert trade["data"]["buy"]["liquidity"] == "TAKER"
    assert Decimal(trade["data"]["price"]) < Decimal("42000")
    kinds = [e["type"] for e in events(again) if e["stream"] == f"order-{held['id']}"]
    assert kinds[:3] == ["OrderPlaced", "OrderOpened", "OrderReleased"]
    assert again.verify() == []


def test_a_held_order_released_where_nothing_crosses_rests_in_the_book(
    sandbox_factory: Any,
) -> None:
    sb = still(sandbox_factory)
    sb.deposit("BTC", "1")
    held = placed(sb, **limit("SELL", "45000", "0.1", metadata=HELD))
    assert _ok(_release_order(sb, held))["status"] == "OPEN"
    set_price(sb, "46000")  # now a plain resting order: the ladder takes it
    assert get_order(sb, held)["status"] == "FILLED"


def test_a_held_order_can_be_cancelled(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    sb.deposit("USD", "100000")
    held = placed(sb, **limit("BUY", "42000", "0.1", metadata=HELD))
    assert sb.balance("USD")["trading"] != "0"
    cancelled = sb.delete(f"/v2/profiles/default/orders/{held['id']}")
    assert cancelled.status_code == 200, cancelled.text
    assert get_order(sb, held)["status"] == "CANCELLED"
    assert sb.balance("USD")["available"] == "100000"
    late = _release_order(sb, held)
    assert late.status_code == 409, late.text
    assert late.headers["content-type"] == "application/problem+json"
    assert "CANCELLED" in late.json()["detail"] and "not held" in late.json()["detail"]


def test_a_held_gtt_order_expires_while_held(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    sb.deposit("USD", "100000")
    expiry = str(to_millis(START) + 60_500)
    body = limit("BUY", "42000", "0.1", time_in_force="GTT", metadata=HELD)
    held = placed(sb, **body, expiration_date=expiry)
    sb.advance(65)
    assert get_order(sb, held)["status"] == "CANCELLED"
    assert sb.balance("USD")["available"] == "100000"
    assert _release_order(sb, held).status_code == 409


def test_order_releases_that_cannot_be_are_problems_naming_why(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    sb.deposit("USD", "100000")
    held = placed(sb, **limit("BUY", "42000", "0.1", metadata=HELD))
    headers, _ = sb.tenant()
    foreign = _release_order(sb, held, headers=headers)
    assert foreign.status_code == 404, foreign.text
    assert foreign.headers["content-type"] == "application/problem+json"
    unknown = _release_order(sb, {"id": "00000000-0000-0000-0000-000000000000"})
    assert unknown.status_code == 404, unknown.text
    plain = placed(sb, **limit("BUY", "42000", "0.1"))
    never = _release_order(sb, plain)
    assert never.status_code == 409, never.text
    assert sandbox_triggers.HOLD in never.json()["detail"]
    _ok(_release_order(sb, held))
    again = _release_order(sb, held)
    assert again.status_code == 409, again.text
    assert "not held" in again.json()["detail"]
    market = place(sb, side="BUY", type="MARKET", quote_amount="100", metadata=HELD)
    assert market.status_code == 400, market.text
    assert "metadata" in market.text


def test_releasing_an_order_needs_its_scope(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    sb.deposit("USD", "100000")
    held = placed(sb, **limit("BUY", "42000", "0.1", metadata=HELD))
    reader = sb.login("sandex", "sandex-secret", "exchange:read_order")
    assert _release_order(sb, held, headers=reader).status_code == 403
    # granted with exchange:write_order (IMPLIED_SCOPES), as a tenant made before it was
    trader = sb.login("sandex", "sandex-secret", "exchange:write_sandbox_order")
    assert _ok(_release_order(sb, held, headers=trader))["status"] == "OPEN"


# -- release by hand ---------------------------------------------------------------------


def test_a_held_withdrawal_released_to_fail_returns_its_hold(sandbox: Any) -> None:
    sandbox.deposit("BTC", "1")
    made = _ok(withdraw(sandbox, amount="0.001", memo="sandbox:hold"))
    assert _hold(sandbox) > 0
    failed = _ok(_release(sandbox, made["id"], "fail", {"reason": "compliance"}))
    assert failed["status"] == "FAILED"
    assert failed["status_details"]["sandbox_forced_failure"]["reason"] == "compliance"
    assert _transfer(sandbox, made["id"])["status"] == "FAILED"
    assert sandbox.balance("BTC")["available"] == "1"
    assert _hold(sandbox) == 0
    assert sandbox.verify() == []


def test_a_release_without_a_reason_says_so(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    made = _ok(withdraw(http_sandbox, amount="0.001", memo="sandbox:hold"))
    failed = _ok(_release(http_sandbox, made["id"], "fail"))
    assert "released to fail" in failed["status_details"]["sandbox_forced_failure"]["message"]


def test_releases_that_cannot_be_are_problems_naming_why(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    made = _ok(withdraw(http_sandbox, amount="0.001", memo="sandbox:hold"))
    unknown = _release(http_sandbox, "00000000-0000-0000-0000-000000000000", "complete")
    assert unknown.status_code == 404, unknown.text
    assert unknown.headers["content-type"] == "application/problem+json"
    long = _release(http_sandbox, made["id"], "fail", {"reason": "x" * 101})
    assert long.status_code == 400, long.text
    assert "reason" in long.text
    headers, _ = http_sandbox.tenant()
    foreign = _release(http_sandbox, made["id"], "complete", headers=headers)
    assert foreign.status_code == 404, foreign.text
    _ok(_release(http_sandbox, made["id"], "complete"))
    again = _release(http_sandbox, made["id"], "fail")
    assert again.status_code == 409, again.text
    assert "COMPLETED" in again.json()["detail"]


def test_releasing_needs_its_scope(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    made = _ok(withdraw(http_sandbox, amount="0.001", memo="sandbox:hold"))
    reader = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, "transfer:read_transfer"
    )
    refused = _release(http_sandbox, made["id"], "complete", headers=reader)
    assert refused.status_code == 403, refused.text


# -- pacing -----------------------------------------------------------------------------


def test_every_kind_is_paced_by_its_setting_until_told_otherwise(http_sandbox: Any) -> None:
    view = _ok(http_sandbox.get(PACING))
    assert set(view) == {
        "withdrawal",
        "deposit",
        "fiat_deposit",
        "conversion",
        "fiat_account_review",
    }
    assert {entry["mode"] for entry in view.values()} == {"default"}


def test_withdrawals_paced_after_seconds(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    view = _pace(http_sandbox, withdrawal={"mode": "after_seconds", "value": 30})
    assert view["withdrawal"] == {"mode": "after_seconds", "value": "30"}
    assert _ok(http_sandbox.get(PACING))["withdrawal"] == view["withdrawal"]
    made = _ok(withdraw(http_sandbox, amount="0.001"))
    http_sandbox.advance(29)
    assert _transfer(http_sandbox, made["id"])["status"] == "PENDING"
    http_sandbox.advance(1)
    assert _transfer(http_sandbox, made["id"])["status"] == "COMPLETED"


def test_withdrawals_paced_immediately_and_back_to_default(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    _pace(http_sandbox, withdrawal={"mode": "immediately"})
    assert _ok(withdraw(http_sandbox, amount="0.001"))["status"] == "COMPLETED"
    _pace(http_sandbox, withdrawal={"mode": "default"})
    assert _ok(withdraw(http_sandbox, amount="0.001"))["status"] == "PENDING"


def test_withdrawals_paced_manually_wait_for_a_release(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    _pace(http_sandbox, withdrawal={"mode": "manually"})
    made = _ok(withdraw(http_sandbox, amount="0.001"))
    http_sandbox.advance(7 * 24 * 3600)
    assert _transfer(http_sandbox, made["id"])["status"] == "PENDING"
    assert _ok(_release(http_sandbox, made["id"], "complete"))["status"] == "COMPLETED"


def test_withdrawals_paced_after_polls_settle_at_the_last_poll(http_sandbox: Any) -> None:
    http_sandbox.deposit("BTC", "1")
    _pace(http_sandbox, withdrawal={"mode": "after_polls", "value": 3})
    made = _ok(withdraw(http_sandbox, amount="0.001", memo="sandbox:fail:polled"))
    statuses = [_transfer(http_sandbox, made["id"])["status"] for _ in range(4)]
    assert statuses == ["PENDING", "PENDING", "FAILED", "FAILED"]
    headers, _ = http_sandbox.tenant()  # another customer's reads count nothing
    assert http_sandbox.get(f"{TRANSFERS}/{made['id']}", headers=headers).status_code == 404


def test_conversions_deposits_and_reviews_are_paced_too(http_sandbox: Any) -> None:
    http_sandbox.deposit("USD", "1000")
    _pace(
        http_sandbox,
        conversion={"mode": "after_polls", "value": 2},
        deposit={"mode": "immediately"},
        fiat_deposit={"mode": "after_seconds", "value": 5},
        fiat_account_review={"mode": "manually"},
    )
    body = {"profile_id": "default", "amount": "10", "source_asset": "USD", "target_asset": "USDP"}
    conversion = _ok(http_sandbox.post(CONVERSIONS, body))
    assert _ok(http_sandbox.get(f"{CONVERSIONS}/{conversion['id']}"))["status"] == "CREATED"
    assert _ok(http_sandbox.get(f"{CONVERSIONS}/{conversion['id']}"))["status"] == "SETTLED"
    assert _crypto_deposit(http_sandbox, _address(http_sandbox))["status"] == "COMPLETED"
    _wire(http_sandbox, _instructions(http_sandbox))
    http_sandbox.advance(5)
    assert [t["status"] for t in _wire_transfers(http_sandbox)] == ["COMPLETED"]
    account = _fiat_account(http_sandbox)
    http_sandbox.advance(3600)
    assert _ok(http_sandbox.get(f"{ACCOUNTS}/{account['id']}"))["status"] == "PENDING"
    reviews = "fiat-accounts"
    assert _ok(_release(http_sandbox, account["id"], "fail", kind=reviews))["status"] == "REJECTED"
    other = _fiat_account(http_sandbox)
    assert (
        _ok(_release(http_sandbox, other["id"], "complete", kind=reviews))["status"] == "APPROVED"
    )
    again = _release(http_sandbox, other["id"], "fail", kind=reviews)
    assert again.status_code == 409, again.text


def test_a_conversion_paced_manually_is_completed_not_failed(http_sandbox: Any) -> None:
    http_sandbox.deposit("USD", "1000")
    _pace(http_sandbox, conversion={"mode": "manually"})
    body = {"profile_id": "default", "amount": "10", "source_asset": "USD", "target_asset": "USDG"}
    made = _ok(http_sandbox.post(CONVERSIONS, body))
    http_sandbox.advance(3600)
    assert _ok(http_sandbox.get(f"{CONVERSIONS}/{made['id']}"))["status"] == "CREATED"
    refused = _release(http_sandbox, made["id"], "fail", kind="conversions")
    assert refused.status_code == 404, refused.text  # no such route: conversions never fail
    settled = _ok(_release(http_sandbox, made["id"], "complete", kind="conversions"))
    assert settled["status"] == "SETTLED"
    assert http_sandbox.balance("USDG")["available"] == "10"


def test_a_wire_paced_manually_is_a_pending_transfer_until_released(http_sandbox: Any) -> None:
    _pace(http_sandbox, fiat_deposit={"mode": "manually"})
    _wire(http_sandbox, _instructions(http_sandbox))
    (pending,) = _wire_transfers(http_sandbox)
    assert pending["status"] == "PENDING"
    assert _ok(_release(http_sandbox, pending["id"], "complete"))["status"] == "COMPLETED"


def test_pacing_is_refused_naming_the_field_and_needs_the_admin_scope(http_sandbox: Any) -> None:
    bad = http_sandbox.http.put(
        PACING, json={"withdrawal": {"mode": "soon"}}, headers=http_sandbox.headers
    )
    assert bad.status_code == 400, bad.text
    assert bad.headers["content-type"] == "application/problem+json"
    assert "withdrawal.mode" in bad.text
    counted = http_sandbox.http.put(
        PACING, json={"deposit": {"mode": "after_polls"}}, headers=http_sandbox.headers
    )
    assert counted.status_code == 400, counted.text
    assert "deposit.value" in counted.text
    headers, _ = http_sandbox.tenant()
    tenant = http_sandbox.http.put(
        PACING, json={"withdrawal": {"mode": "manually"}}, headers=headers
    )
    assert tenant.status_code == 403, tenant.text


def test_pacing_is_recorded_and_survives_a_restart(sandbox_factory: Any) -> None:
    sb = sandbox_factory("paced.db")
    sb.deposit("BTC", "1")
    _pace(sb, withdrawal={"mode": "after_polls", "value": 2})
    made = _ok(withdraw(sb, amount="0.001"))
    assert _transfer(sb, made["id"])["status"] == "PENDING"
    sb.close()
    again = sandbox_factory("paced.db")
    assert _ok(again.get(PACING))["withdrawal"] == {"mode": "after_polls", "value": "2"}
    assert _transfer(again, made["id"])["status"] == "COMPLETED"
    later = _ok(withdraw(again, amount="0.001"))
    assert _transfer(again, later["id"])["status"] == "PENDING"


# -- identity statuses at a chosen time ------------------------------------------------


def _summary(sb: Any, identity_id: str) -> str:
    return _ok(sb.get(f"{IDENTITIES}/{identity_id}"))["summary_status"]  # type: ignore[no-any-return]


def test_identity_statuses_take_effect_at_the_chosen_time(sandbox_factory: Any) -> None:
    sb = sandbox_factory("identity.db")
    made = person(sb)
    now = _ok(sb.get("/v2/sandbox/clock"))["now"]
    later = (parse_time(now) + timedelta(minutes=10)).isoformat()
    approve = {
        "id_verification_status": "APPROVED",
        "sanctions_verification_status": "APPROVED",
        "effective_at": later,
    }
    assert _ok(set_status(sb, made["id"], **approve)) == {}
    sb.advance(599)
    assert _summary(sb, made["id"]) == "PENDING"
    sb.close()  # the timer is in the log: a restart keeps it
    again = sandbox_factory("identity.db")
    again.advance(1)
    assert _summary(again, made["id"]) == "APPROVED"
    past = {"sanctions_verification_status": "DENIED", "effective_at": now}
    assert _ok(set_status(again, made["id"], **past)) == {}
    assert _summary(again, made["id"]) == "DENIED"  # a time already past: at once


def test_a_scheduled_status_is_checked_when_it_is_asked_for(http_sandbox: Any) -> None:
    made = person(http_sandbox)
    bad_time = set_status(
        http_sandbox, made["id"], id_verification_status="APPROVED", effective_at="tomorrow"
    )
    assert bad_time.status_code == 400, bad_time.text
    assert bad_time.json()["meta"]["field"] == "effective_at"
    later = "2030-01-01T00:00:00Z"
    bad_status = set_status(
        http_sandbox, made["id"], document_verification_status="APPROVED", effective_at=later
    )
    assert bad_status.status_code == 400, bad_status.text
    assert bad_status.json()["meta"]["field"] == "document_verification_status"
