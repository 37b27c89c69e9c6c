"""Backtests: an order flow run against historical prices on the sandbox's own engine.

The engine is the sandbox's, on a manual clock, with a still synthetic path (volatility
0): the data file is the reference path. The runner walks the price points in time
order and, for each one, does engine work only when the engine could react to it:

- the point's price would cross resting interest (a limit order the fresh ladder
  reaches, a stop the last price falls to): the clock moves to the point and its price
  is set (`MarketPriceSet`), which fills and triggers exactly as in the sandbox. Inside
  a bar the path is continuous: each crossing on the way from the point before is set
  first, at its exact price, so a stop fills at its stop and a limit at its price; a
  bar's open is a gap (`SetMarketPrice.gap`): what it jumps past fills at the open;
- an engine deadline (GTT expiry, submission latency, a withdrawal) falls before the
  point: the clock moves there, firing it on the way at its own time;
- the strategy acts: the clock moves to now and the latest price is set first.

Any other point only moves the runner's cursor: it writes no event and costs a few
comparisons against thresholds kept in price ticks. Setting a price later than its
point changes nothing the engine decides (with a still path the reference is the last
price set, whenever it was set), so the log is that of a run that set every price.

The strategy runs between instants, never inside one (sandex.engine.backtest.timeline): its
callbacks for the points of an instant, and what happened in it (`on_fill`, `on_order`),
come once every point of that instant is walked. A bar's extremes and close share its
last instant, so no strategy code ever sees a bar half done.

The runner is the engine's only writer (`Engine.run_inline`, no writer thread), and
notifications (`on_fill`, `on_order`) are queued and delivered once the callback that
caused them has returned, so strategy code is never re-entered.
"""

from __future__ import annotations

import heapq
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sandex.engine.backtest.errors import BacktestError
from sandex.engine.backtest.flows import Flow, FlowStrategy, load_flow
from sandex.engine.backtest.price_files import (
    EXACT,
    MarketDataError,
    Series,
    from_micros,
    load_many,
    to_micros,
)
from sandex.engine.backtest.result import BacktestResult, Fill
from sandex.engine.backtest.strategy import (
    Api,
    ApiError,
    Strategy,
    amount_text,
    apply_params,
    params_text,
    strategy_class,
)
from sandex.engine.backtest.timeline import GAP, PATH, SEEN, merge
from sandex.engine.config.settings import Settings
from sandex.engine.domain.trading import execution_view, order_view, trading_state
from sandex.engine.domain.trading.ladder import still_crossings
from sandex.engine.domain.trading.market import MarketConfig
from sandex.engine.kernel.clock import ManualClock, parse_time
from sandex.engine.kernel.commands import (
    Actor,
    AdvanceClock,
    CreateCustomer,
    CreateOrder,
    SandboxDeposit,
    SetMarketPrice,
)
from sandex.engine.kernel.errors import DomainError
from sandex.engine.kernel.money import MARKETS
from sandex.engine.kernel.progress import EVERY as _PROGRESS_EVERY
from sandex.engine.kernel.progress import Progress
from sandex.engine.kernel.state import State
from sandex.engine.read.queries import Queries
from sandex.engine.read.writer_queries import WriterQueries
from sandex.engine.runtime.composition import open_engine
from sandex.engine.runtime.writer import Engine, NotDecided
from sandex.engine.store import LogFolding, capability, display, holds_events, locate

INF = 1 << 62
# Where an order the strategy sends once a bar is complete fills: at that bar's close
# (the default: the strategy acts when it sees the close), or at the next bar's open
# (what backtesting.py does, and most published strategies assume).
FILL_AT = ("close", "next-open")
# Renders a refusal as the body a strategy sees in `ApiError.problem`.
Problems = Callable[[DomainError], dict[str, Any]]
CLIENT_ID = "backtest"
# Settings a backtest decides itself: the data is the path, and time is the data's.
_FIXED = ("clock", "clock_start", "market_volatility", "seed", "execution_ids")


class Runner:
    """Drives the engine over a timeline for one strategy: the walk, the strategy's
    commands and reads, its notifications, and the record the result is made of."""

    def __init__(
        self,
        engine: Engine,
        series: dict[str, Series],
        strategy: Any,
        progress: Progress | None,
        assets: Sequence[str],
        problems: Problems | None = None,
        fill_at: str = "close",
    ) -> None:
        self.engine = engine
        self.at_next_open = fill_at == "next-open"
        # next-open, while the strategy handles a bar's close: the next bar's open point,
        # to which the walk moves before the strategy's first order
        self.to_open: int | None = None
        self.problems = problems
        self.strategy = strategy
        self.progress = progress
        self.markets = list(series)
        self.index = {name: i for i, name in enumerate(self.markets)}
        self.cfg = MarketConfig.of(engine.settings)
        self.ticks_of = [MARKETS[name].tick for name in self.markets]
        self.times, self.mks, self.prices, self.ticks, self.bars, self.flags = merge(
            series, self.ticks_of
        )
        self.seen = [self.mks.index(m) for m in range(len(self.markets))]
        # per market: the last point walked, in ticks
        self.walked = [self.ticks[i] for i in self.seen]
        self.set_at = [-1] * len(self.markets)
        # The reference price each market was last set to: a fill's reference.
        self.reference: list[Decimal] = [self.prices[i] for i in self.seen]
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
        self.assets = list(assets)
        # (time in us, holdings per asset in `assets` order), whenever they change, and
        # the first point each is held at (`held_from`)
        self.holdings: list[tuple[int, tuple[Decimal, ...]]] = []
        self.held_from: list[int] = []
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

    def refused(self, exc: DomainError) -> ApiError:
        """The strategy's error for `exc`, with its problem body (see `run`'s `problems`)."""
        return ApiError(exc, exc.body() if self.problems is None else self.problems(exc))

    def _run(self, command: Any) -> Any:
        self.commands += 1
        try:
            return self.engine.run_inline(command)
        except DomainError as exc:
            raise self.refused(exc) from None
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
                engine.flush()
                self._collect(engine.store.read(after=self.position, with_meta=False))
            self.position = engine.state.position
        tr = trading_state(engine.state)
        cfg = self.cfg
        for m, name in enumerate(self.markets):
            best_bid, best_ask, top_stop = tr.markets[name].thresholds()
            # A point crosses when the fresh ladder's first ask reaches the best bid,
            # its first bid the best ask, or its price a stop: exact, in ticks.
            low, high = still_crossings(cfg, best_bid, best_ask)
            self.lo[m] = max(low, top_stop)
            self.hi[m] = min(high, INF)
        deadline = engine.next_deadline()
        self.wake = INF if deadline is None else to_micros(deadline)

    def _collect(self, events: Iterable[Any]) -> None:
        tr = trading_state(self.engine.state)
        touched: dict[str, None] = {}
        moved = False
        prefix = self.profile_id + ":"
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
                    reference = self.reference[self.index[data["market"]]]
                    self.fills.append(Fill(view, o.type, reference, record[5]))
                    self.notices.append(("fill", view))
                    touched[side["order_id"]] = None
            elif e.type == "OrderPlaced":
                touched[data["order"]["id"]] = None
            elif e.type.startswith("Order"):
                touched[data["order_id"]] = None
            elif data.get("postings"):
                self._flow(e)
            # holdings change only when value crosses the profile's edge (a hold taken
            # or released moves it between two of its own accounts)
            if not moved and data.get("postings"):
                moved = any(
                    not (s.startswith(prefix) and t.startswith(prefix))
                    for s, t, _, _ in data["postings"]
                )
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
            # Held from the point after the last one walked: a change made before a
            # point is reached (a deadline, resting interest met on the way to it) is
            # held at it; one the point makes happen, or the strategy once it is seen
            # (on_start: the first point), from the next on.
            self.held_from.append(max(self.seen) + 1 if self.holdings else 0)
            self.holdings.append((self.now_us, held))

    def read(self, query: Callable[[Queries, str], dict[str, Any]]) -> dict[str, Any]:
        if self.queries is None:
            self.queries = WriterQueries(self.engine.store)
        self.engine.flush()  # the queries read the rows the engine holds back
        try:
            return query(self.queries, self.actor.customer_id)
        except DomainError as exc:
            raise self.refused(exc) from None

    def read_state(self, query: Callable[[State, str], dict[str, Any]]) -> dict[str, Any]:
        """A read answered from the engine's state, as its read model would answer it,
        with nothing held back written first."""
        try:
            return query(self.engine.state, self.actor.customer_id)
        except DomainError as exc:
            raise self.refused(exc) from None

    def act(self, command: Any) -> Any:
        """A strategy's command: the engine first catches up with now. The prices that
        brings are set in one chain with the command (`Engine.run_inline_chain`): the
        same commands in the same order, one write and one follow-up instead of two."""
        if self.to_open is not None and isinstance(command, CreateOrder):
            self._to_next_open(self.to_open)
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
            raise self.refused(exc) from None

    def _to_next_open(self, j: int) -> None:
        """next-open: move the walk to the next bar's open, point `j`, so that the order
        that follows meets its price (set as the open's gap). Deadlines before it fire
        first, at their times; the loop then finds the point walked."""
        self.to_open = None
        t = self.times[j]
        if t >= self.wake:
            self._wake(t, False)
        self.now_us = t
        m = self.mks[j]
        self.walked[m] = self.ticks[j]
        self.seen[m] = j

    def next_open(self, market: str) -> int | None:
        """The point where the market's next bar opens, after now; None after its last
        bar, and on trade data."""
        m = self.market_index(market)
        if not self.bars:
            return None
        mks, flags, times = self.mks, self.flags, self.times
        for j in range(self.seen[m] + 1, len(mks)):
            if mks[j] == m and flags[j] & GAP and times[j] > self.now_us:
                return j
        return None

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
                self.reference[m] = self.prices[i]
                due.append(
                    SetMarketPrice(
                        actor=self.actor,
                        market=self.markets[m],
                        price=format(self.prices[i], "f"),
                        gap=bool(self.flags[i] & GAP),
                        answer=False,  # the runner reads no answer of a price it sets
                    )
                )
        return due

    def _through(self, m: int, q: int, p: int) -> None:
        """Walk market `m` from `q` to `p` ticks inside a bar: set each price on the way
        where resting interest is met, at that price, in the order the path meets them."""
        tick = self.ticks_of[m]
        while True:
            lo, hi = self.lo[m], self.hi[m]
            if p < lo < q:
                x = lo
            elif q < hi < p:
                x = hi
            else:
                return
            # The point before needs no setting of its own: x follows it at once.
            self.set_at[m] = self.seen[m]
            self.sync()
            price = x * tick
            self.reference[m] = price
            self.set_at[m] = -1
            self._run(
                SetMarketPrice(
                    actor=self.actor, market=self.markets[m], price=format(price, "f"), answer=False
                )
            )
            q = x

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
            state = self.engine.state
            tr = trading_state(state)
            on_fill = _told(self.strategy, "on_fill")
            on_order = _told(self.strategy, "on_order")
            if on_fill is None and on_order is None:
                notices.clear()
            while notices:
                kind, value = notices.pop(0)
                if kind == "fill":
                    if on_fill is not None:
                        on_fill(value)
                elif on_order is not None:
                    on_order(order_view(state, tr.orders[value]))
        finally:
            self.delivering = False

    # -- the run ------------------------------------------------------------------------

    def setup(self, deposits: Mapping[str, str]) -> None:
        made = self.engine.run_inline(
            # identity_labels: a backtest has no identity API, so the ids a strategy's
            # orders name (as its live code would) are labels, not identities to refuse.
            CreateCustomer(
                client_id=CLIENT_ID, client_secret=CLIENT_ID, bootstrap=True, identity_labels=True
            )
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
        self.held_from.clear()
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
        times: Sequence[int] = self.times
        ticks: Sequence[int] = self.ticks
        mks: Sequence[int] = self.mks
        bars = self.bars
        flags = self.flags
        names = self.markets
        lo, hi, seen = self.lo, self.hi, self.seen
        walked = self.walked
        at_next_open = self.at_next_open
        strategy = self.strategy
        on_price = _hook(strategy, "on_price")
        on_bar = _hook(strategy, "on_bar") if bars else None
        timers = self.timers
        notices = self.notices
        deliver = self.deliver
        n = len(times)
        progress = self.progress  # told (points done, points) now and then, and at the end
        # One market of bars: a bar whose whole range lies inside the thresholds, with no
        # deadline or timer due before its close, is walked in one step (its open and
        # path cross nothing and set nothing): the idle path costs a bar, not 4 points.
        whole_bars = bars.one_market_of_bars()
        if not whole_bars:
            # Trade data (or several markets): every point is walked, and its time and
            # ticks read two or three times; an array makes an int at each read, so the
            # walk reads lists (44 bytes a point more, while it runs).
            times, ticks, mks = self.times.tolist(), self.ticks.tolist(), self.mks.tolist()
        # a point's price on the tick, as `prices[k]` makes it, without the call
        exact, tick_of = EXACT.multiply, self.ticks_of
        bar_of = bars.bar_of_close() if whole_bars else bars.__getitem__
        market = names[0]
        first = 0  # the first point of the current instant
        reported = 0  # the next point at which progress is told
        before = times[0]  # the time of the point before (an array: read each once)
        points = iter(range(n))
        for i in points:
            if whole_bars and not i & 3:
                close = i + 3
                at = times[close]
                a = ticks[i + 1]
                b = ticks[i + 2]
                if (
                    at < self.wake
                    and (not timers or timers[0][0] >= at)
                    and lo[0] < (a if a < b else b)
                    and (b if a < b else a) < hi[0]
                ):
                    walked[0] = ticks[close]
                    seen[0] = close
                    self.now_us = before = at
                    if at_next_open and close + 1 < n:
                        self.to_open = close + 1
                    # its close is the one point the strategy sees; nothing is pending
                    if on_price is not None:
                        on_price(market, from_micros(at), exact(ticks[close], tick_of[0]))
                        if notices:
                            deliver()
                    if on_bar is not None:
                        on_bar(market, bar_of(i >> 2))
                        if notices:
                            deliver()
                    if at_next_open:
                        self.to_open = None
                    if timers:
                        following = times[close + 1] if close + 1 < n else at + 1
                        if timers[0][0] < following:
                            self._fire_timers(following)
                    if progress is not None and close >= reported:
                        progress(close, n)
                        reported = close - close % _PROGRESS_EVERY + _PROGRESS_EVERY
                    next(points)  # the bar's other three points: walked
                    next(points)
                    next(points)
                    continue
            t = times[i]
            if t != before:
                first = i
                before = t
            if t >= self.wake:
                self._wake(t, first == i)
            m = mks[i]
            p = ticks[i]
            self.now_us = t
            if flags[i] & PATH:
                q = walked[m]
                if p < lo[m] < q or q < hi[m] < p:
                    self._through(m, q, p)
            walked[m] = p
            seen[m] = i
            if p <= lo[m] or p >= hi[m]:
                self.sync()
            if i + 1 < n and times[i + 1] == t:
                continue  # the instant goes on: no strategy code inside it
            if at_next_open and flags[i] & SEEN and i + 1 < n:
                self.to_open = i + 1  # one market of bars: a close's next point is an open
            if notices:
                deliver()
            for k in range(first, i + 1):
                if not flags[k] & SEEN:
                    continue
                if on_price is not None:
                    m = mks[k]
                    on_price(names[m], from_micros(t), exact(ticks[k], tick_of[m]))
                    if notices:
                        deliver()
                if on_bar is not None:
                    bar = bars[k]
                    if bar is not None:
                        on_bar(names[mks[k]], bar)
                        if notices:
                            deliver()
            if at_next_open:
                self.to_open = None
            if timers:
                following = times[i + 1] if i + 1 < n else t + 1
                if timers[0][0] < following:
                    self._fire_timers(following)
            if progress is not None and i >= reported:
                progress(i, n)
                reported = i - i % _PROGRESS_EVERY + _PROGRESS_EVERY
        if progress is not None:
            progress(n, n)

    def _wake(self, t: int, between: bool) -> None:
        """An engine deadline falls at or before `t`: fire it with the prices before `t`;
        what it did reaches the strategy now only `between` instants."""
        self.sync()
        self.now_us = t
        self._run(AdvanceClock(to=from_micros(t)))
        if between:
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

    # -- the record ---------------------------------------------------------------------

    def result(
        self,
        bars: int,
        settings: Settings,
        log_hash: str,
        db: str | None,
        errors: list[Any],
        params: dict[str, Any] | None = None,
        fill_at: str = "close",
    ) -> BacktestResult:
        """What the run recorded, as plain values (the engine's state is read here, once),
        and the figures computed from it."""
        tr = trading_state(self.engine.state)
        pid = self.profile_id
        ledger = self.engine.state.ledger
        held = sorted({a for (account, a) in ledger.balances if account.startswith(pid + ":")})
        return BacktestResult(
            markets=self.markets,
            assets=self.assets,
            times=self.times,
            mks=self.mks,
            prices=self.prices,
            bars=bars,
            holdings=self.holdings,
            flows=self.flows,
            fills=self.fills,
            orders=[(o.status, o.type) for o in tr.orders.values() if o.profile_id == pid],
            balances={
                asset: {
                    kind: ledger.balance(f"{pid}:{kind}", asset)
                    for kind in ("available", "trading", "withdrawing")
                }
                for asset in held
            },
            settings=settings,
            log_hash=log_hash,
            db=db,
            errors=errors,
            ohlc=self.bars,
            held_from=self.held_from,
            params=params or {},
            fill_at=fill_at,
        )


def _hook(strategy: Any, name: str) -> Callable[..., Any] | None:
    """The strategy's callback, or None when it keeps the base class's empty one."""
    method = getattr(strategy, name, None)
    if method is None:
        return None
    if getattr(type(strategy), name, None) is getattr(Strategy, name):
        return None
    return method  # type: ignore[no-any-return]


def _told(strategy: Any, name: str) -> Callable[..., Any] | None:
    """The strategy's `on_fill` or `on_order` as it stands now, or None when it is the
    base class's empty one: calling that, with the order view it would be given, does
    nothing."""
    method = getattr(strategy, name, None)
    if getattr(method, "__func__", None) is getattr(Strategy, name):
        return None
    return method  # type: ignore[no-any-return]


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


def engine_settings(
    base: Settings | Mapping[str, Any] | None,
    start: datetime,
    seed: int,
    overrides: Mapping[str, Any],
) -> Settings:
    """The engine's settings for a run: the caller's, with the clock, its start, the
    seed, the volatility and the execution ids the backtest's own (refused if given)."""
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
            " sandex.api_adapter.cli.progress; the engine draws nothing"
        )
    return progress or None


def _check_outputs(db: str | Path | None, out: str | Path | None) -> None:
    """A backtest writes a new database and a report folder: what is there instead is
    refused before anything runs."""
    if db is not None and locate(db).on_server:
        if holds_events(db):
            raise BacktestError(f"{display(db)} holds events; a backtest writes a new database")
    elif db is not None:
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
    problems: Problems | None = None,
    params: Mapping[str, Any] | None = None,
    fill_at: str = "close",
) -> BacktestResult:
    """Run an order flow (a `Strategy` instance or class, `path.py:Class`, or a flow
    file) over price data and answer its `sandex.engine.backtest.result.BacktestResult`.

    Fees and liquidity default to the engine's settings; `settings` takes any other
    engine setting. Without `db` the log is kept in a temporary file and dropped.
    `problems` renders a refusal's body for the strategy's `ApiError.problem` (the HTTP
    API's: `sandex.api_adapter.problems.domain_problem_body`); without it the body is the
    engine's code, detail and meta. `params` sets the strategy's parameters (see
    `sandex.engine.backtest.strategy.apply_params`); the summary says which it ran with.
    `fill_at` is where an order sent once a bar is complete fills (`FILL_AT`): at that
    bar's close, or at the next bar's open (bars of one market)."""
    from sandex.engine.tools.time_travel import log_hash

    if (strategy is None) == (flow is None):
        raise BacktestError("give exactly one of a strategy and a flow")
    if fill_at not in FILL_AT:
        raise BacktestError(f"fill_at {fill_at!r}: one of {', '.join(FILL_AT)}")
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
    if fill_at == "next-open" and (len(series) > 1 or not next(iter(series.values())).bars):
        raise BacktestError("fill_at next-open needs bars of one market")
    first = min(s.times[0] for s in series.values())
    names = list(series)
    quote = MARKETS[names[0]].quote
    chosen = dict(the_flow.deposits) if the_flow is not None else {}
    chosen.update({k: amount_text(v, k) or "" for k, v in (deposits or {}).items()})
    if not chosen:
        chosen = {quote: "100000"}
    base_settings: Any = settings
    if the_flow is not None and the_flow.settings:
        base_settings = {**the_flow.settings, **dict(settings or {})}
    the_settings = engine_settings(
        base_settings,
        from_micros(first),
        seed if seed is not None else (the_flow.seed if the_flow and the_flow.seed else 0),
        {
            "maker_fee_rate": amount_text(maker_fee, "maker_fee"),
            "taker_fee_rate": amount_text(taker_fee, "taker_fee"),
            "market_spread_bps": amount_text(spread_bps, "spread_bps"),
            "market_levels": levels,
            "market_level_step_bps": amount_text(level_step_bps, "level_step_bps"),
            "market_level_notional": amount_text(level_notional, "level_notional"),
        },
    )
    if isinstance(strategy, str):
        strategy = strategy_class(strategy)
    if isinstance(strategy, type):
        strategy = strategy()
    if the_flow is not None:
        if params:
            raise BacktestError("a flow file has no parameters; --param is for a strategy")
        strategy = FlowStrategy(the_flow, names[0])
    used = {} if the_flow is not None else apply_params(strategy, params)
    scratch = None
    db_path: str | Path
    if db is None:
        scratch = tempfile.TemporaryDirectory(prefix="sandex-backtest-")
        db_path = Path(scratch.name) / "backtest.db"
    else:
        db_path = db if locate(db).on_server else Path(db)  # checked by _check_outputs
    try:
        engine = open_engine(db_path, the_settings)
        # A scratch log is dropped unread: its hash is folded as it is written, its
        # events set aside in a file (unless a decision breaks, which reloads them), no
        # event feed is made for it and its read models are written only when read.
        store = engine.store
        folded = capability(store, LogFolding) if scratch is not None else None
        if folded is not None and not folded.fold_log(aside=True):
            folded = None
        runner = Runner(
            engine,
            series,
            strategy,
            _progress_of(progress),
            _assets(names, chosen),
            problems,
            fill_at,
        )
        fingerprint = None
        try:
            # Acknowledged once, when it returns: one transaction, one commit.
            with engine.one_transaction(scratch=scratch is not None):
                runner.setup(chosen)
                runner.run()
            if folded is not None:
                fingerprint = folded.log_fold()
        finally:
            runner.close()
            engine.stop()
        result = runner.result(
            sum(len(s.bars) for s in series.values()),
            the_settings,
            fingerprint or log_hash(db_path),
            str(db_path) if scratch is None else None,
            getattr(strategy, "errors", []),
            params_text(used),
            fill_at,
        )
    finally:
        if scratch is not None:
            scratch.cleanup()
    if out is not None:
        result.write(out)
    return result


__all__ = ["CLIENT_ID", "Runner", "engine_settings", "run"]
