"""Prices from the engine's own history: GET /v2/all-markets/prices and
GET /v2/markets/{market}/historical-prices."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.support.reference import assert_matches, full_response_schema
from tests.support.trading_helpers import set_price
from tests.support.transfer_helpers import problem

HISTORY = "/v2/markets/BTCUSD/historical-prices"
DAY = 86400


def history(sb: Any, **params: Any) -> dict[str, Any]:
    r = sb.get(HISTORY, params=params)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def prices(values: dict[str, Any]) -> list[str]:
    return [p["average_price"] for p in values["items"]]


STILL = pytest.mark.sandex(settings={"market_volatility": "0"})


@pytest.fixture
def still(request: pytest.FixtureRequest) -> Any:
    """Prices that move only when set: BTCUSD 40000 from the start, 41000 from 00:30."""
    request.node.add_marker(STILL)
    sb = request.getfixturevalue("http_sandbox")
    set_price(sb, "40000")
    sb.advance(1800)
    set_price(sb, "41000")
    sb.advance(DAY - 1800 + 60)  # now 2024-01-02T00:01:00Z
    return sb


def test_current_and_yesterdays_prices(still: Any) -> None:
    r = still.http.get("/v2/all-markets/prices", params={"markets": ["BTCUSD", "ETHUSD"]})
    assert r.status_code == 200, r.text  # public: no token
    body = r.json()
    assert_matches(body, full_response_schema("/all-markets/prices", "get"))
    btc, eth = body["items"]
    assert btc == {
        "market": "BTCUSD",
        "current_price": "41000.00",
        "yesterday_price": "40000.00",  # the minute from 2024-01-01T00:01:00Z
        "snapshot_at": "2024-01-02T00:01:00.000000Z",
    }
    assert eth["market"] == "ETHUSD" and eth["current_price"] == eth["yesterday_price"]
    every = still.http.get("/v2/all-markets/prices").json()["items"]
    assert [p["market"] for p in every][:2] == ["BTCUSD", "ETHUSD"] and len(every) == 10
    body = problem(still.http.get("/v2/all-markets/prices", params={"markets": "BTCEUR"}), 400)
    assert body["meta"]["field"] == "markets"


def test_hourly_averages_are_time_weighted_and_end_with_the_price_now(still: Any) -> None:
    got = history(still, increment="ONE_HOUR", **{"range.begin": "2024-01-01T00:00:00Z"})
    assert_matches(got, full_response_schema("/markets/{market}/historical-prices", "get"))
    assert got["total_count"] == 25  # 24 hours that have ended, then now
    assert prices(got)[:3] == ["40500.00", "41000.00", "41000.00"]
    assert got["items"][0]["timestamp"] == "2024-01-01T00:00:00.000000Z"
    assert got["items"][1]["timestamp"] == "2024-01-01T01:00:00.000000Z"
    assert got["items"][-1] == {
        "average_price": "41000.00",
        "timestamp": "2024-01-02T00:01:00.000000Z",
    }


def test_a_later_price_leaves_the_past_as_it_was(still: Any) -> None:
    before = history(still, increment="FIFTEEN_MINUTES", **{"range.end": "2024-01-01T02:00:00Z"})
    set_price(still, "50000")
    still.advance(3600)
    after = history(still, increment="FIFTEEN_MINUTES", **{"range.end": "2024-01-01T02:00:00Z"})
    assert after == before
    assert prices(before) == ["40000.00"] * 2 + ["41000.00"] * 6
    last = history(still, increment="ONE_HOUR", **{"range.begin": "2024-01-02T00:00:00Z"})
    assert prices(last) == ["49850.00", "50000.00"]  # 00:00-01:00: a minute at 41000


@STILL
def test_a_minute_with_trades_is_their_average_price(http_sandbox: Any) -> None:
    sb = http_sandbox
    sb.deposit("USD", "10000")
    order = {"side": "BUY", "market": "BTCUSD", "type": "MARKET", "quote_amount": "1000"}
    r = sb.post("/v2/profiles/default/orders", order)
    assert r.status_code == 200, r.text
    traded = sb.get("/v2/executions").json()["items"][0]["price"]
    assert Decimal(traded) != Decimal("42500")
    sb.advance(120)
    got = history(sb, increment="ONE_MINUTE", **{"range.begin": "2024-01-01T00:00:00Z"})
    assert [Decimal(p) for p in prices(got)] == [Decimal(traded), Decimal(42500), Decimal(42500)]


def test_max_data_points_picks_the_finest_increment_that_fits(still: Any) -> None:
    begin = {"range.begin": "2024-01-01T00:00:00Z"}
    got = history(still, max_data_points=30, **begin)
    assert got["total_count"] == 25  # hours: minutes to half hours would be more
    assert got["items"][1]["timestamp"] == "2024-01-01T01:00:00.000000Z"
    assert history(still, max_data_points=2000, **begin)["total_count"] == 1442


def test_paging_and_a_range(still: Any) -> None:
    begin = {"range.begin": "2024-01-01T00:00:00Z"}
    page = history(still, increment="ONE_HOUR", **begin, **{"pagination.limit": 2})
    assert len(page["items"]) == 2 and page["total_count"] == 25
    page = history(
        still, increment="ONE_HOUR", **begin, **{"pagination.limit": 2, "pagination.offset": 1}
    )
    assert [p["timestamp"][11:16] for p in page["items"]] == ["01:00", "02:00"]
    closed = history(
        still,
        increment="ONE_HOUR",
        **{"range.begin": "2024-01-01T00:10:00Z", "range.end": "2024-01-01T03:00:00Z"},
    )
    # whole hours inside the range, and no point for now when the range has an end
    assert [p["timestamp"][11:16] for p in closed["items"]] == ["01:00", "02:00"]
    assert closed["total_count"] == 2


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "increment"),
        ({"increment": "ONE_HOUR", "max_data_points": 5}, "increment"),
        ({"increment": "ONE_YEAR"}, "increment"),
        ({"increment": "ONE_HOUR", "range.begin": "yesterday"}, "range.begin"),
        ({"increment": "ONE_HOUR", "pagination.limit": 1001}, "pagination.limit"),
        ({"increment": "ONE_HOUR", "pagination.offset": -1}, "pagination.offset"),
        ({"max_data_points": 0}, "max_data_points"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(
    http_sandbox: Any, params: dict[str, Any], field: str
) -> None:
    body = problem(http_sandbox.get(HISTORY, params=params), 400)
    assert body["meta"]["field"] == field


def test_an_unknown_market_is_404_and_the_scope_is_the_documents(http_sandbox: Any) -> None:
    problem(
        http_sandbox.get("/v2/markets/XYZUSD/historical-prices", params={"increment": "ONE_DAY"}),
        404,
    )
    narrow = http_sandbox.login(
        http_sandbox.client_id, http_sandbox.client_secret, scope="exchange:read_order"
    )
    body = problem(http_sandbox.get(HISTORY, params={"increment": "ONE_DAY"}, headers=narrow), 403)
    assert body["meta"] == {"required_scope": "exchange:historical_prices"}


def test_the_moving_path_ends_at_the_reference_price_now(http_sandbox: Any) -> None:
    http_sandbox.advance(3 * 3600)
    reference = http_sandbox.get("/v2/sandbox/markets/BTCUSD/price").json()["reference_price"]
    got = history(http_sandbox, increment="ONE_HOUR")
    assert got["total_count"] == 4
    assert Decimal(got["items"][-1]["average_price"]) == Decimal(reference).quantize(
        Decimal("0.01")
    )
    assert len(set(prices(got))) > 1  # the path moved
