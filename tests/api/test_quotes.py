"""Held-rate quotes: GET /v2/quotes, and executing one before it expires
(/v2/profiles/{profile_id}/quote-executions)."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest

from tests.support.reference import assert_matches, full_response_schema
from tests.support.transfer_helpers import problem

EXECUTIONS = "/v2/profiles/default/quote-executions"


# Prices that hold still (BTCUSD at 42500), for a test on `http_sandbox`.
STILL = {"market_volatility": "0"}


def _funded(sb: Any) -> Any:
    """`sb` with its default profile holding 100,000 USD and 1 BTC."""
    sb.deposit("USD", "100000")
    sb.deposit("BTC", "1")
    return sb


def _still(sandbox_factory: Any, **settings: Any) -> Any:
    """An in-process sandbox whose prices hold still and whose default profile is funded."""
    return _funded(sandbox_factory(**STILL, **settings))


def quotes(sb: Any, *markets: str, headers: Any = None) -> dict[tuple[str, str], dict[str, Any]]:
    kw = {"headers": headers} if headers is not None else {}
    r = sb.get("/v2/quotes", params={"markets": list(markets)} if markets else None, **kw)
    assert r.status_code == 200, r.text
    return {(q["market"], q["side"]): q for q in r.json()["items"]}


def execute(sb: Any, quote: dict[str, Any], **body: Any) -> Any:
    headers = body.pop("headers", sb.headers)
    profile = body.pop("profile", "default")
    return sb.post(
        f"/v2/profiles/{profile}/quote-executions",
        {"quote_id": quote["id"], **body},
        headers=headers,
    )


@pytest.mark.sandex(settings=STILL)
def test_quotes_are_a_buy_and_a_sell_per_market_around_the_reference_price(
    http_sandbox: Any,
) -> None:
    sb = _funded(http_sandbox)
    r = sb.get("/v2/quotes")
    assert r.status_code == 200, r.text
    assert_matches(r.json(), full_response_schema("/quotes", "get"))
    got = quotes(sb)
    assert len(got) == 28
    buy, sell = got[("BTCUSD", "BUY")], got[("BTCUSD", "SELL")]
    # 25 bps either side of 42500, on the 0.25 tick
    assert (buy["price"], sell["price"]) == ("42606.25", "42393.75")
    assert buy["base_asset"] == "BTC" and buy["quote_asset"] == "USD"
    assert buy["created_at"] == "2024-01-01T00:00:00.000000Z"
    assert buy["expires_at"] == "2024-01-01T00:00:30.000000Z"
    assert buy["id"] != sell["id"]
    only = quotes(sb, "ETHUSD")
    assert set(only) == {("ETHUSD", "BUY"), ("ETHUSD", "SELL")}


@pytest.mark.sandex(settings={**STILL, "quote_spread_bps": "100", "quote_ttl_seconds": "5"})
def test_the_spread_and_the_ttl_are_settings(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    got = quotes(sb, "BTCUSD")
    assert got[("BTCUSD", "BUY")]["price"] == "42925"
    assert got[("BTCUSD", "SELL")]["price"] == "42075"
    assert got[("BTCUSD", "BUY")]["expires_at"] == "2024-01-01T00:00:05.000000Z"


@pytest.mark.sandex(settings=STILL)
def test_quotes_follow_the_market_price(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    r = sb.post("/v2/sandbox/markets/BTCUSD/price", {"price": "40000"})
    assert r.status_code == 200, r.text
    got = quotes(sb, "BTCUSD")
    assert got[("BTCUSD", "BUY")]["price"] == "40100"
    assert got[("BTCUSD", "SELL")]["price"] == "39900"


def test_an_unknown_market_is_refused_naming_the_field(http_sandbox: Any) -> None:
    body = problem(http_sandbox.get("/v2/quotes", params={"markets": "BTCXYZ"}), 400)
    assert body["meta"]["field"] == "markets"


@pytest.mark.sandex(settings=STILL)
def test_buying_by_quote_amount_moves_funds_at_the_held_price(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    buy = quotes(sb, "BTCUSD")[("BTCUSD", "BUY")]
    r = execute(sb, buy, quote_amount="100", metadata={"desk": "a"}, ref_id="q1")
    assert r.status_code == 200, r.text
    x = r.json()
    assert_matches(x, full_response_schema("/profiles/{profile_id}/quote-executions", "post"))
    assert x["quote_id"] == buy["id"] and x["price"] == "42606.25"
    assert (x["side"], x["market"], x["status"]) == ("BUY", "BTCUSD", "SETTLED")
    # 100 / 42606.25 rounded down to 8 places
    assert (x["base_amount"], x["quote_amount"]) == ("0.00234707", "100.00")
    assert x["metadata"] == {"desk": "a"} and x["ref_id"] == "q1"
    assert sb.balance("USD")["available"] == "99900"
    assert sb.balance("BTC")["available"] == "1.00234707"
    assert sb.get(f"{EXECUTIONS}/{x['id']}").json() == x


@pytest.mark.sandex(settings=STILL)
def test_selling_by_base_amount_credits_the_quote_asset(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    sell = quotes(sb, "BTCUSD")[("BTCUSD", "SELL")]
    x = execute(sb, sell, base_amount="0.5").json()
    assert (x["base_amount"], x["quote_amount"]) == ("0.5", "21196.87")
    assert sb.balance("BTC")["available"] == "0.5"
    assert Decimal(sb.balance("USD")["available"]) == Decimal("121196.87")


@pytest.mark.sandex(settings=STILL)
def test_the_proceeds_go_to_the_recipient_profile(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    other = sb.post("/v2/profiles", {"nickname": "savings"}).json()["id"]
    buy = quotes(sb, "BTCUSD")[("BTCUSD", "BUY")]
    x = execute(sb, buy, base_amount="0.1", recipient_profile_id=other).json()
    assert x["recipient_profile_id"] == other and x["quote_amount"] == "4260.63"
    assert sb.balance("BTC", other)["available"] == "0.1"
    assert sb.balance("USD")["available"] == "95739.37"


@pytest.mark.sandex(settings=STILL)
def test_a_quote_expires_on_the_engine_clock(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    buy = quotes(sb, "BTCUSD")[("BTCUSD", "BUY")]
    sb.advance(29)
    assert execute(sb, buy, quote_amount="10").status_code == 200
    buy = quotes(sb, "BTCUSD")[("BTCUSD", "BUY")]
    sb.advance(30)
    body = problem(execute(sb, buy, quote_amount="10"), 403, "expired")
    assert body["meta"] == {"expired_at": "2024-01-01T00:00:59.000000Z"}
    assert sb.balance("USD")["available"] == "99990"


@pytest.mark.sandex(settings=STILL)
def test_a_used_quote_is_refused(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    buy = quotes(sb, "BTCUSD")[("BTCUSD", "BUY")]
    first = execute(sb, buy, quote_amount="10").json()
    body = problem(execute(sb, buy, quote_amount="10"), 403, "rejected")
    assert body["meta"]["quote_execution_id"] == first["id"]


@pytest.mark.sandex(settings=STILL)
def test_a_reused_ref_id_is_409_with_the_existing_execution(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    got = quotes(sb, "BTCUSD")
    first = execute(sb, got[("BTCUSD", "BUY")], quote_amount="10", ref_id="r").json()
    second = execute(sb, got[("BTCUSD", "SELL")], base_amount="0.1", ref_id="r")
    body = problem(second, 409, "already-exists")
    assert body["meta"]["existing"] == first


@pytest.mark.sandex(settings=STILL)
def test_insufficient_funds_is_403_and_moves_nothing(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    sell = quotes(sb, "BTCUSD")[("BTCUSD", "SELL")]
    body = problem(execute(sb, sell, base_amount="2"), 403, "insufficient-funds")
    assert body["meta"]["asset"] == "BTC" and body["meta"]["needed"] == "2"
    assert sb.balance("BTC")["available"] == "1"


@pytest.mark.parametrize(
    ("sizing", "field"),
    [
        ({}, "base_amount"),
        ({"base_amount": "1", "quote_amount": "1"}, "base_amount"),
        ({"quote_amount": "1.001"}, "quote_amount"),
        ({"base_amount": "0.000000001"}, "base_amount"),
        ({"base_amount": "-1"}, "base_amount"),
        ({"quote_amount": "0"}, "quote_amount"),
    ],
)
@pytest.mark.sandex(settings=STILL)
def test_bad_sizing_is_400_naming_the_field(
    http_sandbox: Any, sizing: dict[str, str], field: str
) -> None:
    sb = _funded(http_sandbox)
    buy = quotes(sb, "BTCUSD")[("BTCUSD", "BUY")]
    body = problem(execute(sb, buy, **sizing), 400)
    assert body["meta"]["field"] == field


@pytest.mark.sandex(settings=STILL)
def test_another_customers_executions_are_404(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    buy = quotes(sb, "BTCUSD")[("BTCUSD", "BUY")]
    x = execute(sb, buy, quote_amount="10").json()
    theirs, _ = sb.tenant()
    mine = quotes(sb, "BTCUSD", headers=theirs)[("BTCUSD", "BUY")]
    problem(sb.get(f"{EXECUTIONS}/{x['id']}", headers=theirs), 404)
    own = sb.get("/v2/profiles/default", headers=theirs).json()["id"]
    problem(sb.get(f"/v2/profiles/{own}/quote-executions/{x['id']}", headers=theirs), 404)
    profile = sb.get("/v2/profiles/default").json()["id"]
    problem(sb.get(f"/v2/profiles/{profile}/quote-executions", headers=theirs), 404)
    problem(execute(sb, mine, quote_amount="10", profile=profile, headers=theirs), 404)


@pytest.mark.sandex(settings=STILL)
def test_a_quote_is_shared_and_each_customer_executes_it_once(http_sandbox: Any) -> None:
    """Every caller of one window is answered the same quotes (the reference: "calls in
    quick succession may return the same quote"), and each may execute one once."""
    sb = _funded(http_sandbox)
    buy = quotes(sb, "BTCUSD")[("BTCUSD", "BUY")]
    theirs, _ = sb.tenant()
    assert quotes(sb, "BTCUSD", headers=theirs)[("BTCUSD", "BUY")] == buy
    sb.deposit("USD", "100", headers=theirs)
    assert execute(sb, buy, quote_amount="10").status_code == 200
    x = execute(sb, buy, quote_amount="10", headers=theirs)
    assert x.status_code == 200, x.text
    assert sb.balance("USD", headers=theirs)["available"] == "90"
    body = problem(execute(sb, buy, quote_amount="10", headers=theirs), 403, "rejected")
    assert body["meta"]["quote_execution_id"] == x.json()["id"]


def test_reads_write_at_most_one_event_per_market_and_window(sandbox_factory: Any) -> None:
    """Issue 29: every GET /v2/quotes wrote an event and its quotes stayed in memory after
    they expired. Now many reads of one window, by several customers, write one batch;
    a new pair comes only when the price moved or half the ttl is gone; and expired
    quotes leave the state."""
    sb = _still(sandbox_factory)
    engine = sb.engine
    theirs, _ = sb.tenant()
    before = engine.state.position
    first = quotes(sb)
    for i in range(40):
        assert quotes(sb, headers=theirs if i % 2 else sb.headers) == first
    assert engine.state.position == before + 1  # one QuotesIssued for all 14 markets
    assert len(engine.state.ext["quotes"]) == 28
    sb.advance(14)  # more than half the ttl left: still shared
    assert quotes(sb, "BTCUSD") == {k: v for k, v in first.items() if k[0] == "BTCUSD"}
    assert engine.state.position == before + 2  # the clock's own event only
    sb.advance(2)  # less than half left: a new pair for the market asked for
    later = quotes(sb, "BTCUSD")
    assert later[("BTCUSD", "BUY")]["id"] != first[("BTCUSD", "BUY")]["id"]
    assert later[("BTCUSD", "BUY")]["expires_at"] == "2024-01-01T00:00:46.000000Z"
    assert engine.state.position == before + 4
    set_price = sb.post("/v2/sandbox/markets/BTCUSD/price", {"price": "40000"})
    assert set_price.status_code == 200, set_price.text
    moved = quotes(sb, "BTCUSD")  # a new price: a new pair at once
    assert moved[("BTCUSD", "BUY")]["price"] == "40100"
    assert len(engine.state.ext["quotes"]) == 32
    sb.advance(15)  # the first batch expired; the two BTCUSD pairs of 00:00:16 are live
    assert len(engine.state.ext["quotes"]) == 4
    sb.advance(15)
    assert len(engine.state.ext["quotes"]) == 0
    assert not engine.state.ext["quote_live"] and not engine.state.ext["quote_batches"]
    # a dropped quote is still refused as expired, at the time it expired
    body = problem(execute(sb, first[("BTCUSD", "BUY")], quote_amount="10"), 403, "expired")
    assert body["meta"] == {"expired_at": "2024-01-01T00:00:30.000000Z"}
    # an id no quote had is judged by its time alone: older than the ttl, expired
    old = {"id": "018cc251-f400-7000-8000-000000000000"}  # 2024-01-01T00:00:00Z
    problem(execute(sb, old, quote_amount="1"), 403, "expired")
    problem(execute(sb, {"id": str(uuid.uuid4())}, quote_amount="1"), 404)
    for far in ("ffffffff-ffff-7fff-bfff-ffffffffffff", "018cc251-f400-7000-8000-00000000000"):
        problem(execute(sb, {"id": far}, quote_amount="1"), 404)  # past any date; no uuid


@pytest.mark.sandex(settings=STILL)
def test_executions_are_listed_newest_first_and_filtered(http_sandbox: Any) -> None:
    sb = _funded(http_sandbox)
    got = quotes(sb, "BTCUSD", "ETHUSD")
    a = execute(sb, got[("BTCUSD", "BUY")], quote_amount="10").json()
    sb.advance(1)
    b = execute(sb, got[("ETHUSD", "SELL")], quote_amount="10", headers=sb.headers)
    assert b.status_code == 403  # no ETH to sell
    sb.deposit("ETH", "1")
    b = execute(sb, got[("ETHUSD", "SELL")], base_amount="0.5").json()
    r = sb.get(EXECUTIONS)
    assert r.status_code == 200, r.text
    assert_matches(r.json(), full_response_schema("/profiles/{profile_id}/quote-executions", "get"))
    assert [x["id"] for x in r.json()["items"]] == [b["id"], a["id"]]
    ids = [x["id"] for x in sb.get(EXECUTIONS, params={"side": "BUY"}).json()["items"]]
    assert ids == [a["id"]]
    ids = [x["id"] for x in sb.get(EXECUTIONS, params={"market": "ETHUSD"}).json()["items"]]
    assert ids == [b["id"]]
    page = sb.get(EXECUTIONS, params={"limit": 1, "order": "ASC"}).json()
    assert [x["id"] for x in page["items"]] == [a["id"]] and "next_page_cursor" in page
    later = sb.get(EXECUTIONS, params={"created_at.begin": "2024-01-01T00:00:01Z"}).json()
    assert [x["id"] for x in later["items"]] == [b["id"]]
    problem(sb.get(EXECUTIONS, params={"created_at.begin": "soon"}), 400)


def test_the_scopes_are_the_documents(http_sandbox: Any) -> None:
    narrow = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="exchange:read_quote"
    )
    assert http_sandbox.get("/v2/quotes", headers=narrow).status_code == 200
    body = problem(http_sandbox.get(EXECUTIONS, headers=narrow), 403)
    assert body["meta"]["required_scope"] == "exchange:read_quote_execution"
    body = problem(http_sandbox.post(EXECUTIONS, {"quote_id": "x"}, headers=narrow), 403)
    assert body["meta"]["required_scope"] == "exchange:write_quote_execution"


def test_a_replayed_log_keeps_quotes_and_their_expiry(sandbox_factory: Any, database: Any) -> None:
    sb = _still(sandbox_factory)
    got = quotes(sb, "BTCUSD")
    x = execute(sb, got[("BTCUSD", "BUY")], quote_amount="10").json()
    sb.close()
    again = sandbox_factory(market_volatility="0")
    assert again.get(f"{EXECUTIONS}/{x['id']}").json() == x
    problem(execute(again, got[("BTCUSD", "BUY")], quote_amount="10"), 403, "rejected")
    again.advance(30)
    problem(execute(again, got[("BTCUSD", "SELL")], base_amount="0.1"), 403, "expired")
