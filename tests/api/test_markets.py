"""Market data, the sandbox price, the seeded path, and what a replay of the log gives."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sandex.engine.kernel.money import MARKETS
from tests.support.log_helpers import masked_log
from tests.support.reference import assert_matches, response_schema
from tests.support.trading_helpers import (
    book,
    events,
    get_order,
    limit,
    placed,
    set_price,
)


def price(sb: Any, market: str = "BTCUSD") -> dict[str, Any]:
    r = sb.http.get(f"/v2/sandbox/markets/{market}/price")
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_markets_are_listed_with_their_ticks(http_sb: Any) -> None:
    body = http_sb.http.get("/v2/markets").json()
    assert_matches(body, response_schema("/markets", "get"))
    ticks = {m["market"]: m["tick_rate"] for m in body["markets"]}
    assert set(ticks) == set(MARKETS)
    assert (ticks["BTCUSD"], ticks["ETHEUR"], ticks["MATICUSD"]) == ("0.25", "0.05", "0.0001")


def test_the_order_book_merges_real_orders_and_the_house_by_level(http_sb: Any) -> None:
    before = book(http_sb)
    assert_matches(before, response_schema("/markets/{market}/order-book", "get"))
    top_bid = before["bids"][0]
    assert (top_bid["price"], before["asks"][0]["price"]) == ("42478.75", "42521.25")
    placed(http_sb, **limit("BUY", "42478.75", "0.5"))
    placed(http_sb, **limit("BUY", "42490", "0.25"))
    after = http_sb.http.get("/v2/markets/BTCUSD/order-book").json()  # no token needed
    assert after["bids"][0] == {"price": "42490.00", "amount": "0.25000000"}
    merged = Decimal(top_bid["amount"]) + Decimal("0.5")
    assert after["bids"][1] == {"price": "42478.75", "amount": format(merged, "f")}
    assert len(after["asks"]) == 10 and len(after["bids"]) == 11
    prices = [Decimal(level["price"]) for level in after["bids"]]
    assert prices == sorted(prices, reverse=True)


def test_unknown_markets_are_404(http_sb: Any) -> None:
    for path in ("order-book", "ticker", "recent-executions"):
        assert http_sb.http.get(f"/v2/markets/DOGEUSD/{path}").status_code == 404
    assert http_sb.http.get("/v2/sandbox/markets/DOGEUSD/price").status_code == 404


def test_the_ticker_reports_the_book_and_the_days_trades(http_sb: Any) -> None:
    placed(http_sb, **limit("BUY", "42600", "0.5"))
    http_sb.advance(60)
    placed(http_sb, side="SELL", type="MARKET", base_amount="0.25")
    ticker = http_sb.http.get("/v2/markets/BTCUSD/ticker").json()
    assert_matches(ticker, response_schema("/markets/{market}/ticker", "get"))
    assert ticker["best_bid"]["price"] == "42478.75"
    assert ticker["last_execution"] == {"price": "42478.75", "amount": "0.25000000"}
    day = ticker["last_day"]
    assert (day["open"], day["high"], day["low"], day["volume"]) == (
        "42521.25",
        "42521.25",
        "42478.75",
        "0.75000000",
    )
    assert day["volume_weighted_average_price"] == "42507.08333333"
    assert day["range"] == {
        "begin": "2023-12-31T00:01:00.000000Z",
        "end": "2024-01-01T00:01:00.000000Z",
    }
    assert ticker["today"]["range"]["begin"] == "2024-01-01T00:00:00.000000Z"
    assert ticker["snapshot_at"] == "2024-01-01T00:01:00.000000Z"
    tickers = http_sb.http.get("/v2/all-markets/ticker").json()
    assert_matches(tickers, response_schema("/all-markets/ticker", "get"))
    assert {t["market"] for t in tickers["tickers"]} == {m for m in MARKETS if m.endswith("USD")}


def test_recent_executions_are_newest_first(http_sb: Any) -> None:
    placed(http_sb, side="BUY", type="MARKET", quote_amount="100.00")
    placed(http_sb, side="SELL", type="MARKET", base_amount="0.01")
    body = http_sb.http.get("/v2/markets/BTCUSD/recent-executions").json()
    assert_matches(body, response_schema("/markets/{market}/recent-executions", "get"))
    assert [(e["price"], e["amount"]) for e in body["items"]] == [
        ("42478.75", "0.01000000"),
        ("42521.25", "0.00235176"),
    ]
    assert len({e["match_number"] for e in body["items"]}) == 2


def test_the_sandbox_price_moves_the_ladder_now(sb: Any) -> None:
    assert price(sb) == {
        "market": "BTCUSD",
        "reference_price": "42500.00000000",
        "last_price": "42500.00",
        "as_of": "2024-01-01T00:00:00.000000Z",
    }
    moved = set_price(sb, "30000")
    assert (moved["reference_price"], moved["last_price"]) == ("30000.00000000", "30000.00")
    assert book(sb)["asks"][0]["price"] == "30015.00"
    assert price(sb)["last_price"] == "30000.00"
    assert len(events(sb, "MarketPriceSet")) == 1


def test_setting_a_price_needs_the_sandbox_scope_and_a_price_on_the_tick(http_sb: Any) -> None:
    headers, _ = http_sb.tenant()
    r = http_sb.post("/v2/sandbox/markets/BTCUSD/price", {"price": "30000"}, headers=headers)
    assert r.status_code == 403
    r = http_sb.post("/v2/sandbox/markets/BTCUSD/price", {"price": "30000.10"})
    assert r.status_code == 400 and "tick size 0.25" in r.json()["detail"]
    assert http_sb.post("/v2/sandbox/markets/BTCUSD/price", {"price": 30000}).status_code == 400
    assert http_sb.post("/v2/sandbox/markets/DOGEUSD/price", {"price": "1"}).status_code == 404


def test_the_path_is_seeded_moves_with_time_only_and_writes_nothing(
    sandbox_factory: Any,
) -> None:
    one = sandbox_factory("one.db", seed=11)
    two = sandbox_factory("two.db", seed=11)
    other = sandbox_factory("other.db", seed=12)
    start = price(one)["reference_price"]
    assert price(one)["reference_price"] == start  # no time, no move
    for sb in (one, two, other):
        sb.advance(600)
    assert price(one) == price(two)
    assert price(one)["reference_price"] != start
    assert price(other)["reference_price"] != price(one)["reference_price"]
    # realistic: within a few percent of the starting price after ten minutes
    assert abs(Decimal(price(one)["reference_price"]) / Decimal(42500) - 1) < Decimal("0.1")
    assert [e["type"] for e in events(one)][-2:] == ["ClockAdvanced", "ClockAdvanced"] or all(
        e["type"] != "MarketPriceSet" for e in events(one)
    )
    assert {e["type"] for e in events(one)} <= {
        "CustomerCreated",
        "ClientCreated",
        "ProfileCreated",
        "ClockAdvanced",
    }


def scenario(sb: Any) -> None:
    set_price(sb, "42500")
    headers, _ = sb.tenant()
    sb.deposit("USD", "100000")
    sb.deposit("BTC", "3", headers=headers)
    placed(sb, **limit("BUY", "42000", "0.5"))
    placed(sb, headers=headers, **limit("SELL", "42600", "1"))
    placed(
        sb, headers=headers, side="SELL", type="STOP_MARKET", stop_price="41000", base_amount="1"
    )
    sb.advance(1800)
    placed(sb, side="BUY", type="MARKET", quote_amount="2500.00")
    set_price(sb, "40900")
    sb.advance(3600)


def test_the_same_seed_and_commands_give_the_same_log(sandbox_factory: Any) -> None:
    one = sandbox_factory("one.db", market_volatility="0.2")
    two = sandbox_factory("two.db", market_volatility="0.2")
    scenario(one)
    scenario(two)
    log = events(one)
    assert masked_log(one.db) == masked_log(two.db)  # byte for byte but for secrets' hashes
    assert any(e["type"] == "TradeExecuted" for e in log)
    assert any(e["type"] == "OrderTriggered" for e in log)


def test_a_restart_rebuilds_books_and_keeps_watching_the_path(sandbox_factory: Any) -> None:
    sb = sandbox_factory("live.db", market_volatility="0.5")
    sb.deposit("USD", "100000")
    ask = Decimal(book(sb)["asks"][0]["price"])
    order = placed(sb, **limit("BUY", format(ask - Decimal("0.25"), "f"), "0.01"))
    before = book(sb)
    sb.close()
    again = sandbox_factory("live.db", market_volatility="0.5")
    assert book(again) == before
    assert get_order(again, order)["status"] == "OPEN"
    again.advance(3600)
    assert get_order(again, order)["status"] == "FILLED"
