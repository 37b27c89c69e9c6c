"""The report's statistics on records made by hand, each figure computed by hand in the
comments: returns per bar or per day, CAGR, volatility, Sharpe, Sortino, Calmar,
drawdown and its duration, exposure, buy and hold, and the round trips' figures."""

from __future__ import annotations

import csv
from decimal import Decimal
from pathlib import Path

from sandex.engine.backtest import BacktestResult
from sandex.engine.backtest.price_files import from_micros
from sandex.engine.backtest.result import Fill
from sandex.engine.backtest.statistics import duration, trade_statistics
from sandex.engine.backtest.trades import round_trips
from sandex.engine.config.settings import Settings
from sandex.engine.kernel.clock import format_time

T0 = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z in us
SECOND = 1_000_000
DAY = 86_400 * SECOND
D = Decimal
Held = tuple[int, tuple[Decimal, ...]]


def record(
    market: str,
    times: list[int],
    prices: list[str],
    holdings: list[Held],
    fills: list[Fill] | None = None,
    bars: int = 0,
) -> BacktestResult:
    """A result made by hand: the market's quote asset first, then its base."""
    quote, base = ("USD", market[:-3])
    final = holdings[-1][1]
    return BacktestResult(
        markets=[market],
        assets=[quote, base],
        times=times,
        mks=[0] * len(times),
        prices=[D(p) for p in prices],
        bars=bars,
        holdings=holdings,
        flows=[],
        fills=fills or [],
        orders=[("FILLED", "MARKET")] * len({f.view["order_id"] for f in fills or []}),
        balances={
            asset: {"available": final[a], "trading": D(0), "withdrawing": D(0)}
            for a, asset in enumerate((quote, base))
        },
        settings=Settings(seed=1),
        log_hash="sha256:" + "0" * 64,
        db=None,
        errors=[],
    )


def fill(order: str, side: str, at: int, amount: str, price: str, fee: str) -> Fill:
    gross = D(amount) * D(price)
    return Fill(
        view={
            "execution_id": f"{order}-{at}",
            "executed_at": format_time(from_micros(at)),
            "order_id": order,
            "market": "BTCUSD",
            "side": side,
            "amount": amount,
            "price": price,
            "gross_trade_amount": str(gross),
            "commission": fee,
            "commission_asset": "USD",
        },
        order_type="MARKET",
        reference=D(price),
        liquidity="TAKER",
    )


# Four bars of LTCUSD, two points each (open, close), one LTC held throughout, no cash.
# A bar every 25 days; each closes 16 days 7 h 30 min after its open, so the run spans
# 75 d + 16 d 7 h 30 min = 91.3125 days = a quarter of 365.25 days.
BAR = 25 * DAY
CLOSE = (16 * 86_400 + 7 * 3_600 + 30 * 60) * SECOND


def four_bars() -> BacktestResult:
    times = [T0 + j * BAR + at for j in range(4) for at in (0, CLOSE)]
    # closes 110, 99, 108.9, 119.79: returns +10%, -10%, +10%, +10% against 100
    prices = ["100", "110", "110", "99", "99", "108.9", "108.9", "119.79"]
    return record("LTCUSD", times, prices, [(T0, (D(0), D(1)))], bars=4)


def test_return_statistics_per_bar() -> None:
    s = four_bars().summary
    # equity = the price: 100 -> 119.79, return 19.79%
    assert (s["starting_equity"], s["final_equity"], s["return_pct"]) == ("100", "119.79", "19.79")
    # the period is the bar: four returns r = 0.1, -0.1, 0.1, 0.1 over a quarter of a
    # year, so 4 / 0.25 = 16 periods a year
    assert s["return_periods"] == {"period": "bar", "count": 4, "per_year": "16.0000"}
    # CAGR: 1.1979 ^ (365.25 / 91.3125) - 1 = 1.1979^4 - 1
    #     = 1.43496441^2 - 1 = 2.0591228579666481 - 1 = 105.91%
    assert s["cagr_pct"] == "105.91"
    # mean 0.05; deviations 0.05, -0.15, 0.05, 0.05; squares 0.0025 + 0.0225 + 0.0025 +
    # 0.0025 = 0.03; sample variance 0.03 / 3 = 0.01; std 0.1
    # volatility 0.1 x sqrt(16) = 0.4 = 40%
    assert s["volatility_pct"] == "40.00"
    # Sharpe 0.05 / 0.1 x sqrt(16) = 2
    assert s["sharpe"] == "2.0000"
    # downside deviation sqrt((-0.1)^2 / 4) = sqrt(0.0025) = 0.05; Sortino
    # 0.05 / 0.05 x sqrt(16) = 4
    assert s["sortino"] == "4.0000"
    # deepest drawdown 110 -> 99: 11 / 110 = 10%
    assert (s["max_drawdown_pct"], s["max_drawdown_amount"]) == ("10.00", "11")
    # Calmar 1.0591228579666481 / 0.1 = 10.591228...
    assert s["calmar"] == "10.5912"
    # under water from the last point at 110 (the second bar's open, day 25) to the
    # first point back over it (the fourth bar's close, day 75 + 16 d 7 h 30 min)
    assert s["max_drawdown_duration"] == "P66DT7H30M"
    # held all the time; buy and hold is the same 100 -> 119.79
    assert (s["exposure_pct"], s["buy_and_hold_return_pct"]) == ("100.00", "19.79")
    assert s["trades"] == {
        "count": 0,
        "open": 0,
        "win_rate_pct": None,
        "profit_factor": None,
        "avg_trade_pct": None,
        "best_trade_pct": None,
        "worst_trade_pct": None,
        "avg_pnl": None,
        "expectancy": None,
        "avg_duration": None,
        "max_duration": None,
    }


def test_no_variance_no_loss_no_drawdown_leave_the_ratios_undefined() -> None:
    # two bars of one point each, 100 then 110: the first bar's return against its own
    # open is 0, the second's 0.1: no loss, no drawdown
    times = [T0, T0 + DAY]
    s = record("LTCUSD", times, ["100", "110"], [(T0, (D(0), D(1)))], bars=2).summary
    assert s["return_periods"]["count"] == 2
    assert (s["sortino"], s["calmar"], s["max_drawdown_pct"]) == (None, None, "0.00")
    assert s["max_drawdown_duration"] is None
    flat = record("LTCUSD", times, ["100", "100"], [(T0, (D(0), D(1)))], bars=2).summary
    assert (flat["volatility_pct"], flat["sharpe"], flat["cagr_pct"]) == ("0.00", None, "0.00")


# Six daily prices of BTCUSD (trade data: the period is the day), 1,000 USD, and two
# round trips, the second left in two sells, with a position still open at the end:
#   day 0 at 100: buy 5 (500, fee 1)       -> 499 USD, 5 BTC;  equity  999
#   day 1 at 110: sell 5 (550, fee 1)      -> 1048 USD;        equity 1048
#   day 2 at  99: buy 10 (990, fee 2)      -> 56 USD, 10 BTC;  equity 1046
#   day 3 at 121: sell 4 (484, fee 1)      -> 539 USD, 6 BTC;  equity 1265
#   day 4 at  90: sell 6 (540, fee 1)      -> 1078 USD;        equity 1078
#   day 5 at 100: buy 1 (100, no fee)      -> 978 USD, 1 BTC;  equity 1078
PRICES = ["100", "110", "99", "121", "90", "100"]
FILLS = [
    ("a", "BUY", 0, "5", "1"),
    ("b", "SELL", 1, "5", "1"),
    ("c", "BUY", 2, "10", "2"),
    ("d", "SELL", 3, "4", "1"),
    ("e", "SELL", 4, "6", "1"),
    ("f", "BUY", 5, "1", "0"),
]
HELD = [(1000, 0), (499, 5), (1048, 0), (56, 10), (539, 6), (1078, 0), (978, 1)]


def three_trades() -> BacktestResult:
    times = [T0 + d * DAY for d in range(6)]
    fills = [fill(o, side, times[d], n, PRICES[d], fee) for o, side, d, n, fee in FILLS]
    at = [T0, *times]  # the starting holding, then each fill's
    holdings = [(t, (D(usd), D(btc))) for t, (usd, btc) in zip(at, HELD, strict=True)]
    return record("BTCUSD", times, PRICES, holdings, fills)


def test_trade_statistics() -> None:
    result = three_trades()
    s = result.summary
    # position 1: 5 at 100 -> 110: 550 - 500 - 1 - 1 = 48; 48 / 500 = 9.6%, one day
    # position 2: 10 at 99 (990, fee 2), left in two sells: 4 at 121 (484, fee 1) and
    #          6 at 90 (540, fee 1): 1024 - 990 - 4 = 30; 30 / 990 = 3.0303...%, two days
    assert [(t.amount, t.pnl) for t in result.trades] == [(D(5), D(48)), (D(10), D(30))]
    assert result.trades == round_trips(result)
    assert s["trades"] == {
        "count": 2,
        "open": 1,  # day 5's buy
        "win_rate_pct": "100.00",  # 2 / 2
        "profit_factor": None,  # no loss
        # (9.6 + 3.0303...) / 2 = 6.3151...
        "avg_trade_pct": "6.32",
        "best_trade_pct": "9.60",
        "worst_trade_pct": "3.03",
        "avg_pnl": "39",  # (48 + 30) / 2
        "expectancy": "39",
        "avg_duration": "P1DT12H",  # (1 + 2) / 2 days
        "max_duration": "P2D",
    }


def test_return_statistics_per_day_with_trades() -> None:
    s = three_trades().summary
    assert (s["final_equity"], s["pnl"], s["return_pct"], s["fees"]) == ("1078", "78", "7.80", "6")
    # one period a day: six days' closes over a run of five days: 6 x 365.25 / 5 = 438.3
    assert s["return_periods"] == {"period": "day", "count": 6, "per_year": "438.3000"}
    # each day's point is valued with what was held there, before that day's fill:
    # 1000, 499 + 5 x 110 = 1049, 1048, 56 + 10 x 121 = 1266, 539 + 6 x 90 = 1079, 1078
    # deepest: 1266 -> 1078, 188 / 1266 = 14.8499...%
    assert (s["max_drawdown_pct"], s["max_drawdown_amount"]) == ("14.85", "188")
    # under water: day 1 to day 3 (1048 < 1049), day 3 to the end (1079, 1078 < 1266):
    # the longest two days
    assert s["max_drawdown_duration"] == "P2D"
    # a position on days 0, 2 and 3 (each to the next point): 3 of the 5 days
    assert s["exposure_pct"] == "60.00"
    # BTC bought at the first price, 100, held to the last, 100
    assert s["buy_and_hold_return_pct"] == "0.00"


def test_the_files_keep_exact_amounts_and_the_page_rounds_them(tmp_path: Path) -> None:
    # a fill whose notional and commission carry 11 decimals, as the engine's do
    times = [T0, T0 + DAY]
    buy = fill("a", "BUY", T0, "0.97582872", "51238.50", "49.99999986972")
    buy.view["gross_trade_amount"] = "49999.99986972"
    usd = D(100_000) - D("49999.99986972") - D("49.99999986972")
    held = [(T0, (D(100_000), D(0))), (T0, (usd, D("0.97582872")))]
    result = record("BTCUSD", times, ["51238.50", "51238.50"], held, [buy])
    s = result.summary
    assert (s["fees"], s["volume"]["quote"], s["volume"]["base"]) == (
        "49.99999986972",
        "49999.99986972",
        {"BTC": "0.97582872"},
    )
    # 100000 - 49999.99986972 - 49.99999986972 = 49950.00013041028 USD, as held
    assert s["final_balances"]["USD"]["available"] == "49950.00013041028"
    row = result.executions[0]
    assert (row["gross_trade_amount"], row["commission"], row["amount"]) == (
        "49999.99986972",
        "49.99999986972",
        "0.97582872",
    )
    result.write(tmp_path)
    with (tmp_path / "executions.csv").open() as f:
        assert next(csv.DictReader(f))["commission"] == "49.99999986972"
    # the page shows them at the asset's precision: 2 decimals for USD
    page = (tmp_path / "report.html").read_text()
    assert "<td>50.00</td>" in page  # the execution's fee
    assert "<th>USD</th><td class='n'>available 49950.00, " in page


def test_the_commissions_in_executions_csv_add_up_to_the_fees(tmp_path: Path) -> None:
    # two fills of 0.2225 USD commission each: rounded to cents each shows 0.22, and the
    # rows would sum to 0.44 against fees of 0.445
    times = [T0, T0 + DAY]
    fills = [
        fill("a", "BUY", T0, "1", "222.5", "0.2225"),
        fill("b", "SELL", T0 + DAY, "1", "222.5", "0.2225"),
    ]
    held = [(T0, (D(1000), D(0))), (T0, (D("777.2775"), D(1))), (T0 + DAY, (D("999.555"), D(0)))]
    result = record("BTCUSD", times, ["222.5", "222.5"], held, fills)
    result.write(tmp_path)
    with (tmp_path / "executions.csv").open() as f:
        commissions = [D(r["commission"]) for r in csv.DictReader(f)]
    assert commissions == [D("0.2225"), D("0.2225")]
    assert sum(commissions) == D(result.summary["fees"]) == D("0.445")
    assert result.summary["final_balances"]["USD"]["available"] == "999.555"


def test_trades_csv_has_one_row_per_closed_trade(tmp_path: Path) -> None:
    three_trades().write(tmp_path)
    with (tmp_path / "trades.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["entry_time"][:10], r["exit_time"][:10], r["duration"]) for r in rows] == [
        ("2024-01-01", "2024-01-02", "P1D"),
        ("2024-01-03", "2024-01-05", "P2D"),
    ]
    assert [(r["amount"], r["entry_price"], r["exit_price"]) for r in rows] == [
        ("5", "100", "110"),
        ("10", "99", "102.4"),  # (484 + 540) / 10
    ]
    assert [(r["pnl"], r["return_pct"], r["fees"]) for r in rows] == [
        ("48", "9.60", "2"),
        ("30", "3.03", "4"),  # the entry's 2 and the exits' 1 and 1
    ]


def test_durations_are_iso_8601() -> None:
    assert duration(0) == "PT0S"
    assert duration(DAY) == "P1D"
    assert duration(DAY + 3_661 * SECOND + SECOND // 2) == "P1DT1H1M2S"
    assert duration(90 * SECOND) == "PT1M30S"
    assert duration(None) is None


def test_durations_are_rounded_to_the_second() -> None:
    # a mean of eleven trades' durations: 48 d 22 h 15 min 16.363636 s
    mean = (48 * 86_400 + 22 * 3_600 + 15 * 60 + 16) * SECOND + 363_636
    assert duration(mean) == "P48DT22H15M16S"
    assert duration(mean + 136_364) == "P48DT22H15M17S"  # 16.5 s: half rounds up
    assert duration(SECOND // 3) == "PT0S"
    trades = three_trades()
    # the trades' durations, 1 and 2 days and a third second: a mean of 1.5 days and
    # a sixth of a second
    late = [t._replace(exit_time=t.exit_time + SECOND // 3) for t in trades.trades]
    figures = trade_statistics(late, 0, "USD")
    assert (figures["avg_duration"], figures["max_duration"]) == ("P1DT12H", "P2D")


def test_a_run_shorter_than_a_day_has_no_cagr() -> None:
    # +10% in three minutes would be 1.1 ^ 175,320 - 1: thousands of digits
    minutes = [T0 + k * 60 * SECOND for k in range(4)]
    s = record("LTCUSD", minutes, ["100", "120", "90", "110"], [(T0, (D(0), D(1)))]).summary
    assert (s["return_pct"], s["cagr_pct"], s["calmar"]) == ("10.00", None, None)
    # one day is enough: 1.1 ^ 365.25 = 1,314,250,812,077,362.312174...; less 1, x 100
    day = record("LTCUSD", [T0, T0 + DAY], ["100", "110"], [(T0, (D(0), D(1)))]).summary
    assert day["cagr_pct"] == "131425081207736131.22"


def test_trades_are_counted_by_position_and_win_rate_by_positions() -> None:
    # One position entered with one order and left with two (the cap on a market order
    # splits a large exit), then a second position, one order each way:
    #   hour 0 at 100: buy 2 (200)        -> 800 USD, 2 BTC
    #   hour 1 at  90: sell 1 (90)        -> 890 USD, 1 BTC
    #   hour 2 at 120: sell 1 (120)       -> 1010 USD        position 1: 210 - 200 = +10
    #   hour 3 at 100: buy 1 (100)        -> 910 USD, 1 BTC
    #   hour 4 at  95: sell 1 (95)        -> 1005 USD        position 2: 95 - 100 = -5
    # Counted by order, the first position's exits would be two trades (-10 and +20):
    # three trades, one win in three. By position: two trades, one win in two.
    hour = 3_600 * SECOND
    times = [T0 + k * hour for k in range(5)]
    prices = ["100", "90", "120", "100", "95"]
    moves = [("a", "BUY", "2"), ("s1", "SELL", "1"), ("s2", "SELL", "1")]
    moves += [("b", "BUY", "1"), ("s3", "SELL", "1")]
    fills = [fill(o, side, times[k], n, prices[k], "0") for k, (o, side, n) in enumerate(moves)]
    held = [(1000, 0), (800, 2), (890, 1), (1010, 0), (910, 1), (1005, 0)]
    at = [T0, *times]
    holdings = [(t, (D(usd), D(btc))) for t, (usd, btc) in zip(at, held, strict=True)]
    s = record("BTCUSD", times, prices, holdings, fills).summary["trades"]
    # +10 / 200 = 5%, -5 / 100 = -5%: mean 0; profit factor 10 / 5 = 2
    assert (s["count"], s["open"], s["win_rate_pct"]) == (2, 0, "50.00")
    assert (s["profit_factor"], s["avg_trade_pct"], s["avg_pnl"]) == ("2.0000", "0.00", "2.5")
    assert (s["best_trade_pct"], s["worst_trade_pct"]) == ("5.00", "-5.00")
