"""Backtests: fills follow the engine's rules on the data's path, idle points write
nothing, the strategy API answers what the HTTP API answers, and a run is repeatable."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sandex.api_adapter import create_app
from sandex.api_adapter.problems import domain_problem_body
from sandex.engine import Engine, open_engine
from sandex.engine.backtest import Api, ApiError, BacktestError, Strategy, run
from sandex.engine.backtest.runner import Runner
from sandex.engine.kernel.commands import Actor, CreateCustomer, CreateOrder, SandboxDeposit
from sandex.engine.kernel.credentials import REDACTED
from sandex.engine.kernel.errors import InsufficientFunds
from sandex.engine.tools.time_travel import travel
from sandex.engine.tools.verify import verify
from tests.conftest import make_settings
from tests.support.command_helpers import funded_actor, limit_buy_command
from tests.support.database import query, tables
from tests.support.log_helpers import masked_log

T0 = 1_704_067_200  # 2024-01-01T00:00:00Z
START = datetime(2024, 1, 1, tzinfo=UTC)
CHECKED = {"assert_invariants": True}


def prices_csv(tmp_path: Path, prices: list[str], step: int = 60, name: str = "p.csv") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / name
    rows = "".join(f"{T0 + k * step},{p}\n" for k, p in enumerate(prices))
    path.write_text("timestamp,price\n" + rows)
    return path


class Script(Strategy):
    """Runs `actions[k](api)` at the k-th price point and records every callback."""

    def __init__(self, actions: dict[int, Callable[[Api], Any]] | None = None) -> None:
        self.actions = actions or {}
        self.k = -1
        self.seen: list[tuple[str, Any]] = []
        self.answers: list[Any] = []

    def on_price(self, market: str, time: datetime, price: Decimal) -> None:
        self.k += 1
        action = self.actions.get(self.k)
        if action is not None:
            self.answers.append(action(self.api))

    def on_fill(self, execution: dict[str, Any]) -> None:
        self.seen.append(("fill", execution))

    def on_order(self, order: dict[str, Any]) -> None:
        self.seen.append(("order", order))

    def on_timer(self, name: str, time: datetime) -> None:
        self.seen.append(("timer", (name, time)))


def events(db: Path | str) -> list[tuple[str, dict[str, Any], str]]:
    rows = query(db, "SELECT type, data, occurred_at FROM events ORDER BY position")
    return [(t, json.loads(d), at) for t, d, at in rows]


def backtest(tmp_path: Path, prices: list[str], strategy: Any, **kw: Any) -> Any:
    kw.setdefault("settings", CHECKED)
    kw.setdefault("db", tmp_path / "bt.db")
    step = kw.pop("step", 60)
    return run(prices_csv(tmp_path, prices, step), "BTCUSD", strategy=strategy, **kw)


def limit_buy(price: str, amount: str = "0.1", **kw: Any) -> Callable[[Api], Any]:
    return lambda api: api.create_order(
        side="BUY", market="BTCUSD", type="LIMIT", price=price, base_amount=amount, **kw
    )


def test_idle_points_write_no_event(tmp_path: Path, database: Any) -> None:
    few = backtest(tmp_path / "a", ["42000"] * 3, Script(), db=database("a.db"))
    prices = [str(42000 + k % 7) for k in range(2000)]
    many = backtest(tmp_path / "b", prices, Script(), db=database("b.db"))
    assert len(events(many.db)) == len(events(few.db))
    assert [t for t, _, _ in events(many.db)][-1] == "MarketPriceSet"


def test_a_still_path_arms_no_watch_for_an_order_it_cannot_reach(database: Any) -> None:
    for volatility, armed in (("0", False), ("0.03", True)):
        settings = make_settings(market_volatility=volatility)
        with open_engine(database(f"e{volatility}.db"), settings) as engine:
            me = funded_actor(engine.execute, "100000")
            engine.execute(limit_buy_command(me, "30000", "0.1"))
            assert (engine.next_deadline() is not None) is armed


def test_a_resting_limit_fills_at_its_price_when_a_point_crosses_it(
    tmp_path: Path, database: Any
) -> None:
    script = Script({0: limit_buy("41000")})
    prices = ["42000", "41500", "40900", "42000"]
    result = backtest(tmp_path, prices, script, db=database("bt.db"))
    order = script.answers[0]
    assert order["status"] == "OPEN"
    fills = [v for kind, v in script.seen if kind == "fill"]
    assert len(fills) == 1
    assert fills[0]["price"] == "41000.00" and fills[0]["amount"] == "0.10000000"
    assert fills[0]["executed_at"] == "2024-01-01T00:02:00.000000Z"
    statuses = [v["status"] for kind, v in script.seen if kind == "order"]
    assert statuses == ["OPEN", "FILLED"]
    assert result.summary["orders"]["by_status"] == {"FILLED": 1}
    assert verify(str(result.db)) == []


def test_a_strategys_identity_ids_are_labels(tmp_path: Path, database: Any) -> None:
    """A backtest has no identity API: the identity ids a strategy's orders name, as its
    live code would, are kept as labels, where a live customer without identities gets a
    404 for them (docs/identities.md)."""
    script = Script({0: limit_buy("41000", identity_id="id-1", identity_account_id="acct-1")})
    result = backtest(tmp_path, ["42000", "40900"], script, db=database("bt.db"))
    order = script.answers[0]
    assert order["status"] == "OPEN"
    assert order["identity_id"] == "id-1" and order["identity_account_id"] == "acct-1"
    assert result.summary["orders"]["by_status"] == {"FILLED": 1}
    assert verify(str(result.db)) == []


def test_a_stop_triggers_when_the_last_price_falls_to_it(tmp_path: Path, database: Any) -> None:
    def stop(api: Api) -> Any:
        return api.create_order(
            side="SELL", market="BTCUSD", type="STOP_MARKET", stop_price="41000", base_amount="0.5"
        )

    script = Script({0: stop})
    result = backtest(
        tmp_path,
        ["42000", "41200", "40990", "40000"],
        script,
        deposits={"BTC": "1"},
        db=database("bt.db"),
    )
    fills = [v for kind, v in script.seen if kind == "fill"]
    assert len(fills) == 1 and fills[0]["executed_at"].startswith("2024-01-01T00:02:00")
    # the ladder's first bid under the reference 40990 at the default 10 bps spread
    assert Decimal(fills[0]["price"]) < Decimal("40990")
    triggered = [v for kind, v in script.seen if kind == "order" and v["is_triggered"]]
    assert triggered and triggered[-1]["status"] == "FILLED"
    assert result.summary["executions"] == 1


def test_gtt_expires_on_engine_time_between_points(tmp_path: Path, database: Any) -> None:
    expiry = int((START + timedelta(seconds=90)).timestamp() * 1000)
    script = Script({0: limit_buy("41000", time_in_force="GTT", expiration_date=str(expiry))})
    backtest(tmp_path, ["42000", "41500", "41500", "40000"], script, db=database("bt.db"))
    orders = [v for kind, v in script.seen if kind == "order"]
    assert orders[-1]["status"] == "CANCELLED"
    assert orders[-1]["modified_at"] == "2024-01-01T00:01:30.000000Z"
    assert not [v for kind, v in script.seen if kind == "fill"]


def test_market_orders_take_the_ladder_and_zero_spread_trades_at_the_reference(
    tmp_path: Path,
    database: Any,
) -> None:
    def buy(api: Api) -> Any:
        return api.create_order(side="BUY", market="BTCUSD", type="MARKET", quote_amount="4200")

    script = Script({1: buy})
    backtest(
        tmp_path,
        ["42000", "42000.25"],
        script,
        spread_bps="0",
        taker_fee="0.001",
        db=database("bt.db"),
    )
    fill = next(v for kind, v in script.seen if kind == "fill")
    assert fill["price"] == "42000.25"
    assert Decimal(fill["commission"]) == Decimal(fill["gross_trade_amount"]) * Decimal("0.001")


def _too_big(api: Api) -> Any:
    try:
        limit_buy("40000", "3")(api)
    except ApiError as exc:
        return exc
    raise AssertionError("the order was accepted")


def test_insufficient_funds_raises_the_problem_the_http_api_sends(
    tmp_path: Path, database: Any
) -> None:
    script = Script({0: _too_big})
    backtest(tmp_path, ["42000"], script, problems=domain_problem_body, db=database("bt.db"))
    problem = script.answers[0].problem
    assert problem["status"] == 403 and script.answers[0].status == 403
    assert problem["type"].endswith("/insufficient-funds")
    assert (problem["meta"]["available"], problem["meta"]["needed"]) == ("100000", "120000")


def test_without_a_renderer_a_refusal_is_the_engines_error_and_body(
    tmp_path: Path, database: Any
) -> None:
    script = Script({0: _too_big})
    backtest(tmp_path, ["42000"], script, db=database("bt.db"))
    refused = script.answers[0]
    assert isinstance(refused.error, InsufficientFunds) and refused.status is None
    assert refused.problem == {
        "code": "insufficient-funds",
        "detail": refused.error.detail,
        "meta": {"profile_id": refused.error.meta["profile_id"], "asset": "USD"}
        | {"available": "100000", "needed": "120000"},
    }


class Recorder(Strategy):
    """Places a few orders, then keeps what the API answers at the end."""

    def on_start(self, api: Api) -> None:
        self.first = api.create_order(
            side="BUY", market="BTCUSD", type="MARKET", quote_amount="1000"
        )
        self.resting = api.create_order(
            side="BUY", market="BTCUSD", type="LIMIT", price="30000", base_amount="0.01"
        )

    def on_end(self, api: Api) -> None:
        self.answers = {
            "order": api.get_order(self.first["id"]),
            "resting": api.get_order(self.resting["id"]),
            "orders": api.list_profile_orders(),
            "executions": api.list_executions(),
            "balances": api.list_profile_balances(),
            "balance": api.get_profile_balance("BTC"),
        }


def test_the_strategy_api_answers_what_the_http_api_answers(tmp_path: Path, database: Any) -> None:
    strategy = Recorder()
    result = backtest(tmp_path, ["42000", "42100"], strategy, db=database("bt.db"))
    engine = open_engine(result.db, make_settings(market_volatility="0")).start()
    http = TestClient(create_app(engine))
    try:
        form = {"grant_type": "client_credentials", "client_id": "backtest"}
        token = http.post("/oauth2/token", data={**form, "client_secret": "backtest"}).json()
        headers = {"Authorization": f"Bearer {token['access_token']}"}
        order = strategy.first
        paths = {
            "order": f"/v2/profiles/default/orders/{order['id']}",
            "resting": f"/v2/profiles/default/orders/{strategy.resting['id']}",
            "orders": "/v2/profiles/default/orders",
            "executions": "/v2/executions",
            "balances": "/v2/profiles/default/balances",
            "balance": "/v2/profiles/default/balances/BTC",
        }
        for name, path in paths.items():
            response = http.get(path, headers=headers)
            assert response.status_code == 200, response.text
            assert response.json() == strategy.answers[name], name
    finally:
        http.close()
        http.app.state.queries.close()  # type: ignore[attr-defined]
        engine.stop()


class BalanceProbe(Strategy):
    """At every point: trades, then each balance read both from the state (what the
    strategy API answers) and from the read model's rows (the HTTP API's answer)."""

    def __init__(self) -> None:
        self.k = 0
        self.pairs: list[tuple[Any, Any]] = []
        self.refusals: list[tuple[str, str]] = []

    def on_price(self, market: str, time: datetime, price: Decimal) -> None:
        api = self.api
        self.k += 1
        if self.k == 1:
            api.create_order(side="BUY", market=market, type="MARKET", quote_amount="5000")
        elif self.k == 2:  # a resting order: funds move to `trading`
            api.create_order(side="BUY", market=market, type="LIMIT", price="1000", base_amount="1")
        elif self.k == 3:
            api.create_order(side="SELL", market=market, type="MARKET", base_amount="0.05")
        rows = api._r.read  # the read model, every row held back written first
        for asset in ("USD", "BTC", "ETH"):
            self.pairs.append(
                (
                    api.get_profile_balance(asset),
                    rows(lambda q, c, a=asset: q.balance(c, "default", a)),
                )
            )
        self.pairs.append(
            (api.list_profile_balances(), rows(lambda q, c: q.balances(c, "default")))
        )
        for asset, profile in (("XYZ", "default"), ("USD", "no-such-profile")):
            with pytest.raises(ApiError) as ours:
                api.get_profile_balance(asset, profile)
            with pytest.raises(ApiError) as theirs:
                rows(lambda q, c, a=asset, p=profile: q.balance(c, p, a))
            self.refusals.append((str(ours.value), str(theirs.value)))


def test_balance_reads_from_the_state_answer_what_the_read_model_answers(
    tmp_path: Path,
) -> None:
    probe = BalanceProbe()
    backtest(tmp_path, ["42000", "42100", "41900", "42050"], probe, db=None)
    assert len(probe.pairs) == 16
    for ours, theirs in probe.pairs:
        assert ours == theirs
    moved = {b["asset"]: b for b in probe.pairs[-1][0]["items"]}
    assert moved["BTC"]["available"] != "0" and moved["USD"]["trading"] == "1000"
    assert "not found: XYZ" in probe.refusals[0][0]
    for ours, theirs in probe.refusals:
        assert ours == theirs


def test_the_same_data_flow_and_seed_give_the_same_report_and_log(tmp_path: Path) -> None:
    def twice(seed: int, folder: str) -> Any:
        script = Script({0: limit_buy("41000"), 2: limit_buy("41500")})
        prices = [str(42000 - 400 * (k % 5)) for k in range(40)]
        return backtest(tmp_path / folder, prices, script, seed=seed, db=None)

    a, b, c = twice(3, "a"), twice(3, "b"), twice(4, "c")
    assert a.summary == b.summary and a.log_hash == b.log_hash
    assert a.executions == b.executions and a.equity == b.equity
    assert c.log_hash != a.log_hash  # ids come from the seed


def test_the_backtest_database_verifies_and_travels(tmp_path: Path, database: Any) -> None:
    script = Script({0: limit_buy("41000"), 3: limit_buy("40000")})
    prices = ["42000", "40900", "42000", "41000", "39000"]
    result = backtest(tmp_path, prices, script, db=database("bt.db"))
    assert verify(str(result.db)) == []
    gone = travel(result.db, tmp_path / "then.db", until=START + timedelta(seconds=90))
    assert gone.events < len(events(result.db))
    assert verify(str(tmp_path / "then.db")) == []


def test_callbacks_come_after_the_callback_that_caused_them(tmp_path: Path, database: Any) -> None:
    order: list[str] = []

    class Nested(Strategy):
        def on_start(self, api: Api) -> None:
            api.create_order(side="BUY", market="BTCUSD", type="MARKET", quote_amount="100")
            order.append("start returned")
            api.set_timer("later", after=timedelta(seconds=30))

        def on_fill(self, execution: dict[str, Any]) -> None:
            order.append("fill")

        def on_order(self, o: dict[str, Any]) -> None:
            order.append(f"order {o['status']}")

        def on_timer(self, name: str, time: datetime) -> None:
            order.append(f"timer {name} {time.isoformat()}")

    backtest(tmp_path, ["42000", "42000", "42000"], Nested(), db=database("bt.db"))
    assert order == [
        "start returned",
        "fill",
        "order FILLED",
        "timer later 2024-01-01T00:00:30+00:00",
    ]


def test_bars_fill_a_limit_on_the_way_down_at_the_bars_last_instant(tmp_path: Path) -> None:
    data = tmp_path / "bars.csv"
    data.write_text(
        f"timestamp,open,high,low,close\n{T0},42000,43000,40000,42500\n"
        f"{T0 + 3600},42500,42600,42400,42550\n"
    )

    class Rest(Script):
        def on_start(self, api: Api) -> None:
            limit_buy("40500")(api)

    script = Rest()
    run(data, "BTCUSD", strategy=script, settings=CHECKED)
    fill = next(v for kind, v in script.seen if kind == "fill")
    # The path inside the bar is one instant, its last microsecond; the order trades at
    # its own price where the walk from the open to the low meets it.
    assert fill["executed_at"] == "2024-01-01T00:59:59.999999Z"
    assert fill["price"] == "40500.00"


def test_amounts_must_not_be_floats(tmp_path: Path, database: Any) -> None:
    def floaty(api: Api) -> Any:
        with pytest.raises(TypeError, match="Decimal"):
            api.create_order(side="BUY", market="BTCUSD", type="MARKET", quote_amount=10.5)

    backtest(tmp_path, ["42000"], Script({0: floaty}), db=database("bt.db"))


def test_bad_inputs_are_refused_before_anything_runs(tmp_path: Path) -> None:
    data = prices_csv(tmp_path, ["42000"])
    with pytest.raises(BacktestError, match="exactly one of a strategy and a flow"):
        run(data, "BTCUSD")
    with pytest.raises(BacktestError, match="not a sandex market"):
        run(data, "DOGEUSD", strategy=Script())
    with pytest.raises(BacktestError, match="bad.csv:2"):
        run(prices_csv(tmp_path, ["oops"], name="bad.csv"), "BTCUSD", strategy=Script())
    with pytest.raises(BacktestError, match="decided by the backtest"):
        run(data, "BTCUSD", strategy=Script(), settings={"clock": "wall"})
    (tmp_path / "exists.db").write_text("")
    with pytest.raises(BacktestError, match="exists already"):
        run(data, "BTCUSD", strategy=Script(), db=tmp_path / "exists.db")


def test_withdrawals_leave_pnl_alone_and_complete_on_engine_time(
    tmp_path: Path, database: Any
) -> None:
    class Withdraw(Strategy):
        def on_start(self, api: Api) -> None:
            self.transfer = api.create_crypto_withdrawal(
                profile_id="default",
                asset="BTC",
                destination_address="bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq",
                crypto_network="BITCOIN",
                amount="0.001",
            )

        def on_end(self, api: Api) -> None:
            self.final = api.get_transfer(self.transfer["id"])

    strategy = Withdraw()
    prices = ["42000"] * 120  # two hours of minutes: the withdrawal confirms meanwhile
    result = backtest(
        tmp_path, prices, strategy, deposits={"BTC": "1", "USD": "1000"}, db=database("bt.db")
    )
    assert strategy.transfer["status"] == "PENDING"
    assert strategy.final["status"] == "COMPLETED"
    s = result.summary
    assert Decimal(s["final_balances"]["BTC"]["available"]) < Decimal("0.999")  # and its fee
    assert Decimal(s["external_flows"]) < 0
    assert s["pnl"] == "0"  # nothing traded, the price never moved


def test_two_markets_from_one_file_trade_side_by_side(tmp_path: Path) -> None:
    data = tmp_path / "two.csv"
    rows = [f"BTCUSD,{T0 + 60 * k},{42000 - 100 * k}\n" for k in range(5)]
    rows += [f"ETHUSD,{T0 + 60 * k + 30},{2300 - 10 * k}\n" for k in range(5)]
    data.write_text("market,timestamp,price\n" + "".join(rows))

    class Both(Strategy):
        def on_start(self, api: Api) -> None:
            self.seen: list[str] = []
            api.create_order(
                side="BUY", market="BTCUSD", type="LIMIT", price="41750", base_amount="0.1"
            )
            api.create_order(
                side="BUY", market="ETHUSD", type="LIMIT", price="2275", base_amount="1"
            )

        def on_price(self, market: str, time: datetime, price: Decimal) -> None:
            self.seen.append(market)

    strategy = Both()
    told: list[tuple[int, int]] = []
    result = run(
        data,
        ["BTCUSD", "ETHUSD"],
        strategy=strategy,
        settings=CHECKED,
        progress=lambda done, total: told.append((done, total)),
    )
    assert told == [(0, 10), (10, 10)]  # the first point, then the end (every 4,096)
    assert strategy.seen == ["BTCUSD", "ETHUSD"] * 5
    fills = {(e["market"], e["price"]) for e in result.executions}
    assert fills == {("BTCUSD", "41750.00"), ("ETHUSD", "2275.00")}
    assert result.summary["markets"] == ["BTCUSD", "ETHUSD"]


# The meta values, and on PostgreSQL the log head's count of commits: one transaction
# against one a command, by design.
_NOT_DUMPED = ("sandex_meta", "log_head")


def _dump(db: Path | str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table but the meta table, in key order, with the credential
    material drawn from the OS (a client's salt and secret hash) masked."""
    dump = {
        t: query(db, f"SELECT * FROM {t} ORDER BY 1, 2") for t in tables(db) if t not in _NOT_DUMPED
    }
    dump["events"] = masked_log(db)
    dump["clients"] = [(*r[:2], REDACTED, REDACTED, *r[4:]) for r in dump["clients"]]
    return dump


def test_one_transaction_writes_what_a_commit_per_command_writes(
    database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = Path(__file__).resolve().parents[2] / "scenarios" / "backtests"

    def ma_cross(db: Path | str) -> Any:
        return run(
            examples / "btcusd_hourly.csv",
            "BTCUSD",
            strategy=f"{examples / 'ma_cross.py'}:MaCross",
            taker_fee="0.001",
            db=db,
            seed=5,
            settings=CHECKED,
        )

    held = ma_cross(database("held.db"))
    with monkeypatch.context() as m:
        m.setattr(Engine, "one_transaction", lambda self, **_: contextlib.nullcontext())
        # and no chains: each price setting decided and committed on its own
        m.setattr(Runner, "act", lambda self, command: (self.sync(), self._run(command))[1])
        each = ma_cross(database("each.db"))
    assert held.summary["orders"]["total"] >= 3
    assert held.log_hash == each.log_hash and held.summary == each.summary
    assert _dump(database("held.db")) == _dump(database("each.db"))
    assert verify(str(database("held.db"))) == []


class _Churn(Strategy):
    """Limit orders that rest and fill, cancels, market orders and a stop, each decided
    on what the strategy reads back (the order's status, its balances, its orders)."""

    def __init__(self) -> None:
        self.k = 0
        self.last: str | None = None
        self.seen: list[Any] = []

    def on_price(self, market: str, time: datetime, price: Decimal) -> None:
        api = self.api
        self.k += 1
        if self.last is not None:
            status = api.get_order(self.last)["status"]
            self.seen.append(status)
            if status == "OPEN" and self.k % 3:
                api.cancel_order(self.last)
                self.seen.append(api.get_order(self.last)["status"])
        below = (price * Decimal("0.9995")).quantize(Decimal("1"))
        self.last = api.create_order(
            side="BUY", market=market, type="LIMIT", price=below, base_amount="0.01"
        )["id"]
        if self.k % 4 == 0:
            api.create_order(side="BUY", market=market, type="MARKET", quote_amount="300")
        if self.k % 5 == 0 and Decimal(api.get_profile_balance("BTC")["available"]) > 0:
            api.create_order(
                side="SELL",
                market=market,
                type="STOP_MARKET",
                stop_price=(price * Decimal("0.999")).quantize(Decimal("1")),
                base_amount="0.001",
            )
        self.seen.append(api.list_profile_orders(limit=3)["items"][0]["status"])


def test_one_transaction_keeps_the_log_in_memory_and_writes_the_same_bytes(
    tmp_path: Path, database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside `one_transaction` the writer holds events and rows back and writes them
    together: the database is the one a commit per command writes, and the strategy
    reads what it would have read, whether the writes come every few events (reads
    between them flush) or at the end."""
    from sandex.engine.runtime import commit_strategies

    walk = [str(42000 + (k * 37) % 23 - (k % 5) * 4) for k in range(60)]

    def churn(name: str) -> tuple[Any, list[Any]]:
        strategy = _Churn()
        result = backtest(
            tmp_path / name, walk, strategy, deposits={"USD": "100000"}, db=database(f"{name}.db")
        )
        return result, strategy.seen

    with monkeypatch.context() as m:
        m.setattr(commit_strategies, "DEFER_EVENTS", 5)
        often, seen_often = churn("often")
    once, seen_once = churn("once")
    with monkeypatch.context() as m:
        m.setattr(Engine, "one_transaction", lambda self, **_: contextlib.nullcontext())
        m.setattr(Runner, "act", lambda self, command: (self.sync(), self._run(command))[1])
        each, seen_each = churn("each")
    assert len(once.fills) > 10 and {"OPEN", "CANCELLED", "FILLED"} <= set(seen_once)
    assert seen_often == seen_once == seen_each
    assert often.log_hash == once.log_hash == each.log_hash
    assert _dump(often.db) == _dump(once.db) == _dump(each.db)
    assert verify(str(once.db)) == [] and verify(str(often.db)) == []


class _ReadsLate(Strategy):
    """Orders placed, filled and cancelled with nothing read until the end."""

    def __init__(self) -> None:
        self.k = 0
        self.last: str | None = None
        self.seen: list[Any] = []

    def on_price(self, market: str, time: datetime, price: Decimal) -> None:
        self.k += 1
        if self.last is not None and self.k % 2:
            with contextlib.suppress(ApiError):
                self.api.cancel_order(self.last)
        self.last = self.api.create_order(
            side="BUY", market=market, type="LIMIT", price=price - 3, base_amount="0.01"
        )["id"]

    def on_end(self, api: Api) -> None:
        self.seen = [
            api.list_profile_orders(limit=100)["items"],
            api.list_executions(limit=100)["items"],
            api.list_profile_balances()["items"],
        ]


def test_a_run_without_a_database_writes_its_read_models_when_read(
    tmp_path: Path, database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """...or once `DEFER_ROWS` entities wait for their rows (here 3): either way the
    reads at the end see what a run that keeps its log shows."""
    from sandex.engine.runtime import commit_strategies

    walk = [str(42000 + (k * 37) % 23 - (k % 5) * 4) for k in range(40)]
    kept, scratch, bounded = _ReadsLate(), _ReadsLate(), _ReadsLate()
    with_db = backtest(
        tmp_path / "kept", walk, kept, deposits={"USD": "100000"}, db=database("kept.db")
    )
    without = backtest(tmp_path / "scratch", walk, scratch, deposits={"USD": "100000"}, db=None)
    with monkeypatch.context() as m:
        m.setattr(commit_strategies, "DEFER_ROWS", 3)
        m.setattr(commit_strategies, "DEFER_EVENTS", 4)
        backtest(tmp_path / "bounded", walk, bounded, deposits={"USD": "100000"}, db=None)
    assert len(with_db.fills) >= 3 and len(kept.seen[0]) == 40
    assert scratch.seen == kept.seen == bounded.seen and without.log_hash == with_db.log_hash


def test_a_run_without_a_database_makes_no_feed_and_the_same_log(
    tmp_path: Path, database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scratch log (no `db`) is dropped unread, so its event feed is never made: the
    log, the strategy's reads and the result are those of a run that keeps its log."""
    from sandex.engine.domain import feed

    made: list[str] = []
    add = feed._add
    monkeypatch.setattr(feed, "_add", lambda *a: (made.append(a[3]), add(*a))[1])
    walk = [str(42000 + (k * 37) % 23 - (k % 5) * 4) for k in range(40)]
    kept, scratch = _Churn(), _Churn()
    with_db = backtest(
        tmp_path / "kept", walk, kept, deposits={"USD": "100000"}, db=database("kept.db")
    )
    fed = len(made)
    without = backtest(tmp_path / "scratch", walk, scratch, deposits={"USD": "100000"}, db=None)
    assert fed > 0 and len(made) == fed
    assert kept.seen == scratch.seen and len(with_db.fills) > 5
    assert without.log_hash == with_db.log_hash and without.summary == with_db.summary
    assert without.executions == with_db.executions
    assert query(with_db.db, "SELECT count(*) FROM event_feed")[0][0] > 0


def test_one_transaction_is_seen_by_its_writer_only_until_it_ends(database: Any) -> None:
    db = database("one.db")
    engine = open_engine(db, make_settings())
    try:
        with engine.one_transaction():
            made = engine.run_inline(
                CreateCustomer(client_id="me", client_secret="pw", bootstrap=True)
            )
            me = Actor(made["customer_id"], "me")
            engine.run_inline(
                SandboxDeposit(actor=me, profile_id="default", asset="USD", amount="100")
            )
            # held in memory until flushed (or the block ends), then seen by the writer
            assert engine.store.last_position() == 0
            engine.flush()
            assert engine.store.last_position() == engine.state.position > 0
            # nothing is acknowledged yet: a crash now would leave no event
            assert query(db, "SELECT count(*) FROM events") == [(0,)]
        assert len(events(db)) == engine.state.position
    finally:
        engine.stop()
    assert verify(str(db)) == []


def test_a_decision_that_breaks_inside_one_transaction_is_undone_alone(
    database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sandex.engine.domain.transfers import funding

    deposit = funding.DECIDERS[SandboxDeposit]

    def breaking(ctx: Any, command: SandboxDeposit) -> Any:
        deposit(ctx, command)
        if command.amount == "7":
            raise RuntimeError("a bug after emitting")

    db = database("broken.db")
    engine = open_engine(db, make_settings())
    try:
        with engine.one_transaction():
            made = engine.run_inline(
                CreateCustomer(client_id="me", client_secret="pw", bootstrap=True)
            )
            me = Actor(made["customer_id"], "me")
            pay = lambda amount: SandboxDeposit(  # noqa: E731
                actor=me, profile_id="default", asset="USD", amount=amount
            )
            engine.run_inline(pay("100"))
            monkeypatch.setitem(engine.registry.deciders, SandboxDeposit, breaking)
            with pytest.raises(RuntimeError):
                engine.run_inline(pay("7"))
            engine.run_inline(pay("5"))
        balance = engine.state.ledger.balance(f"{made['profile_id']}:available", "USD")
        assert balance == Decimal("105")
    finally:
        engine.stop()
    amounts = [d["transfer"]["amount"] for t, d, _ in events(db) if t == "TransferCreated"]
    assert amounts == ["100", "5"]
    assert verify(str(db)) == []


def test_an_order_that_breaks_after_its_price_is_set_gets_the_price_set_again(
    tmp_path: Path, database: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sandex.engine.domain import trading

    create = trading.DECIDERS[CreateOrder]

    def breaking(ctx: Any, command: CreateOrder) -> Any:
        answer = create(ctx, command)
        if command.base_amount == "0.07":
            raise RuntimeError("a bug after emitting")
        return answer

    monkeypatch.setitem(trading.DECIDERS, CreateOrder, breaking)  # read by the next engine
    caught: list[str] = []

    def broken_then_fine(api: Api) -> Any:
        try:
            return limit_buy("41000", "0.07")(api)
        except RuntimeError as exc:
            caught.append(str(exc))
        return limit_buy("41000", "0.1")(api)  # at the same point

    script = Script({1: broken_then_fine})
    prices = ["42000", "42100", "42100", "42200"]
    result = backtest(tmp_path, prices, script, db=database("bt.db"))
    assert caught == ["a bug after emitting"]
    logged = [(t, d.get("price")) for t, d, _ in events(result.db)]
    placed = [k for k, (t, _) in enumerate(logged) if t == "OrderPlaced"]
    assert len(placed) == 1  # the broken order left nothing; its price was set again
    assert logged[placed[0] - 1] == ("MarketPriceSet", "42100.00")
    assert verify(str(result.db)) == []
    # without a database the log is set aside, out of the events table, until the broken
    # decision reloads the state from it: the same run
    again = Script({1: broken_then_fine})
    scratch = backtest(tmp_path / "scratch", ["42000", "42100", "42100", "42200"], again, db=None)
    assert caught == ["a bug after emitting"] * 2
    assert scratch.log_hash == result.log_hash and scratch.summary == result.summary
    assert again.seen == script.seen
