"""Matching through HTTP: time in force, post-only, priority, self-match, fees, VWAP.

The market is still: BTCUSD's reference is 42500, so the house's best ask is 42521.25
and its best bid 42478.75; orders priced between them rest."""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal
from typing import Any

import pytest

from tests.support.identity_helpers import approved_account
from tests.support.reference import assert_matches, response_schema
from tests.support.trading_helpers import (
    STILL,
    best,
    book,
    events,
    executions,
    get_order,
    limit,
    money,
    place,
    placed,
    still,
)

HOUSE_ASK = Decimal("42521.25")
HOUSE_BID = Decimal("42478.75")


def tenant(sb: Any, btc: str = "5", usd: str = "500000") -> dict[str, str]:
    headers, _ = sb.tenant()
    sb.deposit("BTC", btc, headers=headers)
    sb.deposit("USD", usd, headers=headers)
    return headers  # type: ignore[no-any-return]


def test_a_gtc_limit_that_does_not_cross_rests_open_in_the_book(http_sb: Any) -> None:
    order = placed(http_sb, **limit("BUY", "42000", "0.3"))
    assert order["status"] == "OPEN" and order["amount_filled"] == "0.00000000"
    assert {"price": "42000.00", "amount": "0.30000000"} in book(http_sb)["bids"]
    assert executions(http_sb) == []


def test_orders_fill_in_price_time_priority_across_profiles_at_the_resting_price(
    http_sb: Any,
) -> None:
    a, b, c = tenant(http_sb), tenant(http_sb), tenant(http_sb)
    first = placed(http_sb, headers=a, **limit("SELL", "42510", "0.1"))
    second = placed(http_sb, headers=b, **limit("SELL", "42510", "0.2"))
    better = placed(http_sb, headers=c, **limit("SELL", "42505", "0.1"))
    taker = placed(http_sb, **limit("BUY", "42530", "0.35"))
    assert taker["status"] == "FILLED"
    fills = [(e["price"], e["amount"]) for e in reversed(executions(http_sb, order_id=taker["id"]))]
    assert fills == [
        ("42505.00", "0.10000000"),
        ("42510.00", "0.10000000"),
        ("42510.00", "0.15000000"),
    ]
    assert get_order(http_sb, better, headers=c)["status"] == "FILLED"
    assert get_order(http_sb, first, headers=a)["status"] == "FILLED"
    partly = get_order(http_sb, second, headers=b)
    assert (partly["status"], partly["amount_filled"]) == ("OPEN", "0.15000000")
    # the taker paid the resting prices: 4250.50 + 4251.00 + 6376.50
    assert money(http_sb.balance("USD")) == (Decimal(1000000) - Decimal("14878.00"), Decimal(0))
    assert taker["volume_weighted_average_price"] == "42508.57142857"
    # each maker sees its own execution, on its side
    mine = executions(http_sb, headers=b)
    assert [(e["side"], e["amount"]) for e in mine] == [("SELL", "0.15000000")]


def test_a_buy_filled_below_its_limit_gets_the_difference_of_its_hold_back(http_sb: Any) -> None:
    order = placed(http_sb, **limit("BUY", "42600", "0.1"))
    assert order["status"] == "FILLED"
    assert order["volume_weighted_average_price"] == "42521.25000000"
    assert money(http_sb.balance("USD")) == (Decimal(1000000) - Decimal("4252.125"), Decimal(0))
    assert money(http_sb.balance("BTC")) == (Decimal("10.1"), Decimal(0))


def test_ioc_fills_what_it_can_and_cancels_the_rest(http_sb: Any) -> None:
    _, level = best(http_sb, "asks")
    order = placed(http_sb, **limit("BUY", "42530", "5", time_in_force="IOC"))
    assert order["status"] == "CANCELLED"
    assert Decimal(order["amount_filled"]) == level
    assert money(http_sb.balance("USD"))[1] == 0
    assert money(http_sb.balance("BTC"))[0] == 10 + level


def test_fok_that_cannot_fill_entirely_fills_nothing(sb: Any) -> None:
    order = placed(sb, **limit("BUY", "42530", "5", time_in_force="FOK"))
    assert (order["status"], order["amount_filled"]) == ("CANCELLED", "0.00000000")
    assert executions(sb) == []
    assert events(sb, "TradeExecuted") == []
    assert money(sb.balance("USD")) == (Decimal(1000000), Decimal(0))


def test_fok_that_can_fill_fills_entirely(http_sb: Any) -> None:
    order = placed(http_sb, **limit("BUY", "42600", "2", time_in_force="FOK"))
    assert (order["status"], order["amount_filled"]) == ("FILLED", "2.00000000")
    assert len(executions(http_sb, order_id=order["id"])) == 2  # two house levels


def test_a_gtc_limit_takes_what_crosses_and_rests_the_rest(http_sb: Any) -> None:
    _, level = best(http_sb, "asks")
    order = placed(http_sb, **limit("BUY", "42530", "2"))
    assert order["status"] == "OPEN"
    assert Decimal(order["amount_filled"]) == level
    assert {"price": "42530.00", "amount": format(2 - level, "f")} in book(http_sb)["bids"]
    assert money(http_sb.balance("USD"))[1] == Decimal("42530") * (2 - level)


def test_a_market_buy_spends_at_most_its_quote_amount(http_sb: Any) -> None:
    order = placed(http_sb, side="BUY", type="MARKET", quote_amount="1000.00")
    bought = (Decimal(1000) / HOUSE_ASK).quantize(Decimal("0.00000001"), rounding=ROUND_DOWN)
    assert (order["status"], Decimal(order["amount_filled"])) == ("FILLED", bought)
    assert order["time_in_force"] == "IOC"
    assert money(http_sb.balance("USD")) == (Decimal(1000000) - bought * HOUSE_ASK, Decimal(0))


def test_a_market_sell_sells_its_base_amount_at_the_best_bids(http_sb: Any) -> None:
    order = placed(http_sb, side="SELL", type="MARKET", base_amount="0.5")
    assert (order["status"], order["amount_filled"]) == ("FILLED", "0.50000000")
    assert order["volume_weighted_average_price"] == "42478.75000000"
    assert money(http_sb.balance("USD"))[0] == Decimal(1000000) + Decimal("21239.375")


@pytest.mark.sandex(settings={**STILL, "market_levels": 1})
def test_a_market_order_is_ioc_when_liquidity_runs_out(http_sandbox: Any) -> None:
    sb = http_sandbox
    sb.deposit("BTC", "10")
    _, level = best(sb, "bids")
    order = placed(sb, side="SELL", type="MARKET", base_amount="5")
    assert order["status"] == "CANCELLED"
    assert Decimal(order["amount_filled"]) == level
    assert money(sb.balance("BTC")) == (10 - level, Decimal(0))


def test_post_only_that_would_take_is_rejected_recorded_and_released(sb: Any) -> None:
    order = placed(sb, side="BUY", type="POST_ONLY_LIMIT", price="42521.25", base_amount="1")
    assert order["status"] == "REJECTED"
    assert get_order(sb, order)["status"] == "REJECTED"
    assert money(sb.balance("USD")) == (Decimal(1000000), Decimal(0))
    assert executions(sb) == []
    kinds = [e["type"] for e in events(sb) if e["stream"] == f"order-{order['id']}"]
    assert kinds == ["OrderPlaced", "OrderRejected"]
    maker = placed(sb, side="BUY", type="POST_ONLY_LIMIT", price="42521", base_amount="1")
    assert maker["status"] == "OPEN"


def test_vwap_is_exact_and_rounded_half_up_to_8_decimals(http_sb: Any) -> None:
    a, b = tenant(http_sb), tenant(http_sb)
    http_sb.deposit("MATIC", "1", headers=a)
    http_sb.deposit("MATIC", "1", headers=b)
    placed(http_sb, headers=a, **limit("SELL", "0.9000", "0.00019999", market="MATICUSD"))
    placed(http_sb, headers=b, **limit("SELL", "0.9001", "0.00000001", market="MATICUSD"))
    order = placed(http_sb, **limit("BUY", "0.9001", "0.0002", market="MATICUSD"))
    # exactly 0.900000005: half-up gives ...01 where half-even would give ...00
    assert (order["amount_filled"], order["volume_weighted_average_price"]) == (
        "0.00020000",
        "0.90000001",
    )


def test_a_self_match_cancels_the_resting_order_and_matching_goes_on(sb: Any) -> None:
    resting = placed(sb, **limit("SELL", "42510", "0.1"))
    other_profile = sb.post("/v2/profiles", {"nickname": "desk"}).json()["id"]
    sb.deposit("BTC", "1", profile=other_profile)
    resting_too = placed(sb, profile=other_profile, **limit("SELL", "42515", "0.1"))
    taker = placed(sb, **limit("BUY", "42530", "0.1"))
    assert taker["status"] == "FILLED"
    assert taker["volume_weighted_average_price"] == "42521.25000000"  # the house, not itself
    for order in (resting, resting_too):
        assert get_order(sb, order)["status"] == "CANCELLED"
    assert money(sb.balance("BTC")) == (Decimal("10.1"), Decimal(0))
    assert money(sb.balance("BTC", profile=other_profile)) == (Decimal(1), Decimal(0))
    reasons = [e["data"].get("reason") for e in events(sb, "OrderCancelled")]
    assert reasons == ["SELF_MATCH_PREVENTED", "SELF_MATCH_PREVENTED"]


def test_different_self_match_prevention_ids_of_one_customer_may_trade(
    sandbox_factory: Any,
) -> None:
    sb = still(sandbox_factory, bootstrap_self_match_prevention=True)
    sb.deposit("USD", "1000000")
    sb.deposit("BTC", "10")
    seller = placed(sb, **limit("SELL", "42510", "0.1", self_match_prevention_id="desk-a"))
    buyer = placed(sb, **limit("BUY", "42530", "0.1", self_match_prevention_id="desk-b"))
    assert buyer["volume_weighted_average_price"] == "42510.00000000"
    assert get_order(sb, seller)["status"] == "FILLED"
    same = placed(sb, **limit("SELL", "42510", "0.1", self_match_prevention_id="desk-a"))
    placed(sb, **limit("BUY", "42530", "0.1", self_match_prevention_id="desk-a"))
    assert get_order(sb, same)["status"] == "CANCELLED"


def test_fees_are_charged_as_commission_in_the_quote_asset(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory, maker_fee_rate="0.001", taker_fee_rate="0.002")
    sb.deposit("USD", "100000")
    maker_headers = tenant(sb)
    maker = placed(sb, headers=maker_headers, **limit("SELL", "42510", "1"))
    taker = placed(sb, **limit("BUY", "42510", "1"))
    assert taker["status"] == "FILLED"
    (bought,) = executions(sb, order_id=taker["id"])
    (sold,) = executions(sb, headers=maker_headers, order_id=maker["id"])
    assert (bought["commission"], bought["commission_asset"], bought["rebate"]) == (
        "85.02",
        "USD",
        "0",
    )
    assert bought["gross_trade_amount"] == "42510"
    assert sold["commission"] == "42.51"
    assert money(sb.balance("USD")) == (Decimal(100000) - Decimal("42595.02"), Decimal(0))
    assert money(sb.balance("USD", headers=maker_headers)) == (
        Decimal(500000) + Decimal("42467.49"),
        Decimal(0),
    )
    assert sb.engine.state.ledger.balance("fees", "USD") == Decimal("127.53")


@pytest.mark.sandex(settings={**STILL, "maker_fee_rate": "0.001", "taker_fee_rate": "0.002"})
def test_a_buy_hold_covers_the_largest_fee(http_sandbox: Any) -> None:
    sb = http_sandbox
    sb.deposit("USD", "42584")
    r = place(sb, **limit("BUY", "42500", "1"))
    assert r.status_code == 403 and r.json()["meta"]["needed"] == "42585"


def test_fills_settle_into_the_recipient_profile(http_sb: Any) -> None:
    savings = http_sb.post("/v2/profiles", {"nickname": "savings"}).json()["id"]
    buy = placed(
        http_sb, side="BUY", type="MARKET", quote_amount="1000.00", recipient_profile_id=savings
    )
    assert money(http_sb.balance("BTC", profile=savings))[0] == Decimal(buy["amount_filled"])
    assert money(http_sb.balance("BTC"))[0] == 10
    placed(http_sb, side="SELL", type="MARKET", base_amount="0.1", recipient_profile_id=savings)
    assert money(http_sb.balance("USD", profile=savings))[0] == Decimal("4247.875")
    assert money(http_sb.balance("BTC")) == (Decimal("9.9"), Decimal(0))


def test_executions_and_orders_have_the_reference_shapes(http_sb: Any) -> None:
    identity, acct = approved_account(http_sb)
    order = placed(
        http_sb, **limit("BUY", "42600", "1.5", identity_id=identity, identity_account_id=acct)
    )
    page = http_sb.get("/v2/executions").json()
    assert_matches(page, response_schema("/executions", "get"))
    assert {e["account_id"] for e in page["items"]} == {acct}
    assert_matches(
        http_sb.get("/v2/profiles/default/executions").json(),
        response_schema("/profiles/{profile_id}/executions", "get"),
    )
    assert_matches(
        get_order(http_sb, order), response_schema("/profiles/{profile_id}/orders/{id}", "get")
    )
    assert_matches(http_sb.get("/v2/orders").json(), response_schema("/orders", "get"))


def test_a_resting_buy_never_pays_more_fee_than_its_hold_covers(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory, "fees.db", maker_fee_rate="0.001", taker_fee_rate="0.001")
    sb.deposit("USD", "42042")
    order = placed(sb, **limit("BUY", "42000", "1"))
    assert money(sb.balance("USD")) == (Decimal(0), Decimal(42042))
    sb.close()
    dearer = still(sandbox_factory, "fees.db", maker_fee_rate="0.01", taker_fee_rate="0.01")
    r = dearer.post("/v2/sandbox/markets/BTCUSD/price", {"price": "41000"})
    assert r.status_code == 200
    (fill,) = executions(dearer, order_id=order["id"])
    assert fill["commission"] == "42"  # 0.1%, as held, not the 1% of the new schedule
    assert money(dearer.balance("USD")) == (Decimal(0), Decimal(0))


@pytest.mark.parametrize(
    ("gap", "price", "vwap"),
    # Walking to 40000 the house meets the resting buy at its own price; jumping there
    # (a gap) it arrives with its ladder at 40000: ask 40000 x 1.0005 = 40020.00.
    [(False, "42000.00", "42000.00000000"), (True, "40020.00", "40020.00000000")],
)
def test_a_price_set_walks_to_a_resting_order_or_gaps_past_it(
    sb: Any, gap: bool, price: str, vwap: str
) -> None:
    order = placed(sb, **limit("BUY", "42000", "0.1"))
    body = {"price": "40000", "gap": True} if gap else {"price": "40000"}
    r = sb.post("/v2/sandbox/markets/BTCUSD/price", body)
    assert r.status_code == 200, r.text
    filled = get_order(sb, order)
    assert (filled["status"], filled["volume_weighted_average_price"]) == ("FILLED", vwap)
    assert [e["price"] for e in executions(sb)] == [price]
    # the hold at 42000 is released down to what the fill cost
    assert money(sb.balance("USD")) == (Decimal(1000000) - Decimal(price) / 10, Decimal(0))
    set_event = events(sb, "MarketPriceSet")[-1]
    assert set_event["data"].get("gap", False) is gap


def test_a_price_sets_gap_must_be_a_boolean(http_sb: Any) -> None:
    r = http_sb.post("/v2/sandbox/markets/BTCUSD/price", {"price": "40000", "gap": "yes"})
    assert r.status_code == 400
    assert r.json()["meta"]["field"] == "gap"
