"""Snapshots, restores and resets of the sandbox: recorded in the log, replayed alike."""

from __future__ import annotations

import threading
from typing import Any

from sandex.engine.tools.time_travel import log_hash
from tests.support.trading_helpers import get_order, limit, placed, set_price, still
from tests.support.transfer_helpers import problem, withdraw


def _snapshot(sb: Any, name: str) -> dict[str, Any]:
    r = sb.post("/v2/sandbox/snapshots", {"name": name})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _restore(sb: Any, name: str) -> dict[str, Any]:
    r = sb.post(f"/v2/sandbox/snapshots/{name}/restore")
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _transfers(sb: Any, **kw: Any) -> list[dict[str, Any]]:
    r = sb.get("/v2/transfer/transfers", **kw)
    assert r.status_code == 200, r.text
    return r.json()["items"]  # type: ignore[no-any-return]


def _reopen(sb: Any) -> Any:
    """The same database opened again: its state comes from replaying the log."""
    sb.close()
    return type(sb)(sb.db, sb.engine.settings)


def test_a_restore_brings_money_back_and_keeps_who_may_call(sandbox: Any) -> None:
    sandbox.deposit("BTC", "1")
    taken = _snapshot(sandbox, "funded")
    assert taken["name"] == "funded" and taken["position"] > 0
    withdraw(sandbox, amount="0.001")
    sandbox.advance(30)
    headers, made = sandbox.tenant()  # a customer that did not exist at the snapshot
    sandbox.post(
        "/v2/sandbox/profiles/default/deposit", {"asset": "ETH", "amount": "2"}, headers=headers
    )
    feed_before = sandbox.get("/v2/events").json()["events"]
    clock_before = sandbox.get("/v2/sandbox/clock").json()["now"]

    restored = _restore(sandbox, "funded")
    assert restored["position"] == taken["position"] and restored["restored_at"] == clock_before
    assert sandbox.balance("BTC")["available"] == "1"
    assert [t["type"] for t in _transfers(sandbox)] == ["WIRE_DEPOSIT"]
    # the tenant still logs in and owns its profile; its money is back to none
    assert sandbox.balance("ETH", headers=headers)["available"] == "0"
    assert _transfers(sandbox, headers=headers) == []
    assert sandbox.login(made["client_id"], made["client_secret"])
    # announced events stay announced; time does not go back
    assert sandbox.get("/v2/events").json()["events"] == feed_before
    assert sandbox.get("/v2/sandbox/clock").json()["now"] == clock_before
    assert sandbox.verify() == []

    # a snapshot can be restored again, and the replayed log lands on the same state
    sandbox.deposit("BTC", "5")
    _restore(sandbox, "funded")
    assert sandbox.balance("BTC")["available"] == "1"
    again = _reopen(sandbox)
    try:
        assert again.balance("BTC")["available"] == "1"
        assert [t["type"] for t in _transfers(again)] == ["WIRE_DEPOSIT"]
        listed = again.get("/v2/sandbox/snapshots").json()["items"]
        assert [s["name"] for s in listed] == ["funded"]
    finally:
        again.close()


def test_a_pending_withdrawal_at_the_snapshot_completes_after_the_restore(
    http_sandbox: Any,
) -> None:
    http_sandbox.deposit("BTC", "1")
    pending = withdraw(http_sandbox, amount="0.001").json()
    _snapshot(http_sandbox, "in-flight")
    http_sandbox.advance(30)
    _restore(http_sandbox, "in-flight")
    assert http_sandbox.get(f"/v2/transfer/transfers/{pending['id']}").json()["status"] == "PENDING"
    http_sandbox.advance(1)  # its confirmation is overdue: it fires at the next move
    assert (
        http_sandbox.get(f"/v2/transfer/transfers/{pending['id']}").json()["status"] == "COMPLETED"
    )
    assert http_sandbox.balance("BTC")["available"] == "0.99898"


def test_orders_and_books_come_back_as_they_were(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory)
    sb.deposit("USD", "100000")
    set_price(sb, "40000")
    resting = placed(sb, **limit("BUY", "39000", "1"))
    _snapshot(sb, "one-order")
    later = placed(sb, **limit("BUY", "38000", "1"))
    sb.delete(f"/v2/profiles/default/orders/{resting['id']}")
    _restore(sb, "one-order")
    assert get_order(sb, resting)["status"] == "OPEN"
    assert sb.get(f"/v2/profiles/default/orders/{later['id']}").status_code == 404
    assert sb.balance("USD") == {"asset": "USD", "available": "61000", "trading": "39000"}
    # the book holds the restored order: the market moving through its price fills it
    set_price(sb, "38900")
    assert get_order(sb, resting)["status"] == "FILLED"
    executions = sb.get("/v2/executions").json()["items"]
    assert len({e["execution_id"] for e in executions}) == len(executions)
    assert sb.verify() == []


def test_a_reset_empties_every_balance_and_keeps_customers_and_clock(sandbox: Any) -> None:
    sandbox.deposit("BTC", "1")
    headers, _ = sandbox.tenant()
    sandbox.post(
        "/v2/sandbox/profiles/default/deposit", {"asset": "ETH", "amount": "2"}, headers=headers
    )
    sandbox.advance(5)
    now = sandbox.get("/v2/sandbox/clock").json()["now"]
    r = sandbox.post("/v2/sandbox/reset")
    assert r.status_code == 200 and r.json()["reset_at"] == now
    assert sandbox.balance("BTC")["available"] == "0"
    assert sandbox.balance("ETH", headers=headers)["available"] == "0"
    assert _transfers(sandbox) == [] and _transfers(sandbox, headers=headers) == []
    sandbox.deposit("BTC", "0.5")
    assert sandbox.balance("BTC")["available"] == "0.5"
    assert sandbox.verify() == []


def test_refusals(http_sandbox: Any) -> None:
    problem(http_sandbox.post("/v2/sandbox/snapshots/nope/restore"), 404)
    bad = http_sandbox.post("/v2/sandbox/snapshots", {"name": "../etc"})
    assert problem(bad, 400)["meta"]["field"] == "name"
    assert problem(http_sandbox.post("/v2/sandbox/snapshots", {}), 400)["meta"]["field"] == "name"
    headers, _ = http_sandbox.tenant()
    for path, body in (
        ("/v2/sandbox/snapshots", {"name": "x"}),
        ("/v2/sandbox/snapshots/x/restore", None),
        ("/v2/sandbox/reset", None),
    ):
        refused = problem(http_sandbox.post(path, body, headers=headers), 403)
        assert "sandbox:write_customer" in refused["detail"]


def test_restores_are_safe_while_requests_are_in_flight(sandbox: Any) -> None:
    """Deposits race restores; each is decided wholly before or after one, so the state
    the writer ends with is the state a replay of the log gives."""
    sandbox.deposit("BTC", "1")
    _snapshot(sandbox, "base")
    errors: list[str] = []

    def deposit_many() -> None:
        for _ in range(40):
            r = sandbox.post(
                "/v2/sandbox/profiles/default/deposit", {"asset": "BTC", "amount": "0.01"}
            )
            if r.status_code != 200:
                errors.append(r.text)

    workers = [threading.Thread(target=deposit_many) for _ in range(3)]
    for w in workers:
        w.start()
    for _ in range(10):
        _restore(sandbox, "base")
    for w in workers:
        w.join()
    assert errors == []
    live = sandbox.balance("BTC")
    hashed = log_hash(sandbox.db)
    again = _reopen(sandbox)
    try:
        assert again.balance("BTC") == live
        assert log_hash(again.db) == hashed
    finally:
        again.close()
