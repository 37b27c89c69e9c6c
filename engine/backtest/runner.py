"""Backtests: an order flow run against historical prices on the sandbox's own engine.

The engine is the sandbox's, on a manual clock, with a still synthetic path (volatility
0): the data file is the reference path. The runner walks the price points in time
order and, for each one, does engine work only when the engine could react to it:

- the point's price would cross resting interest (a limit order the fresh ladder
  reaches, a stop the last price falls to): the clock moves to the point and its price
  is set (`MarketPriceSet`), which fills and triggers exactly as in the sandbox;
- an engine deadline (GTT expiry, submission latency, a withdrawal) falls before the
  point: the clock moves there, firing it on the way at its own time;
- the strategy acts: the clock moves to now and the latest price is set first.

Any other point only moves the runner's cursor: it writes no event and costs a few
comparisons against thresholds kept in price ticks. Setting a price later than its
point changes nothing the engine decides (with a still path the reference is the last
price set, whenever it was set), so the log is that of a run that set every price.

The runner is the engine's only writer (`Engine.run_inline`, no writer thread), and
notifications (`on_fill`, `on_order`) are queued and delivered once the callback that
caused them has returned, so strategy code is never re-entered.
"""

from __future__ import annotations

import heapq
import importlib
import importlib.util
import math
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.backtest.price_files import MarketDataError, Series, from_micros, load_many, to_micros
from engine.config.settings import Settings
from engine.config.yaml_errors import describe as describe_yaml_error
from engine.domain.trading.market import MarketConfig
from engine.domain.trading.orders import execution_view, order_view, trading_state
from engine.kernel.clock import ManualClock, format_time, parse_time
from engine.kernel.commands import (
    Actor,
    AdvanceClock,
    CancelOrder,
    CreateCryptoWithdrawal,
    CreateCustomer,
    CreateOrder,
    CreateWithdrawalFee,
    ReadMarket,
    SandboxDeposit,
    SetMarketPrice,
)
from engine.kernel.errors import DomainError
from engine.kernel.money import MARKETS
from engine.kernel.progress import EVERY as _PROGRESS_EVERY
from engine.kernel.progress import Progress
from engine.read.queries import Page, Queries
from engine.runtime.composition import open_engine
from engine.runtime.writer import Engine, NotDecided
from engine.store import SqliteEventStore

INF = 1 << 62
CLIENT_ID = "backtest"
# Settings a backtest decides itself: the data is the path, and time is the data's.
_FIXED = ("clock", "clock_start", "market_volatility", "seed", "execution_ids")


class BacktestError(ValueError):
    """A backtest that cannot start: bad data, flow, strategy or settings."""


class ApiError(Exception):
    """What the HTTP API would answer as a problem: `problem` is that body."""

    def __init__(self, problem: dict[str, Any]) -> None:
        super().__init__(f"{problem.get('status')} {problem.get('detail')}")
        self.problem = problem
        self.status: int = problem.get("status", 400)
        self.detail: str = problem.get("detail", "")


class Strategy:
    """Base class of an order flow written in Python; every callback is optional.

    `self.api` (also passed to `on_start`) places and reads orders with the HTTP API's
    operations and shapes. Callbacks run one at a time; fills and order changes caused
    by a callback are delivered after it returns."""

    api: Api

    def on_start(self, api: Api) -> None:
        """Before the first price point is delivered; the market stands at its first price."""

    def on_price(self, market: str, time: datetime, price: Decimal) -> None:
        """Each reference price point, in time order (bar data: four per bar)."""

    def on_bar(self, market: str, bar: Any) -> None:
        """Bar data only: a bar (`engine.backtest.price_files.Bar`) once its close point is set."""

    def on_fill(self, execution: dict[str, Any]) -> None:
        """One execution of one of this flow's orders, as `GET /v2/executions` shows it."""

    def on_order(self, order: dict[str, Any]) -> None:
        """An order changed (created, opened, triggered, filled, cancelled...): its view."""

    def on_timer(self, name: str, time: datetime) -> None:
        """A timer set with `api.set_timer` is due."""

    def on_end(self, api: Api) -> None:
        """After the last price point, at its time."""


def _text(value: Any, name: str) -> str | None:
    """Amounts travel as text, as in JSON bodies; a float would carry binary noise."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TypeError(f"{name}: give a string or a Decimal, not {type(value).__name__}")


class Api:
    """The HTTP API's operations for one customer, over the backtest's engine.

    Each method is named after its HTTP operation and takes the request body's fields
    as keywords; it answers the dict the HTTP API answers, or raises `ApiError` with the
    problem body the HTTP API would send."""

    def __init__(self, runner: _Runner) -> None:
        self._r = runner

    # -- time and prices ---------------------------------------------------------------

    @property
    def now(self) -> datetime:
        return from_micros(self._r.now_us)

    def price(self, market: str) -> Decimal:
        """The market's latest reference price point."""
        r = self._r
        m = r.market_index(market)
        return r.prices[r.seen[m]]

    def set_timer(
        self, name: str, *, at: datetime | None = None, after: timedelta | None = None
    ) -> None:
        """Call `on_timer(name, time)` at a time (between price points too)."""
        if (at is None) == (after is None):
            raise ValueError("give exactly one of at and after")
        if at is not None:
            when = to_micros(at)
        else:
            assert after is not None
            when = self._r.now_us + after // timedelta(microseconds=1)
        self._r.add_timer(max(when, self._r.now_us), name)

    # -- orders ------------------------------------------------------------------------

    def create_order(
        self,
        profile_id: str = "default",
        *,
        side: str,
        market: str,
        type: str,
        base_amount: Any = None,
        price: Any = None,
        quote_amount: Any = None,
        stop_price: Any = None,
        time_in_force: str | None = None,
        expiration_date: Any = None,
        ref_id: str | None = None,
        metadata: dict[str, str] | None = None,
        identity_id: str | None = None,
        identity_account_id: str | None = None,
        recipient_profile_id: str | None = None,
        self_match_prevention_id: str | None = None,
        await_fill_millis: int | None = None,
    ) -> dict[str, Any]:
        """POST /v2/profiles/{profile_id}/orders"""
        r = self._r
        command = CreateOrder(
            actor=r.actor,
            profile_id=profile_id,
            side=side,
            market=market,
            type=type,
            ref_id=ref_id,
            base_amount=_text(base_amount, "base_amount"),
            price=_text(price, "price"),
            quote_amount=_text(quote_amount, "quote_amount"),
            metadata=metadata,
            await_fill_millis=await_fill_millis,
            time_in_force=time_in_force,
            expiration_date=_text(expiration_date, "expiration_date"),
            identity_id=identity_id,
            identity_account_id=identity_account_id,
            stop_price=_text(stop_price, "stop_price"),
            recipient_profile_id=recipient_profile_id,
            self_match_prevention_id=self_match_prevention_id,
            may_prevent_self_match=True,
        )
        order: dict[str, Any] = r.act(command)
        return order

    def cancel_order(self, id: str, profile_id: str = "default") -> dict[str, Any]:
        """DELETE /v2/profiles/{profile_id}/orders/{id}"""
        result: dict[str, Any] = self._r.act(
            CancelOrder(actor=self._r.actor, profile_id=profile_id, order_id=id)
        )
        return result

    def get_order(self, id: str, profile_id: str = "default") -> dict[str, Any]:
        """GET /v2/profiles/{profile_id}/orders/{id}"""
        return self._r.read(lambda q, c: q.order(c, profile_id, id))

    def list_profile_orders(
        self,
        profile_id: str = "default",
        *,
        market: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """GET /v2/profiles/{profile_id}/orders"""
        page = Page(limit=limit)
        return self._r.read(
            lambda q, c: q.list_orders(c, page, profile_id=profile_id, market=market, status=status)
        )

    def list_executions(
        self,
        profile_id: str | None = None,
        *,
        order_id: str | None = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """GET /v2/executions"""
        page = Page(limit=limit)
        return self._r.read(
            lambda q, c: q.list_executions(c, page, profile_id=profile_id, order_id=order_id)
        )

    # -- balances and transfers ----------------------------------------------------------

    def list_profile_balances(
        self, profile_id: str = "default", assets: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """GET /v2/profiles/{profile_id}/balances"""
        result = self._r.read(lambda q, c: q.balances(c, profile_id))
        if assets:
            wanted = set(assets)
            result["items"] = [b for b in result["items"] if b["asset"] in wanted]
        return result

    def get_profile_balance(self, asset: str, profile_id: str = "default") -> dict[str, Any]:
        """GET /v2/profiles/{profile_id}/balances/{asset}"""
        return self._r.read(lambda q, c: q.balance(c, profile_id, asset))

    def create_sandbox_deposit(
        self, asset: str, amount: Any, profile_id: str = "default"
    ) -> dict[str, Any]:
        """POST /v2/sandbox/profiles/{profile_id}/deposit"""
        result: dict[str, Any] = self._r.act(
            SandboxDeposit(
                actor=self._r.actor,
                profile_id=profile_id,
                asset=asset,
                amount=_text(amount, "amount") or "",
            )
        )
        return result

    def create_crypto_withdrawal_fee(self, **body: Any) -> dict[str, Any]:
        """POST /v2/transfer/fees/crypto-withdrawal"""
        for name in ("amount", "total"):
            body[name] = _text(body.get(name), name)
        result: dict[str, Any] = self._r.act(CreateWithdrawalFee(actor=self._r.actor, **body))
        return result

    def create_crypto_withdrawal(self, **body: Any) -> dict[str, Any]:
        """POST /v2/transfer/crypto-withdrawals"""
        for name in ("amount", "total"):
            body[name] = _text(body.get(name), name)
        result: dict[str, Any] = self._r.act(CreateCryptoWithdrawal(actor=self._r.actor, **body))
        return result

    def get_transfer(self, id: str) -> dict[str, Any]:
        """GET /v2/transfer/transfers/{id}"""
        return self._r.read(lambda q, c: q.transfer(c, id))

    # -- market data -----------------------------------------------------------------------

    def get_ticker(self, market: str) -> dict[str, Any]:
        """GET /v2/markets/{market}/ticker"""
        result: dict[str, Any] = self._r.act(ReadMarket(view="ticker", market=market))
        return result

    def get_order_book(self, market: str) -> dict[str, Any]:
        """GET /v2/markets/{market}/order-book"""
        result: dict[str, Any] = self._r.act(ReadMarket(view="book", market=market))
        return result


# -- the runner ------------------------------------------------------------------------------


@dataclass
class Fill:
    """An execution as the report needs it."""

    view: dict[str, Any]
    order_type: str
    reference: Decimal | None  # the reference price when the order was created
    liquidity: str


class _Runner:
    def __init__(
        self,
        engine: Engine,
        series: dict[str, Series],
        strategy: Any,
        progress: Progress | None,
        assets: Sequence[str],
    ) -> None:
        self.engine = engine
        self.strategy = strategy
        self.progress = progress
        self.markets = list(series)
        self.index = {name: i for i, name in enumerate(self.markets)}
        cfg = MarketConfig.of(engine.settings)
        self.half_spread = cfg.half_spread
        self.ticks_of = [MARKETS[name].tick for name in self.markets]
        self.times, self.mks, self.prices, self.ticks, self.bars = _merge(series, self.ticks_of)
        self.seen = [self.mks.index(m) for m in range(len(self.markets))]
        self.set_at = [-1] * len(self.markets)
        self.lo = [-1] * len(self.markets)
        self.hi = [INF] * len(self.markets)
        self.wake = INF
        self.now_us = self.times[0]
        self.timers: list[tuple[int, int, str]] = []
        self.timer_seq = 0
        self.position = 0
        self.actor = Actor("", CLIENT_ID)
        self.profile_id = ""
        self.queries: Queries | None = None
        self.notices: list[tuple[str, Any]] = []
        self.delivering = False
        self.fills: list[Fill] = []
        self.reference_at_order: dict[str, Decimal] = {}
        self.assets = list(assets)
        # (time in us, holdings per asset in `assets` order), whenever they change
        self.holdings: list[tuple[int, tuple[Decimal, ...]]] = []
        # (time in us, asset, amount) moved in or (negative) out other than by trading
        self.flows: list[tuple[int, str, Decimal]] = []
        self.commands = 0
        self.api = Api(self)

    # -- engine access ------------------------------------------------------------------

    def market_index(self, market: str) -> int:
        m = self.index.get(market)
        if m is None:
            raise ValueError(f"market {market} has no price data in this backtest")
        return m

    def _run(self, command: Any) -> Any:
        self.commands += 1
        try:
            return self.engine.run_inline(command)
        except DomainError as exc:
            raise ApiError(exc.problem()) from None
        finally:
            self._after()

    def _after(self) -> None:
        """Queue what the last command did, and refresh thresholds and the wake time."""
        engine = self.engine
        if engine.state.position != self.position:
            done = engine.committed
            if (
                done
                and done[0].position == self.position + 1
                and done[-1].position == engine.state.position
            ):
                self._collect(done)  # the command's own events, as committed
            else:
                self._collect(engine.store.read(after=self.position, with_meta=False))
            self.position = engine.state.position
        tr = trading_state(engine.state)
        h = self.half_spread
        for m, name in enumerate(self.markets):
            best_bid, best_ask, top_stop = tr.markets[name].thresholds()
            # A point crosses when the fresh ladder's first ask reaches the best bid,
            # its first bid the best ask, or its price a stop; two ticks of slack
            # cover the float rounding of the ladder.
            lo = math.floor(best_bid / (1.0 + h)) + 2 if best_bid >= 0 else -1
            self.lo[m] = max(lo, top_stop)
            self.hi[m] = math.ceil(best_ask / (1.0 - h)) - 2 if h < 1.0 and best_ask < INF else INF
        deadline = engine.next_deadline()
        self.wake = INF if deadline is None else to_micros(deadline)

    def _collect(self, events: Iterable[Any]) -> None:
        tr = trading_state(self.engine.state)
        touched: dict[str, None] = {}
        moved = False
        for e in events:
            data = e.data
            if e.type == "TradeExecuted":
                for key in ("buy", "sell"):
                    side = data.get(key)
                    if side is None:
                        continue
                    number = side["execution_id"]
                    record = tr.executions[number]
                    view = execution_view(self.engine.execution_ids.public(number), record)
                    o = record[0]
                    self.fills.append(
                        Fill(view, o.type, self.reference_at_order.get(o.id), record[5])
                    )
                    self.notices.append(("fill", view))
                    touched[side["order_id"]] = None
            elif e.type == "OrderPlaced":
                placed = data["order"]
                touched[placed["id"]] = None
                m = self.index.get(placed["market"])
                if m is not None:
                    self.reference_at_order[placed["id"]] = self.prices[self.seen[m]]
            elif e.type.startswith("Order"):
                touched[data["order_id"]] = None
            elif data.get("postings"):
                self._flow(e)
            if data.get("postings"):
                moved = True
        for order_id in touched:
            self.notices.append(("order", order_id))
        if moved:
            self._snapshot()

    def _flow(self, e: Any) -> None:
        """Value that entered or left the profile other than by trading (deposits,
        withdrawals), which profit and loss leave out."""
        prefix = self.profile_id + ":"
        delta: dict[str, Decimal] = {}
        for source, target, asset, amount in e.data["postings"]:
            sign = (1 if target.startswith(prefix) else 0) - (1 if source.startswith(prefix) else 0)
            if sign:
                delta[asset] = delta.get(asset, Decimal(0)) + sign * Decimal(amount)
        at = to_micros(parse_time(e.occurred_at))
        for asset, value in delta.items():
            if value:
                self.flows.append((at, asset, value))

    def _snapshot(self) -> None:
        balances = self.engine.state.ledger.balances
        pid = self.profile_id
        held = tuple(
            balances.get((f"{pid}:available", a), Decimal(0))
            + balances.get((f"{pid}:trading", a), Decimal(0))
            + balances.get((f"{pid}:withdrawing", a), Decimal(0))
            for a in self.assets
        )
        if not self.holdings or self.holdings[-1][1] != held:
            self.holdings.append((self.now_us, held))

    def read(self, query: Callable[[Queries, str], dict[str, Any]]) -> dict[str, Any]:
        if self.queries is None:
            self.queries = _WriterQueries(self.engine)
        try:
            return query(self.queries, self.actor.customer_id)
        except DomainError as exc:
            raise ApiError(exc.problem()) from None

    def act(self, command: Any) -> Any:
        """A strategy's command: the engine first catches up with now. The prices that
        brings are set in one chain with the command (`Engine.run_inline_chain`): the
        same commands in the same order, one write and one follow-up instead of two."""
        prices = self._catch_up()
        if not prices:
            return self._run(command)
        self.commands += len(prices) + 1
        try:
            chain = self.engine.run_inline_chain([*prices, command])
        finally:
            self._after()
        errors = [chain.errors.get(k) for k in range(len(prices) + 1)]
        first = next((k for k, error in enumerate(errors) if error is not None), len(errors) - 1)
        if first < len(prices) and not isinstance(errors[-1], NotDecided):
            # The command broke after emitting, and the whole chain was undone with it,
            # its prices too: they are set again with the next command.
            for price in prices:
                self.set_at[self.index[price.market]] = -1
            first = len(errors) - 1
        try:
            chain.answer(first)
            return chain.answer(len(prices))
        except DomainError as exc:
            raise ApiError(exc.problem()) from None

    def sync(self) -> None:
        """Bring the engine to `now_us` with every market at its latest point's price."""
        for command in self._catch_up():
            self._run(command)

    def _catch_up(self) -> list[SetMarketPrice]:
        """Bring the clock to `now_us`; the price settings that are due (to be run)."""
        target = from_micros(self.now_us)
        clock = self.engine.clock
        assert isinstance(clock, ManualClock)
        if clock.now() < target:
            if self.wake <= self.now_us:
                self._run(AdvanceClock(to=target))  # fires each deadline on the way at its time
            else:
                # Nothing falls due on the way, and the command that follows records the
                # new time in its events: a ClockAdvanced event would add a commit, not a fact.
                clock.set(target)
        due = []
        for m, i in enumerate(self.seen):
            if self.set_at[m] != i:
                self.set_at[m] = i
                due.append(
                    SetMarketPrice(
                        actor=self.actor, market=self.markets[m], price=format(self.prices[i], "f")
                    )
                )
        return due

    def add_timer(self, when: int, name: str) -> None:
        self.timer_seq += 1
        heapq.heappush(self.timers, (when, self.timer_seq, name))

    # -- notifications ------------------------------------------------------------------

    def deliver(self) -> None:
        """Hand queued fills and order changes to the strategy, oldest first."""
        if self.delivering:
            return
        self.delivering = True
        try:
            notices = self.notices
            tr = trading_state(self.engine.state)
            on_fill = getattr(self.strategy, "on_fill", None)
            on_order = getattr(self.strategy, "on_order", None)
            while notices:
                kind, value = notices.pop(0)
                if kind == "fill":
                    if on_fill is not None:
                        on_fill(value)
                elif on_order is not None:
                    on_order(order_view(tr.orders[value]))
        finally:
            self.delivering = False

    # -- the run ------------------------------------------------------------------------

    def setup(self, deposits: Mapping[str, str]) -> None:
        made = self.engine.run_inline(
            CreateCustomer(client_id=CLIENT_ID, client_secret=CLIENT_ID, bootstrap=True)
        )
        self.actor = Actor(made["customer_id"], CLIENT_ID)
        self.profile_id = made["profile_id"]
        self.position = self.engine.state.position
        for asset, amount in deposits.items():
            self._run(
                SandboxDeposit(actor=self.actor, profile_id="default", asset=asset, amount=amount)
            )
        self.sync()
        self.notices.clear()
        self.flows.clear()
        self.holdings.clear()
        self._snapshot()

    def run(self) -> None:
        strategy = self.strategy
        self.strategy.api = self.api
        on_start = getattr(strategy, "on_start", None)
        if on_start is not None:
            on_start(self.api)
            self.deliver()
        self._loop()
        self.now_us = self.times[-1]
        on_end = getattr(strategy, "on_end", None)
        if on_end is not None:
            on_end(self.api)
            self.deliver()
        self._snapshot()

    def _loop(self) -> None:
        times, mks, ticks, prices, bars = self.times, self.mks, self.ticks, self.prices, self.bars
        names = self.markets
        lo, hi, seen = self.lo, self.hi, self.seen
        strategy = self.strategy
        on_price = _hook(strategy, "on_price")
        on_bar = _hook(strategy, "on_bar") if any(b is not None for b in bars) else None
        timers = self.timers
        notices = self.notices
        deliver = self.deliver
        n = len(times)
        progress = self.progress  # told (points done, points) now and then, and at the end
        for i in range(n):
            t = times[i]
            if t >= self.wake:
                self._wake(t)
            m = mks[i]
            seen[m] = i
            self.now_us = t
            p = ticks[i]
            if p <= lo[m] or p >= hi[m]:
                self.sync()
                if notices:
                    deliver()
            if on_price is not None:
                on_price(names[m], from_micros(t), prices[i])
                if notices:
                    deliver()
            if on_bar is not None and bars[i] is not None:
                on_bar(names[m], bars[i])
                if notices:
                    deliver()
            if timers:
                following = times[i + 1] if i + 1 < n else t + 1
                if timers[0][0] < following:
                    self._fire_timers(following)
            if progress is not None and i % _PROGRESS_EVERY == 0:
                progress(i, n)
        if progress is not None:
            progress(n, n)

    def _wake(self, t: int) -> None:
        """An engine deadline falls at or before `t`: fire it with the prices before `t`."""
        self.sync()
        self.now_us = t
        self._run(AdvanceClock(to=from_micros(t)))
        self.deliver()

    def _fire_timers(self, before: int) -> None:
        on_timer = getattr(self.strategy, "on_timer", None)
        point_time = self.now_us
        while self.timers and self.timers[0][0] < before:
            when, _, name = heapq.heappop(self.timers)
            self.now_us = max(when, point_time)
            if on_timer is not None:
                on_timer(name, from_micros(self.now_us))
                self.deliver()
        self.now_us = point_time

    def close(self) -> None:
        if self.queries is not None:
            self.queries.close()
            self.queries = None


class _WriterQueries(Queries):
    """The HTTP API's queries on the writer's own connection: the runner is the only
    writer, and its connection sees the commands of a held transaction
    (`Engine.one_transaction`) that a read-only connection would not see yet."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine.db_path)
        store = engine.store
        assert isinstance(store, SqliteEventStore)  # a backtest writes a SQLite file
        self._writer = store.conn

    @property
    def conn(self) -> sqlite3.Connection:
        return self._writer


def _hook(strategy: Any, name: str) -> Callable[..., Any] | None:
    """The strategy's callback, or None when it keeps the base class's empty one."""
    method = getattr(strategy, name, None)
    if method is None:
        return None
    if getattr(type(strategy), name, None) is getattr(Strategy, name):
        return None
    return method  # type: ignore[no-any-return]


def _merge(
    series: dict[str, Series], ticks: list[Decimal]
) -> tuple[list[int], list[int], list[Decimal], list[int], list[Any]]:
    """One timeline of every market's points: times, market index, price on the tick,
    price in ticks, and the bar each point closes (None for most)."""
    per_market = []
    for m, s in enumerate(series.values()):
        tick = ticks[m]
        # Half up to the nearest tick: prices are positive, so the integer part of
        # (price + tick / 2) / tick is the rounded quotient, exactly.
        half = tick / 2
        in_ticks = [int((price + half) // tick) for price in s.prices]
        if in_ticks and min(in_ticks) <= 0:
            k = next(k for k, units in enumerate(in_ticks) if units <= 0)
            raise BacktestError(
                f"{s.market}: price {s.prices[k]} at point {k + 1} rounds to zero on the tick {tick}"
            )
        on_tick = [units * tick for units in in_ticks]
        closing: dict[int, Any] = dict(zip(s.closes, s.bars, strict=True))
        per_market.append((s, on_tick, in_ticks, closing))
    if len(per_market) == 1:
        s, on_tick, in_ticks, closing = per_market[0]
        bars: list[Any] = [None] * len(s.times)
        for k, bar in closing.items():
            bars[k] = bar
        return list(s.times), [0] * len(s.times), on_tick, in_ticks, bars
    keyed = heapq.merge(*(_keyed(m, entry[0].times) for m, entry in enumerate(per_market)))
    times: list[int] = []
    mks: list[int] = []
    prices: list[Decimal] = []
    in_all: list[int] = []
    bars_all: list[Any] = []
    for t, m, k in keyed:
        _, on_tick, in_ticks, closing = per_market[m]
        times.append(t)
        mks.append(m)
        prices.append(on_tick[k])
        in_all.append(in_ticks[k])
        bars_all.append(closing.get(k))
    return times, mks, prices, in_all, bars_all


def _keyed(m: int, times: list[int]) -> Iterator[tuple[int, int, int]]:
    return ((t, m, k) for k, t in enumerate(times))


# -- order-flow files ------------------------------------------------------------------------


class _FlowModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FlowStep(_FlowModel):
    """One timed action: exactly one of order, cancel, withdraw, deposit."""

    note: str | None = None
    at: str | None = None
    after: Any = None
    order: dict[str, Any] | None = None
    cancel: str | None = None
    cancel_all: bool = False
    withdraw: dict[str, Any] | None = None
    deposit: dict[str, Any] | None = None
    save: dict[str, str] = Field(default_factory=dict)

    @field_validator("at")
    @classmethod
    def _at(cls, v: str | None) -> str | None:
        if v is not None:
            parse_time(str(v))
        return v


class Flow(_FlowModel):
    """A YAML order flow: timed orders, in the style of a scenario file."""

    version: int = 1
    purpose: str = ""
    market: str | None = None
    data: str | None = None
    seed: int | None = None
    deposits: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    steps: list[FlowStep]
    source: str = Field(default="<flow>", exclude=True)


_ACTIONS = ("order", "cancel", "cancel_all", "withdraw", "deposit")


def load_flow(path: str | Path) -> Flow:
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BacktestError(f"{p}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise BacktestError(f"{p}: not an order flow (not UTF-8 text)") from None
    except yaml.YAMLError as exc:
        raise BacktestError(f"{p}{describe_yaml_error(exc)}") from None
    return flow_from_data(raw, str(p))


def flow_from_data(raw: Any, source: str = "<flow>") -> Flow:
    if not isinstance(raw, dict):
        raise BacktestError(f"{source}: an order flow is a mapping with steps")
    if raw.get("version", 1) != 1:
        raise BacktestError(f"{source}: version {raw.get('version')!r} is not supported (1 is)")
    for k, step in enumerate(raw.get("steps") or []):
        if not isinstance(step, dict):
            raise BacktestError(f"{source}: step {k + 1} is not a mapping")
        kinds = [a for a in _ACTIONS if step.get(a)]
        if len(kinds) != 1:
            raise BacktestError(
                f"{source}: step {k + 1} needs exactly one of {', '.join(_ACTIONS)}"
                f" (found {', '.join(kinds) or 'none'})"
            )
        if ("at" in step) == ("after" in step):
            raise BacktestError(f"{source}: step {k + 1} needs exactly one of at and after")
    try:
        flow = Flow.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BacktestError(f"{source}: {where}: {first['msg']}") from None
    flow.source = source
    return flow


class FlowStrategy(Strategy):
    """Runs a `Flow`: each step at its time, variables saved from answers as scenarios do."""

    def __init__(self, flow: Flow, default_market: str) -> None:
        from engine.tools.scenario_file import parse_duration

        self.flow = flow
        self.market = flow.market or default_market
        self.variables: dict[str, Any] = {}
        self.errors: list[dict[str, Any]] = []
        self.opened: list[str] = []
        self._offsets = []
        for k, step in enumerate(flow.steps):
            try:
                if step.at is not None:
                    self._offsets.append(("at", to_micros(parse_time(step.at))))
                else:
                    delta = parse_duration(step.after)
                    self._offsets.append(("after", delta // timedelta(microseconds=1)))
            except ValueError as exc:
                raise BacktestError(f"{flow.source}: step {k + 1}: {exc}") from None

    def on_start(self, api: Api) -> None:
        start = to_micros(api.now)
        for k, (kind, value) in enumerate(self._offsets):
            when = value if kind == "at" else start + value
            api.set_timer(str(k), at=from_micros(max(when, start)))

    def on_order(self, order: dict[str, Any]) -> None:
        if order["status"] in ("PENDING_SUBMISSION", "SUBMITTED", "OPEN"):
            if order["id"] not in self.opened:
                self.opened.append(order["id"])
        elif order["id"] in self.opened:
            self.opened.remove(order["id"])

    def on_timer(self, name: str, time: datetime) -> None:
        from engine.tools.scenario_file import clock_variables, extract, substitute

        index = int(name)
        step = self.flow.steps[index]
        api = self.api
        variables = {**self.variables, **clock_variables(time)}
        try:
            if step.order is not None:
                body = substitute(step.order, variables)
                body.setdefault("market", self.market)
                answer: Any = api.create_order(**_flow_body(body))
            elif step.cancel is not None:
                answer = api.cancel_order(str(substitute(step.cancel, variables)))
            elif step.cancel_all:
                answer = {"cancelled": []}
                for order_id in list(self.opened):
                    api.cancel_order(order_id)
                    answer["cancelled"].append(order_id)
            elif step.withdraw is not None:
                answer = api.create_crypto_withdrawal(**substitute(step.withdraw, variables))
            else:
                assert step.deposit is not None
                answer = api.create_sandbox_deposit(**substitute(step.deposit, variables))
        except ApiError as exc:
            self.errors.append(
                {"step": index + 1, "time": format_time(time), "note": step.note, **exc.problem}
            )
            return
        except (KeyError, TypeError, ValueError) as exc:
            raise BacktestError(f"{self.flow.source}: step {index + 1}: {exc}") from None
        for variable, path in step.save.items():
            try:
                self.variables[variable] = extract(answer, path)
            except KeyError:
                raise BacktestError(
                    f"{self.flow.source}: step {index + 1}: save {variable}: no {path} in the answer"
                ) from None


def _flow_body(body: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in body.items():
        if isinstance(value, float):
            raise BacktestError(f"{key}: write amounts as quoted strings, not {value!r}")
        out[key] = str(value) if isinstance(value, int) and key != "await_fill_millis" else value
    return out


# -- loading strategies -------------------------------------------------------------------


def load_strategy(spec: str) -> Any:
    """`path/to/file.py:ClassName` or `package.module:ClassName`, instantiated."""
    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise BacktestError(f"strategy {spec!r}: write it as path.py:ClassName")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            what = "a directory" if path.is_dir() else "no such file"
            raise BacktestError(f"strategy {spec!r}: {path}: {what}")
        module_name = f"sandex_strategy_{abs(hash(str(path.resolve())))}"
        loader_spec = importlib.util.spec_from_file_location(module_name, path)
        assert loader_spec is not None and loader_spec.loader is not None
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[module_name] = module
        loader_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            if exc.name is None or not (target + ".").startswith(exc.name + "."):
                raise  # the strategy's own import of something missing: its traceback helps
            raise BacktestError(
                f"strategy {spec!r}: no module {target} (a file is written path.py:ClassName)"
            ) from None
    cls = getattr(module, name, None)
    if cls is None:
        raise BacktestError(f"strategy {spec!r}: no {name} in {target}")
    return cls()


# -- running -------------------------------------------------------------------------------


def _assets(markets: Sequence[str], deposits: Mapping[str, str]) -> list[str]:
    found: list[str] = []
    for name in markets:
        spec = MARKETS[name]
        for asset in (spec.quote, spec.base):
            if asset not in found:
                found.append(asset)
    for asset in deposits:
        if asset not in found:
            found.append(asset)
    return found


def _engine_settings(
    base: Settings | Mapping[str, Any] | None,
    start: datetime,
    seed: int,
    overrides: Mapping[str, Any],
) -> Settings:
    values: dict[str, Any] = base.model_dump() if isinstance(base, Settings) else dict(base or {})
    fixed = sorted(k for k in _FIXED if k in values and not isinstance(base, Settings))
    if fixed:
        raise BacktestError(f"setting {fixed[0]} is decided by the backtest, not a setting")
    values.update({k: v for k, v in overrides.items() if v is not None})
    values.setdefault("durability", "NORMAL")
    values.update(clock="manual", clock_start=start, seed=seed, market_volatility=Decimal(0))
    values["execution_ids"] = "seeded"  # the same data, flow and seed: the same report
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BacktestError(
            f"settings: {'.'.join(map(str, first['loc']))}: {first['msg']}"
        ) from None


def _progress_of(progress: Progress | bool | None) -> Progress | None:
    """The callback, if any: a backtest draws no bar itself (the command line passes
    api_adapter/cli/progress.py's); `True`, which once drew one here, is refused."""
    if progress is True:
        raise TypeError(
            "progress takes a callable progress(done, total) now, e.g. the bar of"
            " api_adapter.cli.progress; the engine draws nothing"
        )
    return progress or None


def _check_outputs(db: str | Path | None, out: str | Path | None) -> None:
    """A backtest writes a new database and a report folder: what is there instead is
    refused before anything runs."""
    if db is not None:
        db_path = Path(db)
        if db_path.exists() or db_path.is_symlink():
            raise BacktestError(f"{db_path} exists already; a backtest writes a new database")
        if not db_path.parent.is_dir():
            raise BacktestError(f"{db_path}: no folder {db_path.parent} to write it in")
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise BacktestError(f"{out} is a file; the report is written into a folder")


def run(
    data: str | Path | Sequence[str | Path] | Mapping[str, Series] | None = None,
    market: str | Sequence[str] | None = None,
    *,
    strategy: Any = None,
    flow: str | Path | Flow | None = None,
    deposits: Mapping[str, Any] | None = None,
    maker_fee: Any = None,
    taker_fee: Any = None,
    spread_bps: Any = None,
    levels: int | None = None,
    level_step_bps: Any = None,
    level_notional: Any = None,
    settings: Settings | Mapping[str, Any] | None = None,
    seed: int | None = None,
    db: str | Path | None = None,
    out: str | Path | None = None,
    progress: Progress | bool | None = None,
    bar_seconds: float | None = None,
) -> Any:
    """Run an order flow (a `Strategy` instance or class, `path.py:Class`, or a flow
    file) over price data and answer the `engine.backtest.report.BacktestResult`.

    Fees and liquidity default to the engine's settings; `settings` takes any other
    engine setting. Without `db` the log is kept in a temporary file and dropped."""
    from engine.backtest.report import build_result
    from engine.tools.time_travel import log_hash

    if (strategy is None) == (flow is None):
        raise BacktestError("give exactly one of a strategy and a flow")
    _check_outputs(db, out)  # before the run, not after it
    the_flow: Flow | None = None
    if flow is not None:
        the_flow = flow if isinstance(flow, Flow) else load_flow(flow)
    if data is None:
        if the_flow is None or the_flow.data is None:
            raise BacktestError("no price data: give data (or a flow that names its data)")
        data = Path(the_flow.source).parent / the_flow.data
    wanted = [market] if isinstance(market, str) else list(market or [])
    if not wanted and the_flow is not None and the_flow.market:
        wanted = [the_flow.market]
    for name in wanted:
        if name not in MARKETS:
            raise BacktestError(f"market {name} is not a sandex market")
    try:
        if isinstance(data, Mapping):
            series = dict(data)
        else:
            paths = [data] if isinstance(data, str | Path) else list(data)
            series = load_many(paths, wanted[0] if len(wanted) == 1 else None, bar_seconds)
    except MarketDataError as exc:
        raise BacktestError(str(exc)) from None
    if wanted:
        missing = [m for m in wanted if m not in series]
        if missing:
            raise BacktestError(f"no price data for {', '.join(missing)}")
        series = {m: series[m] for m in wanted}
    unknown = [m for m in series if m not in MARKETS]
    if unknown:
        raise BacktestError(f"market {unknown[0]} in the data is not a sandex market")
    series = {m: s for m, s in series.items() if len(s)}
    if not series:
        raise BacktestError("the data holds no price points")
    first = min(s.times[0] for s in series.values())
    names = list(series)
    quote = MARKETS[names[0]].quote
    chosen = dict(the_flow.deposits) if the_flow is not None else {}
    chosen.update({k: _text(v, k) or "" for k, v in (deposits or {}).items()})
    if not chosen:
        chosen = {quote: "100000"}
    base_settings: Any = settings
    if the_flow is not None and the_flow.settings:
        base_settings = {**the_flow.settings, **dict(settings or {})}
    engine_settings = _engine_settings(
        base_settings,
        from_micros(first),
        seed if seed is not None else (the_flow.seed if the_flow and the_flow.seed else 0),
        {
            "maker_fee_rate": _text(maker_fee, "maker_fee"),
            "taker_fee_rate": _text(taker_fee, "taker_fee"),
            "market_spread_bps": _text(spread_bps, "spread_bps"),
            "market_levels": levels,
            "market_level_step_bps": _text(level_step_bps, "level_step_bps"),
            "market_level_notional": _text(level_notional, "level_notional"),
        },
    )
    if isinstance(strategy, str):
        strategy = load_strategy(strategy)
    elif isinstance(strategy, type):
        strategy = strategy()
    if the_flow is not None:
        strategy = FlowStrategy(the_flow, names[0])
    scratch = None
    if db is None:
        scratch = tempfile.TemporaryDirectory(prefix="sandex-backtest-")
        db_path = Path(scratch.name) / "backtest.db"
    else:
        db_path = Path(db)  # checked by _check_outputs
    try:
        engine = open_engine(db_path, engine_settings)
        runner = _Runner(engine, series, strategy, _progress_of(progress), _assets(names, chosen))
        try:
            # Acknowledged once, when it returns: one transaction, one commit.
            with engine.one_transaction():
                runner.setup(chosen)
                runner.run()
        finally:
            runner.close()
            engine.stop()
        result = build_result(
            runner,
            series,
            engine_settings,
            log_hash(db_path),
            str(db_path) if scratch is None else None,
            getattr(strategy, "errors", []),
        )
    finally:
        if scratch is not None:
            scratch.cleanup()
    if out is not None:
        result.write(out)
    return result


__all__ = [
    "Api",
    "ApiError",
    "BacktestError",
    "Flow",
    "FlowStrategy",
    "Strategy",
    "load_flow",
    "load_strategy",
    "run",
]
