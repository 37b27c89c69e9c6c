"""Create order: every rule of the interface's operation 4.1, through HTTP."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from sandex.engine.kernel.clock import to_millis
from tests.conftest import START
from tests.support.identity_helpers import approved_account
from tests.support.reference import assert_matches, response_schema
from tests.support.trading_helpers import (
    PROBLEMS,
    STILL,
    get_order,
    limit,
    money,
    place,
    placed,
    still,
)

ORDER_SCHEMA = ("/profiles/{profile_id}/orders", "post")


@pytest.fixture
def sb(request: pytest.FixtureRequest) -> Any:
    """A still BTCUSD at 42500 (house asks from 42521.25, bids from 42478.75), funded: a
    plugin world (`http_sandbox`)."""
    request.node.add_marker(pytest.mark.sandex(settings=STILL))
    sandbox = request.getfixturevalue("http_sandbox")
    sandbox.deposit("USD", "1000000")
    sandbox.deposit("BTC", "10")
    return sandbox


def millis(seconds_after_start: float) -> str:
    return str(to_millis(START) + int(seconds_after_start * 1000))


# -- the five types and their fields ----------------------------------------------------

VALID = {
    "LIMIT": limit("BUY", "40000", "0.1"),
    "POST_ONLY_LIMIT": {
        "side": "SELL",
        "type": "POST_ONLY_LIMIT",
        "price": "45000",
        "base_amount": "0.1",
    },
    "MARKET BUY": {"side": "BUY", "type": "MARKET", "quote_amount": "100.00"},
    "MARKET SELL": {"side": "SELL", "type": "MARKET", "base_amount": "0.01"},
    "STOP_MARKET": {
        "side": "SELL",
        "type": "STOP_MARKET",
        "stop_price": "40000",
        "base_amount": "0.1",
    },
    "STOP_LIMIT": {
        "side": "SELL",
        "type": "STOP_LIMIT",
        "stop_price": "40000",
        "price": "39900",
        "base_amount": "0.1",
    },
}


@pytest.mark.parametrize("kind", list(VALID))
def test_each_type_is_accepted_with_its_fields_in_the_reference_shape(sb: Any, kind: str) -> None:
    order = placed(sb, **VALID[kind])
    assert_matches(order, response_schema(*ORDER_SCHEMA))
    body = VALID[kind]
    assert order["type"] == body["type"] and order["side"] == body["side"]
    assert order["market"] == "BTCUSD"
    if "price" in body:
        assert Decimal(order["price"]) == Decimal(body["price"])
    if "stop_price" in body:
        assert Decimal(order["stop_price"]) == Decimal(body["stop_price"])
    else:
        assert "stop_price" not in order
    if "quote_amount" in body:
        assert order["quote_amount"] == "100.00"
    else:
        assert order["quote_amount"] == ""
    assert order["is_triggered"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"side": "BUY", "type": "LIMIT", "base_amount": "1"}, "price"),
        ({"side": "BUY", "type": "LIMIT", "price": "40000"}, "base_amount"),
        ({"side": "SELL", "type": "POST_ONLY_LIMIT", "base_amount": "1"}, "price"),
        ({"side": "BUY", "type": "MARKET", "base_amount": "1"}, "quote_amount"),
        ({"side": "SELL", "type": "MARKET", "quote_amount": "100"}, "base_amount"),
        ({"side": "SELL", "type": "STOP_MARKET", "base_amount": "1"}, "stop_price"),
        ({"side": "SELL", "type": "STOP_MARKET", "stop_price": "40000"}, "base_amount"),
        (
            {"side": "SELL", "type": "STOP_LIMIT", "stop_price": "40000", "base_amount": "1"},
            "price",
        ),
    ],
)
def test_a_required_field_missing_is_a_400_naming_it(
    sb: Any, body: dict[str, Any], field: str
) -> None:
    r = place(sb, **body)
    assert r.status_code == 400
    problem = r.json()
    assert problem["type"] == "about:blank"
    assert problem["detail"].startswith(f"{field} is required for")
    assert r.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    ("kind", "field", "value"),
    [
        ("LIMIT", "quote_amount", "100"),
        ("LIMIT", "stop_price", "40000"),
        ("POST_ONLY_LIMIT", "stop_price", "40000"),
        ("MARKET BUY", "base_amount", "1"),
        ("MARKET BUY", "price", "40000"),
        ("MARKET SELL", "quote_amount", "100"),
        ("MARKET SELL", "price", "40000"),
        ("STOP_MARKET", "price", "39000"),
        ("STOP_MARKET", "quote_amount", "100"),
        ("STOP_LIMIT", "quote_amount", "100"),
    ],
)
def test_a_field_that_does_not_belong_to_the_type_is_a_400(
    sb: Any, kind: str, field: str, value: str
) -> None:
    r = place(sb, **{**VALID[kind], field: value})
    assert r.status_code == 400
    assert r.json()["detail"].startswith(f"{field} invalid: not allowed for")


@pytest.mark.parametrize("kind", ["STOP_MARKET", "STOP_LIMIT"])
def test_a_buy_stop_is_a_400_that_says_stops_are_sell_stop_losses(sb: Any, kind: str) -> None:
    r = place(sb, **{**VALID[kind], "side": "BUY"})
    assert r.status_code == 400
    assert "sell stop-losses" in r.json()["detail"]


def test_unknown_enums_and_json_numbers_are_400(sb: Any) -> None:
    assert place(sb, **{**VALID["LIMIT"], "market": "DOGEUSD"}).status_code == 400
    assert place(sb, **{**VALID["LIMIT"], "type": "ICEBERG"}).status_code == 400
    assert place(sb, **{**VALID["LIMIT"], "base_amount": 0.1}).status_code == 400
    r = place(sb, **{**VALID["LIMIT"], "base_amount": "-10"})
    assert r.status_code == 400 and r.json()["detail"].startswith("base_amount invalid")


# -- time in force (table 2.3) -----------------------------------------------------------

DEFAULTS = {
    "LIMIT": "GTC",
    "POST_ONLY_LIMIT": "GTC",
    "MARKET BUY": "IOC",
    "MARKET SELL": "IOC",
    "STOP_MARKET": "GTC",
    "STOP_LIMIT": "GTC",
}
NOT_ALLOWED = [
    ("MARKET BUY", "GTC"),
    ("MARKET BUY", "GTT"),
    ("MARKET BUY", "FOK"),
    ("MARKET SELL", "FOK"),
    ("STOP_MARKET", "IOC"),
    ("STOP_MARKET", "FOK"),
    ("STOP_LIMIT", "IOC"),
    ("STOP_LIMIT", "FOK"),
]
VALID_TIF = [
    ("MARKET BUY", "IOC"),
    ("LIMIT", "IOC"),
    ("LIMIT", "GTC"),
    ("LIMIT", "FOK"),
    ("POST_ONLY_LIMIT", "IOC"),
    ("POST_ONLY_LIMIT", "GTC"),
    ("POST_ONLY_LIMIT", "FOK"),
    ("STOP_MARKET", "GTC"),
    ("STOP_LIMIT", "GTC"),
]


@pytest.mark.parametrize("kind", list(DEFAULTS))
def test_time_in_force_defaults_per_type(sb: Any, kind: str) -> None:
    assert placed(sb, **VALID[kind])["time_in_force"] == DEFAULTS[kind]


@pytest.mark.parametrize(("kind", "tif"), VALID_TIF)
def test_valid_combinations_are_accepted(sb: Any, kind: str, tif: str) -> None:
    assert placed(sb, **VALID[kind], time_in_force=tif)["time_in_force"] == tif


@pytest.mark.parametrize(("kind", "tif"), NOT_ALLOWED)
def test_a_combination_not_allowed_is_a_400_naming_it(sb: Any, kind: str, tif: str) -> None:
    r = place(sb, **VALID[kind], time_in_force=tif)
    assert r.status_code == 400
    order_type = VALID[kind]["type"]
    assert r.json()["detail"] == (
        f"time_in_force invalid: {tif} is not allowed for {order_type} orders"
    )


@pytest.mark.parametrize("kind", ["LIMIT", "POST_ONLY_LIMIT", "STOP_MARKET", "STOP_LIMIT"])
def test_gtt_is_valid_for_its_types_and_reports_the_expiry(sb: Any, kind: str) -> None:
    order = placed(sb, **VALID[kind], time_in_force="GTT", expiration_date=millis(60))
    assert order["time_in_force"] == "GTT"
    assert order["expiration_date"] == "2024-01-01T00:01:00.000000Z"


def test_gtt_needs_an_expiration_date_of_13_digits(sb: Any) -> None:
    r = place(sb, **VALID["LIMIT"], time_in_force="GTT")
    assert r.status_code == 400 and "expiration_date is required" in r.json()["detail"]
    r = place(sb, **VALID["LIMIT"], time_in_force="GTT", expiration_date="1704067260")
    assert r.status_code == 400 and "13 digits" in r.json()["detail"]
    as_number = place(sb, **VALID["LIMIT"], time_in_force="GTT", expiration_date=int(millis(60)))
    assert as_number.status_code == 200


@pytest.mark.parametrize("seconds", [-5, 0, 5, 10])
def test_an_expiry_not_more_than_10_seconds_away_is_rejected(sb: Any, seconds: float) -> None:
    r = place(sb, **VALID["LIMIT"], time_in_force="GTT", expiration_date=millis(seconds))
    assert r.status_code == 400
    assert "more than 10 seconds" in r.json()["detail"]


def test_an_expiry_just_over_10_seconds_away_is_accepted(sb: Any) -> None:
    order = placed(sb, **VALID["LIMIT"], time_in_force="GTT", expiration_date=millis(10.001))
    assert order["expiration_date"] == "2024-01-01T00:00:10.001000Z"


def test_expiration_date_without_gtt_is_a_400(sb: Any) -> None:
    r = place(sb, **VALID["LIMIT"], expiration_date=millis(60))
    assert r.status_code == 400 and "only allowed when time_in_force is GTT" in r.json()["detail"]


# -- identity, metadata, await_fill_millis, self-match prevention -----------------------


@pytest.mark.parametrize("fields", [{"identity_id": "i-1"}, {"identity_account_id": "a-1"}])
def test_identity_without_its_account_or_the_reverse_is_rejected(
    sb: Any, fields: dict[str, str]
) -> None:
    r = place(sb, **VALID["LIMIT"], **fields)
    assert r.status_code == 400
    assert r.json()["detail"] == "identity_id and identity_account_id must be sent together"


def test_identity_with_its_account_is_kept_on_the_order(sb: Any) -> None:
    identity, acct = approved_account(sb)
    order = placed(sb, **VALID["LIMIT"], identity_id=identity, identity_account_id=acct)
    assert (order["identity_id"], order["identity_account_id"]) == (identity, acct)


@pytest.mark.parametrize(
    "metadata",
    [
        {f"k{i}": "v" for i in range(7)},
        {"k" * 101: "v"},
        {"k": "v" * 101},
    ],
    ids=["7 pairs", "long key", "long value"],
)
def test_metadata_over_the_limits_is_a_400(sb: Any, metadata: dict[str, str]) -> None:
    r = place(sb, **VALID["LIMIT"], metadata=metadata)
    assert r.status_code == 400 and r.json()["detail"].startswith("metadata invalid")


def test_metadata_at_the_limits_is_stored(sb: Any) -> None:
    metadata = {f"{i}".ljust(100, "k"): "v" * 100 for i in range(6)}
    order = placed(sb, **VALID["LIMIT"], metadata=metadata)
    assert order["metadata"] == metadata
    assert get_order(sb, order)["metadata"] == metadata


def test_await_fill_millis_over_10000_is_a_400(sb: Any) -> None:
    r = place(sb, **VALID["LIMIT"], await_fill_millis=10001)
    assert r.status_code == 400 and r.json()["detail"].startswith("await_fill_millis invalid")
    assert placed(sb, **VALID["MARKET BUY"], await_fill_millis=10000)["status"] == "FILLED"


def test_self_match_prevention_id_over_36_characters_is_a_400(sandbox_factory: Any) -> None:
    sb = still(sandbox_factory, bootstrap_self_match_prevention=True)
    sb.deposit("USD", "1000000")
    r = place(sb, **VALID["LIMIT"], self_match_prevention_id="x" * 37)
    assert r.status_code == 400
    assert placed(sb, **VALID["LIMIT"], self_match_prevention_id="x" * 36)["status"] == "OPEN"


def test_self_match_prevention_id_without_the_permission_is_a_403(sb: Any) -> None:
    headers = sb.login(sb.client_id, sb.client_secret, scope="exchange:write_order")
    r = place(sb, headers=headers, **VALID["LIMIT"], self_match_prevention_id="desk-1")
    assert r.status_code == 403
    assert "exchange:self_match_prevention" in r.json()["detail"]
    assert place(sb, headers=headers, **VALID["LIMIT"]).status_code == 200


def _refused_self_match(r: Any) -> None:
    """The real service's refusal of a field the account lacks the permission for."""
    assert r.status_code == 403, r.text
    body = r.json()
    assert (body["type"], body["title"]) == ("about:blank", "Forbidden")
    assert "self_match_prevention_id" in body["detail"]


def test_a_new_customer_holds_the_self_match_permission_only_when_created_with_it(
    sb: Any,
) -> None:
    order = {**VALID["LIMIT"], "market": "BTCUSD", "self_match_prevention_id": "desk-1"}
    for option in ({}, {"self_match_prevention": False}, {"self_match_prevention": True}):
        made = sb.post("/v2/sandbox/customers", option or None).json()
        headers = sb.login(made["client_id"], made["client_secret"])
        sb.deposit("USD", "100000", headers=headers)
        r = sb.post("/v2/profiles/default/orders", order, headers=headers)
        if option.get("self_match_prevention"):
            assert r.status_code == 200, r.text
        else:
            _refused_self_match(r)
    made = sb.post("/v2/sandbox/customers", {"self_match_prevention": "yes"})
    assert made.status_code == 400 and made.json()["meta"] == {"field": "self_match_prevention"}


def test_the_bootstrap_client_holds_it_only_with_its_setting(sandbox_factory: Any) -> None:
    for setting in (False, True):
        sb = still(sandbox_factory, f"{setting}.db", bootstrap_self_match_prevention=setting)
        sb.deposit("USD", "100000")
        r = place(sb, **VALID["LIMIT"], self_match_prevention_id="desk-1")
        if setting:
            assert r.status_code == 200, r.text
        else:
            _refused_self_match(r)


def test_the_write_scope_is_needed(sb: Any) -> None:
    headers = sb.login(sb.client_id, sb.client_secret, scope="exchange:read_order")
    assert place(sb, headers=headers, **VALID["LIMIT"]).status_code == 403
    assert place(sb, headers={}, **VALID["LIMIT"]).status_code == 401


# -- ref_id --------------------------------------------------------------------------------


def test_a_second_order_with_the_same_ref_id_is_a_409_with_the_existing_order(sb: Any) -> None:
    first = placed(sb, **VALID["LIMIT"], ref_id="r-1")
    r = place(sb, **VALID["LIMIT"], ref_id="r-1")
    assert r.status_code == 409
    problem = r.json()
    assert problem["type"] == PROBLEMS + "already-exists"
    assert problem["title"] == "Already Exists"
    assert problem["detail"] == "order already exists with ref_id 'r-1'"
    assert problem["meta"]["existing"] == get_order(sb, first)


def test_a_ref_id_is_reusable_only_24_hours_after_its_order_closed(sb: Any) -> None:
    first = placed(sb, **VALID["LIMIT"], ref_id="r-1")
    sb.advance(3600)
    assert sb.delete(f"/v2/profiles/default/orders/{first['id']}").status_code == 200
    sb.advance(24 * 3600)
    assert place(sb, **VALID["LIMIT"], ref_id="r-1").status_code == 409
    sb.advance(1)
    again = placed(sb, **VALID["LIMIT"], ref_id="r-1")
    assert again["id"] != first["id"] and again["ref_id"] == "r-1"


def test_ref_ids_belong_to_a_profile(sb: Any) -> None:
    other = sb.post("/v2/profiles", {"nickname": "desk"}).json()
    sb.deposit("USD", "10000", profile=other["id"])
    placed(sb, **VALID["LIMIT"], ref_id="r-1")
    assert placed(sb, profile=other["id"], **VALID["LIMIT"], ref_id="r-1")["ref_id"] == "r-1"


# -- funds, precision, ticks, notional, the taker band ----------------------------------


def test_a_buy_holds_quote_and_a_sell_holds_base(sb: Any) -> None:
    placed(sb, **limit("BUY", "40000", "0.5"))
    assert money(sb.balance("USD")) == (Decimal(980000), Decimal(20000))
    placed(sb, **limit("SELL", "45000", "2"))
    assert money(sb.balance("BTC")) == (Decimal(8), Decimal(2))
    placed(sb, side="BUY", type="MARKET", quote_amount="100.00", market="ETHUSD")
    placed(sb, **VALID["STOP_MARKET"])
    assert money(sb.balance("BTC")) == (Decimal("7.9"), Decimal("2.1"))


def test_insufficient_funds_is_a_403_with_available_and_needed(sb: Any) -> None:
    r = place(sb, **limit("BUY", "40000", "30"))
    assert r.status_code == 403
    problem = r.json()
    pid = sb.get("/v2/profiles/default").json()["id"]
    assert problem["type"] == PROBLEMS + "insufficient-funds"
    assert problem["meta"] == {
        "profile_id": pid,
        "asset": "USD",
        "available": "1000000",
        "needed": "1200000",
    }
    r = place(sb, side="SELL", type="MARKET", base_amount="10.5")
    assert r.status_code == 403
    assert (r.json()["meta"]["available"], r.json()["meta"]["needed"]) == ("10", "10.5")
    assert money(sb.balance("USD")) == (Decimal(1000000), Decimal(0))


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (limit("BUY", "40000", "0.123456789"), "max precision allowed for asset BTC is 8"),
        (
            {"side": "BUY", "type": "MARKET", "quote_amount": "10.001"},
            "max precision allowed for asset USD is 2",
        ),
    ],
)
def test_amounts_beyond_precision_are_refused(sb: Any, body: dict[str, Any], detail: str) -> None:
    r = place(sb, **body)
    assert r.status_code == 400
    assert r.json()["type"] == PROBLEMS + "exceed-precision"
    assert r.json()["detail"] == detail


@pytest.mark.parametrize("field", ["price", "stop_price"])
def test_prices_off_the_tick_are_refused(sb: Any, field: str) -> None:
    body = dict(VALID["STOP_LIMIT"])
    body[field] = "39000.10"
    r = place(sb, **body)
    assert r.status_code == 400
    assert r.json()["detail"] == f"{field} invalid: 39000.10 is not a multiple of tick size 0.25"


def test_ticks_are_per_market(sb: Any) -> None:
    sb.deposit("USD", "1000")
    assert placed(sb, **limit("BUY", "0.8123", "10", market="MATICUSD"))["price"] == "0.8123"
    r = place(sb, **limit("BUY", "2200.01", "0.1", market="ETHUSD"))
    assert r.status_code == 400 and "tick size 0.05" in r.json()["detail"]


@pytest.mark.parametrize(
    ("body", "kind", "value", "maximum"),
    [
        (limit("BUY", "40000", "37.6", market="BTCUSD"), "LIMIT", "1504000.00", "1500000"),
        (limit("BUY", "200", "5000.05", market="BCHUSD"), "LIMIT", "1000010.00", "1000000"),
        (
            {"side": "BUY", "type": "MARKET", "quote_amount": "500000.01"},
            "MARKET",
            "500000.01",
            "500000",
        ),
    ],
)
def test_notional_over_the_maximum_is_a_403(
    sb: Any, body: dict[str, Any], kind: str, value: str, maximum: str
) -> None:
    r = place(sb, **body)
    assert r.status_code == 403
    problem = r.json()
    assert problem["type"] == PROBLEMS + "notional-value-too-large"
    market = body.get("market", "BTCUSD")
    assert problem["meta"] == {
        "market": market,
        "order_type": kind,
        "order_notional_value": value,
        "max_notional_value": maximum,
    }
    assert problem["detail"] == (
        f"notional value too large for {market} {kind} order: order had notional value {value},"
        f" but maximum allowed notional value is {maximum}"
    )


def test_a_taker_limit_15_percent_or_more_from_the_mid_is_refused(sb: Any) -> None:
    """The reference's kind for it: 403 market-conditions-prevented-execution, naming
    the price (it was an about:blank 400)."""
    # mid of the house's best bid and ask is 42500
    for side, price in (("BUY", "48875"), ("SELL", "36125")):
        r = place(sb, **limit(side, price, "0.01"))
        assert r.status_code == 403, r.text
        assert r.headers["content-type"] == "application/problem+json"
        problem = r.json()
        assert problem["type"] == PROBLEMS + "market-conditions-prevented-execution"
        assert problem["title"] == "Market Conditions Prevented Execution"
        assert problem["meta"] == {"field": "price"}
        assert problem["detail"] == (
            "price invalid: a taker order priced 15% or more away from the mid price (42500)"
            " is refused"
        )
    assert placed(sb, **limit("BUY", "48874.75", "0.01"))["status"] == "FILLED"
    # Far from the mid but resting (a maker) is fine.
    assert placed(sb, **limit("BUY", "30000", "0.01"))["status"] == "OPEN"


def test_recipient_profile_must_be_the_customers_own(sb: Any) -> None:
    headers, _ = sb.tenant()
    stranger = sb.get("/v2/profiles/default", headers=headers).json()["id"]
    r = place(sb, **VALID["LIMIT"], recipient_profile_id=stranger)
    assert r.status_code == 404
    mine = sb.post("/v2/profiles", {"nickname": "savings"}).json()["id"]
    assert placed(sb, **VALID["LIMIT"], recipient_profile_id=mine)["recipient_profile_id"] == mine


def test_an_unknown_or_foreign_profile_is_a_404(sb: Any) -> None:
    assert place(sb, profile="no-such-profile", **VALID["LIMIT"]).status_code == 404
    headers, _ = sb.tenant()
    stranger = sb.get("/v2/profiles/default", headers=headers).json()["id"]
    assert place(sb, profile=stranger, **VALID["LIMIT"]).status_code == 404
