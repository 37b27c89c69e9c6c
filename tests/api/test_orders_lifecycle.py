"""The order lifecycle through HTTP: cancel, GTT expiry, submission latency, stops,
fills by moving prices, await_fill_millis, and listing orders and executions."""

from __future__ import annotations

import threading
import time
from decimal import Decimal
from typing import Any

import pytest

from sandex.engine.kernel.clock import to_millis
from tests.conftest import START
from tests.support.identity_helpers import approved_account
from tests.support.trading_helpers import (
    best,
    events,
    executions,
    get_order,
    limit,
    money,
    place,
    placed,
    set_price,
    still,
)


def of_order(sb: Any, order: dict[str, Any]) -> list[tuple[str, str]]:
    """(event type, engine time) of everything that happened to an order."""
    mine = []
    for e in events(sb):
        d = e["data"]
        ids = {d.get("order_id"), d.get("order", {}).get("id")}
        ids |= {d.get(side, {}).get("order_id") for side in ("buy", "sell") if d.get(side)}
        if order["id"] in ids:
            mine.append((e["type"], e["at"]))
    return mine


# -- cancel ------------------------------------------------------------------------------


def test_cancel_answers_an_empty_object_and_releases_the_hold(sb: Any) -> None:
    order = placed(sb, **limit("BUY", "40000", "1"))
    assert money(sb.balance("USD")) == (Decimal(960000), Decimal(40000))
    r = sb.delete(f"/v2/profiles/default/orders/{order['id']}")
    assert (r.status_code, r.json()) == (200, {})
    assert get_order(sb, order)["status"] == "CANCELLED"
    assert money(sb.balance("USD")) == (Decimal(1000000), Decimal(0))
    assert events(sb, "OrderCancelled")[-1]["data"]["reason"] == "CANCELLED_BY_USER"


def test_an_order_no_longer_open_is_not_cancellable(http_sb: Any) -> None:
    filled = placed(http_sb, side="BUY", type="MARKET", quote_amount="100.00")
    r = http_sb.delete(f"/v2/profiles/default/orders/{filled['id']}")
    assert r.status_code == 403
    assert r.json() == {
        "type": "about:blank",
        "title": "Forbidden",
        "status": 403,
        "detail": "order is not in cancellable state",
    }
    resting = placed(http_sb, **limit("BUY", "40000", "1"))
    assert http_sb.delete(f"/v2/profiles/default/orders/{resting['id']}").status_code == 200
    assert http_sb.delete(f"/v2/profiles/default/orders/{resting['id']}").status_code == 403


def test_cancel_of_an_unknown_or_foreign_order_is_a_404(http_sb: Any) -> None:
    assert http_sb.delete("/v2/profiles/default/orders/nope").status_code == 404
    headers, _ = http_sb.tenant()
    http_sb.deposit("USD", "100000", headers=headers)
    theirs = placed(http_sb, headers=headers, **limit("BUY", "40000", "1"))
    assert http_sb.delete(f"/v2/profiles/default/orders/{theirs['id']}").status_code == 404
    path = f"/v2/profiles/{theirs['profile_id']}/orders/{theirs['id']}"
    assert http_sb.delete(path).status_code == 404
    assert http_sb.get(path).status_code == 404
    assert get_order(http_sb, theirs, headers=headers)["status"] == "OPEN"


def test_cancel_needs_the_write_scope(http_sb: Any) -> None:
    order = placed(http_sb, **limit("BUY", "40000", "1"))
    headers = http_sb.login(http_sb.client_id, http_sb.client_secret, scope="exchange:read_order")
    r = http_sb.delete(f"/v2/profiles/default/orders/{order['id']}", headers=headers)
    assert r.status_code == 403


# -- GTT expiry --------------------------------------------------------------------------


def test_a_gtt_order_still_open_at_its_expiry_is_cancelled_at_that_engine_time(sb: Any) -> None:
    expiry = to_millis(START) + 60_500
    order = placed(
        sb, **limit("BUY", "40000", "1", time_in_force="GTT"), expiration_date=str(expiry)
    )
    sb.advance(60)
    assert get_order(sb, order)["status"] == "OPEN"
    sb.advance(5)
    expired = get_order(sb, order)
    assert expired["status"] == "CANCELLED"
    assert expired["modified_at"] == expired["expiration_date"] == "2024-01-01T00:01:00.500000Z"
    assert money(sb.balance("USD")) == (Decimal(1000000), Decimal(0))
    assert of_order(sb, order)[-1] == ("OrderCancelled", "2024-01-01T00:01:00.500000Z")
    assert events(sb, "OrderCancelled")[-1]["data"]["reason"] == "EXPIRED"


def test_a_gtt_order_closed_before_its_expiry_stays_as_it_was(http_sb: Any) -> None:
    expiry = str(to_millis(START) + 60_000)
    order = placed(
        http_sb, **limit("BUY", "42000", "0.1", time_in_force="GTT"), expiration_date=expiry
    )
    set_price(http_sb, "41000")
    http_sb.advance(120)
    assert get_order(http_sb, order)["status"] == "FILLED"


# -- submission latency and status transitions --------------------------------------------


def test_with_a_submission_latency_the_order_is_pending_then_carried_forward(
    sandbox_factory: Any,
) -> None:
    sb = still(sandbox_factory, order_submission_latency_ms=250)
    sb.deposit("USD", "100000")
    order = placed(sb, **limit("BUY", "40000", "1"))
    assert order["status"] == "PENDING_SUBMISSION"
    assert money(sb.balance("USD")) == (Decimal(60000), Decimal(40000))
    assert get_order(sb, order)["status"] == "PENDING_SUBMISSION"
    sb.advance(1)
    assert get_order(sb, order)["status"] == "OPEN"
    assert of_order(sb, order) == [
        ("OrderPlaced", "2024-01-01T00:00:00.000000Z"),
        ("OrderSubmitted", "2024-01-01T00:00:00.250000Z"),
        ("OrderOpened", "2024-01-01T00:00:00.250000Z"),
    ]
    pending = placed(sb, side="BUY", type="MARKET", quote_amount="100.00")
    assert sb.delete(f"/v2/profiles/default/orders/{pending['id']}").status_code == 200
    sb.advance(1)
    assert get_order(sb, pending)["status"] == "CANCELLED"
    assert money(sb.balance("USD")) == (Decimal(60000), Decimal(40000))


def test_every_status_transition_is_an_event_with_its_engine_time(sb: Any) -> None:
    order = placed(sb, **limit("BUY", "42000", "0.1"))
    sb.advance(30)
    set_price(sb, "41900")
    assert get_order(sb, order)["status"] == "FILLED"
    assert of_order(sb, order) == [
        ("OrderPlaced", "2024-01-01T00:00:00.000000Z"),
        ("OrderOpened", "2024-01-01T00:00:00.000000Z"),
        ("TradeExecuted", "2024-01-01T00:00:30.000000Z"),
        ("OrderFilled", "2024-01-01T00:00:30.000000Z"),
    ]
    placed_event = events(sb, "OrderPlaced")[-1]
    assert placed_event["data"]["order"]["status"] == "SUBMITTED"


# -- fills by moving prices ---------------------------------------------------------------


def test_a_price_move_fills_the_resting_orders_it_crosses_at_their_price(sb: Any) -> None:
    low = placed(sb, **limit("BUY", "42000", "0.5"))
    lower = placed(sb, **limit("BUY", "41000", "0.5"))
    moved = set_price(sb, "41900")
    assert (moved["reference_price"], moved["last_price"]) == ("41900.00000000", "41900.00")
    assert get_order(sb, low)["volume_weighted_average_price"] == "42000.00000000"
    assert get_order(sb, low)["status"] == "FILLED"
    assert get_order(sb, lower)["status"] == "OPEN"
    assert money(sb.balance("USD")) == (Decimal(1000000) - 21000 - 20500, Decimal(20500))
    (trade,) = events(sb, "TradeExecuted")
    assert trade["data"]["buy"]["liquidity"] == "MAKER" and "sell" not in trade["data"]


def test_a_resting_order_larger_than_the_ladder_fills_step_by_step(http_sb: Any) -> None:
    order = placed(http_sb, **limit("BUY", "42000", "8"))
    set_price(http_sb, "41950")
    first = Decimal(get_order(http_sb, order)["amount_filled"])
    assert 0 < first < 8
    http_sb.advance(1)
    second = Decimal(get_order(http_sb, order)["amount_filled"])
    assert first < second
    http_sb.advance(10)
    assert get_order(http_sb, order)["status"] == "FILLED"


@pytest.mark.sandex(settings={"market_volatility": "0.5"})
def test_the_moving_path_fills_a_resting_order_at_its_price(http_sandbox: Any) -> None:
    sb = http_sandbox
    sb.deposit("USD", "100000")
    ask, _ = best(sb, "asks")
    price = ask - Decimal("0.25")
    order = placed(sb, **limit("BUY", format(price, "f"), "0.01"))
    assert order["status"] == "OPEN"
    sb.advance(3600)
    done = get_order(sb, order)
    assert done["status"] == "FILLED"
    assert Decimal(done["volume_weighted_average_price"]) == price
    # filled at a step of the path (whole seconds), not at the end of the clock move
    assert done["modified_at"].endswith(".000000Z")
    assert done["modified_at"] < "2024-01-01T01:00:00.000000Z"


# -- stops ---------------------------------------------------------------------------------


def test_a_stop_market_waits_untriggered_then_sells_when_the_last_price_falls(sb: Any) -> None:
    stop = placed(sb, side="SELL", type="STOP_MARKET", stop_price="42000", base_amount="1")
    assert (stop["status"], stop["is_triggered"]) == ("OPEN", False)
    assert money(sb.balance("BTC")) == (Decimal(9), Decimal(1))
    set_price(sb, "42000.25")
    assert get_order(sb, stop)["is_triggered"] is False
    set_price(sb, "42000")
    done = get_order(sb, stop)
    assert (done["status"], done["is_triggered"], done["amount_filled"]) == (
        "FILLED",
        True,
        "1.00000000",
    )
    assert money(sb.balance("BTC")) == (Decimal(9), Decimal(0))
    kinds = [k for k, _ in of_order(sb, stop)]
    assert kinds[:3] == ["OrderPlaced", "OrderOpened", "OrderTriggered"]


def test_a_triggered_stop_limit_acts_as_a_limit_order(http_sb: Any) -> None:
    stop = placed(
        http_sb, side="SELL", type="STOP_LIMIT", stop_price="42000", price="41950", base_amount="1"
    )
    set_price(http_sb, "41900")  # house bids start at 41879.05: below the limit, so it rests
    resting = get_order(http_sb, stop)
    assert (resting["status"], resting["is_triggered"]) == ("OPEN", True)
    assert resting["amount_filled"] == "0.00000000"
    set_price(http_sb, "42000")
    done = get_order(http_sb, stop)
    assert (done["status"], done["volume_weighted_average_price"]) == ("FILLED", "41950.00000000")


def test_a_trade_below_the_stop_triggers_it(http_sb: Any) -> None:
    stop = placed(http_sb, side="SELL", type="STOP_MARKET", stop_price="42490", base_amount="0.1")
    assert get_order(http_sb, stop)["is_triggered"] is False
    headers, _ = http_sb.tenant()
    http_sb.deposit("BTC", "1", headers=headers)
    placed(http_sb, headers=headers, side="SELL", type="MARKET", base_amount="0.1")  # at 42478.75
    assert get_order(http_sb, stop)["status"] == "FILLED"


def test_a_stop_already_met_triggers_at_once(http_sb: Any) -> None:
    stop = placed(http_sb, side="SELL", type="STOP_MARKET", stop_price="43000", base_amount="0.1")
    assert (stop["status"], stop["is_triggered"]) == ("FILLED", True)


@pytest.mark.sandex(settings={"market_volatility": "0.5"})
def test_the_moving_path_triggers_stops(http_sandbox: Any) -> None:
    sb = http_sandbox
    sb.deposit("BTC", "1")
    last = Decimal(sb.get("/v2/sandbox/markets/BTCUSD/price").json()["last_price"])
    stop = placed(
        sb, side="SELL", type="STOP_MARKET", stop_price=format(last - 1, "f"), base_amount="0.1"
    )
    assert stop["is_triggered"] is False
    sb.advance(3600)
    assert get_order(sb, stop)["is_triggered"] is True


# -- await_fill_millis -----------------------------------------------------------------


def test_await_fill_on_a_manual_clock_waits_in_real_time_until_filled(http_sb: Any) -> None:
    """The rule is a wait whatever the clock: a request that moves the price meanwhile
    fills the order, and the waiting answer says FILLED."""
    started = time.monotonic()
    order = placed(http_sb, **limit("BUY", "40000", "1"), await_fill_millis=300)
    assert order["status"] == "OPEN"
    assert time.monotonic() - started >= 0.3  # nothing filled it: it waited the time
    answer: dict[str, Any] = {}

    def waiting() -> None:
        body = limit("BUY", "42000", "0.1", ref_id="waiting")
        answer.update(placed(http_sb, **body, await_fill_millis=10000))

    thread = threading.Thread(target=waiting)
    thread.start()
    deadline = time.monotonic() + 10
    while not http_sb.get("/v2/orders", params={"ref_ids": "waiting"}).json()["items"]:
        assert time.monotonic() < deadline, "the waiting order was never placed"
        time.sleep(0.01)
    set_price(http_sb, "41500")  # the house's ask falls under the waiting order's price
    thread.join(15)
    assert answer["status"] == "FILLED", answer


@pytest.mark.sandex(clock="wall", settings={"market_volatility": "0"})
def test_await_fill_on_a_wall_clock_waits_until_filled_or_the_time_is_up(
    http_sandbox: Any,
) -> None:
    sb = http_sandbox
    sb.deposit("USD", "100000")
    started = time.monotonic()
    order = placed(sb, **limit("BUY", "40000", "1"), await_fill_millis=300)
    assert order["status"] == "OPEN"
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    filled = placed(sb, side="BUY", type="MARKET", quote_amount="10.00", await_fill_millis=5000)
    assert filled["status"] == "FILLED" and time.monotonic() - started < 2
    answer: dict[str, Any] = {}

    def waiting() -> None:
        answer.update(placed(sb, **limit("BUY", "42000", "0.1"), await_fill_millis=8000))

    thread = threading.Thread(target=waiting)
    started = time.monotonic()
    thread.start()
    time.sleep(0.3)
    set_price(sb, "41500")
    thread.join(10)
    assert answer["status"] == "FILLED"
    assert time.monotonic() - started < 5


# -- listing -------------------------------------------------------------------------


def test_list_orders_filters_and_pages(http_sb: Any) -> None:
    a = placed(http_sb, **limit("BUY", "40000", "0.1", ref_id="a"))
    b = placed(http_sb, **limit("BUY", "2000", "0.1", ref_id="b", market="ETHUSD"))
    http_sb.advance(60)
    c = placed(http_sb, side="BUY", type="MARKET", quote_amount="100.00", ref_id="c")

    def ids(params: dict[str, Any], path: str = "/v2/profiles/default/orders") -> list[str]:
        r = http_sb.get(path, params=params)
        assert r.status_code == 200, r.text
        return [o["id"] for o in r.json()["items"]]

    assert ids({}) == [c["id"], b["id"], a["id"]]
    assert ids({"market": "ETHUSD"}) == [b["id"]]
    assert ids({"status": "FILLED"}) == [c["id"]]
    assert ids({"status": "OPEN"}) == [b["id"], a["id"]]
    assert ids({"ref_ids": ["a", "c"]}) == [c["id"], a["id"]]
    assert ids({"order_time.begin": "2024-01-01T00:00:30Z"}) == [c["id"]]
    assert ids({"order_time.end": "2024-01-01T00:00:00Z"}) == [b["id"], a["id"]]
    first = http_sb.get("/v2/profiles/default/orders", params={"limit": 2}).json()
    assert [o["id"] for o in first["items"]] == [c["id"], b["id"]]
    rest = http_sb.get(
        "/v2/profiles/default/orders", params={"limit": 2, "page_cursor": first["next_page_cursor"]}
    ).json()
    assert [o["id"] for o in rest["items"]] == [a["id"]] and "next_page_cursor" not in rest
    pid = a["profile_id"]
    assert ids({"profile_id": pid}, "/v2/orders") == [c["id"], b["id"], a["id"]]
    assert http_sb.get("/v2/profiles/default/orders", params={"status": "DONE"}).status_code == 400
    headers, _ = http_sb.tenant()
    assert http_sb.get("/v2/orders", headers=headers).json()["items"] == []
    assert http_sb.get(f"/v2/profiles/{pid}/orders", headers=headers).status_code == 404


def test_list_orders_by_account(http_sb: Any) -> None:
    identity, acct = approved_account(http_sb)
    mine = placed(
        http_sb, **limit("BUY", "40000", "0.1", identity_id=identity, identity_account_id=acct)
    )
    placed(http_sb, **limit("BUY", "40000", "0.1"))
    items = http_sb.get("/v2/orders", params={"account_id": acct}).json()["items"]
    assert [o["id"] for o in items] == [mine["id"]]


def test_list_executions_filters_and_pages(http_sb: Any) -> None:
    first = placed(http_sb, **limit("BUY", "42600", "2"))  # two house levels: two executions
    http_sb.advance(60)
    second = placed(http_sb, side="BUY", type="MARKET", quote_amount="100.00")
    everything = executions(http_sb)
    assert [e["order_id"] for e in everything] == [second["id"], first["id"], first["id"]]
    ids = [e["execution_id"] for e in everything]  # newest first; opaque, not a sequence
    assert [e["execution_id"] for e in executions(http_sb, order_id=first["id"])] == ids[1:]
    assert [e["execution_id"] for e in executions(http_sb, since_execution_id=ids[2])] == ids[:2]
    assert len(executions(http_sb, **{"range.begin": "2024-01-01T00:00:30Z"})) == 1
    assert len(executions(http_sb, **{"range.end": "2024-01-01T00:00:00Z"})) == 2
    page = http_sb.get("/v2/executions", params={"limit": 2}).json()
    assert len(page["items"]) == 2 and "next_page_cursor" in page
    per_profile = http_sb.get("/v2/profiles/default/executions", params={"order_id": second["id"]})
    assert [e["order_id"] for e in per_profile.json()["items"]] == [second["id"]]
    assert http_sb.get("/v2/profiles/default/executions", params={"limit": 501}).status_code == 400
    assert http_sb.get("/v2/executions", params={"since_execution_id": "x"}).status_code == 400


def test_profile_executions_default_to_20_items(http_sb: Any) -> None:
    for _ in range(21):
        placed(http_sb, side="BUY", type="MARKET", quote_amount="10.00")
    page = http_sb.get("/v2/profiles/default/executions").json()
    assert len(page["items"]) == 20 and "next_page_cursor" in page
    assert len(executions(http_sb)) == 21


def test_reading_orders_needs_the_read_scope(http_sb: Any) -> None:
    order = placed(http_sb, **limit("BUY", "40000", "0.1"))
    headers = http_sb.login(http_sb.client_id, http_sb.client_secret, scope="exchange:write_order")
    assert http_sb.get("/v2/orders", headers=headers).status_code == 403
    assert http_sb.get("/v2/executions", headers=headers).status_code == 403
    path = f"/v2/profiles/default/orders/{order['id']}"
    assert http_sb.get(path, headers=headers).status_code == 403
    assert place(http_sb, headers=headers, **limit("BUY", "40000", "0.1")).status_code == 200
