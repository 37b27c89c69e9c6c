"""The strategy API: the class a Python order flow subclasses and the `Api` it trades
through, the HTTP API's operations for one customer over the backtest's engine."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandex.engine.backtest.errors import BacktestError
from sandex.engine.backtest.price_files import from_micros, to_micros
from sandex.engine.domain.balances import balance_view, balances_view
from sandex.engine.domain.customers import resolve_profile
from sandex.engine.kernel.commands import (
    CancelOrder,
    CreateCryptoWithdrawal,
    CreateOrder,
    CreateWithdrawalFee,
    ReadMarket,
    SandboxDeposit,
)
from sandex.engine.kernel.errors import DomainError
from sandex.engine.read.queries import Page

if TYPE_CHECKING:
    from sandex.engine.backtest.runner import Runner


class ApiError(Exception):
    """A refused operation. `error` is the engine's `DomainError`; `problem` its body:
    the HTTP API's problem body when the run was given the adapter's renderer
    (`run(problems=...)`), else the engine's `{"code", "detail", "meta"}`, without
    HTTP status."""

    def __init__(self, error: DomainError, problem: dict[str, Any]) -> None:
        status = problem.get("status")
        super().__init__(f"{status if status is not None else error.code} {error.detail}")
        self.error = error
        self.problem = problem
        self.status: int | None = status
        self.detail: str = error.detail


class Strategy:
    """Base class of an order flow written in Python; every callback is optional.

    `self.api` (also passed to `on_start`) places and reads orders with the HTTP API's
    operations and shapes. Callbacks run one at a time; fills and order changes caused
    by a callback are delivered after it returns."""

    api: Api

    def on_start(self, api: Api) -> None:
        """Before the first price point is delivered; the market stands at its first price."""

    def on_price(self, market: str, time: datetime, price: Decimal) -> None:
        """Each trade point once it has happened; bar data: each bar's close, once the
        bar is complete (docs/backtests.md, "The bar model")."""

    def on_bar(self, market: str, bar: Any) -> None:
        """Bar data only: a bar (`sandex.engine.backtest.price_files.Bar`) once it is complete."""

    def on_fill(self, execution: dict[str, Any]) -> None:
        """One execution of one of this flow's orders, as `GET /v2/executions` shows it."""

    def on_order(self, order: dict[str, Any]) -> None:
        """An order changed (created, opened, triggered, filled, cancelled...): its view."""

    def on_timer(self, name: str, time: datetime) -> None:
        """A timer set with `api.set_timer` is due."""

    def on_end(self, api: Api) -> None:
        """After the last price point, at its time."""


def amount_text(value: Any, name: str) -> str | None:
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

    def __init__(self, runner: Runner) -> None:
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

    def next_bar_time(self, market: str) -> datetime | None:
        """When the market's next bar opens (its time, after now): a timer set there
        fires once the open has happened, so an order it sends meets the open, weekends
        and gaps in the data included. None after the last bar, and on trade data."""
        r = self._r
        j = r.next_open(market)
        return None if j is None else from_micros(r.times[j])

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
            base_amount=amount_text(base_amount, "base_amount"),
            price=amount_text(price, "price"),
            quote_amount=amount_text(quote_amount, "quote_amount"),
            metadata=metadata,
            await_fill_millis=await_fill_millis,
            time_in_force=time_in_force,
            expiration_date=amount_text(expiration_date, "expiration_date"),
            identity_id=identity_id,
            identity_account_id=identity_account_id,
            stop_price=amount_text(stop_price, "stop_price"),
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
        result = self._r.read_state(
            lambda s, c: balances_view(s, resolve_profile(s, c, profile_id)["id"])
        )
        if assets:
            wanted = set(assets)
            result["items"] = [b for b in result["items"] if b["asset"] in wanted]
        return result

    def get_profile_balance(self, asset: str, profile_id: str = "default") -> dict[str, Any]:
        """GET /v2/profiles/{profile_id}/balances/{asset}"""
        return self._r.read_state(
            lambda s, c: balance_view(s, resolve_profile(s, c, profile_id)["id"], asset)
        )

    def create_sandbox_deposit(
        self, asset: str, amount: Any, profile_id: str = "default"
    ) -> dict[str, Any]:
        """POST /v2/sandbox/profiles/{profile_id}/deposit"""
        result: dict[str, Any] = self._r.act(
            SandboxDeposit(
                actor=self._r.actor,
                profile_id=profile_id,
                asset=asset,
                amount=amount_text(amount, "amount") or "",
            )
        )
        return result

    def create_crypto_withdrawal_fee(self, **body: Any) -> dict[str, Any]:
        """POST /v2/transfer/fees/crypto-withdrawal"""
        for name in ("amount", "total"):
            body[name] = amount_text(body.get(name), name)
        result: dict[str, Any] = self._r.act(CreateWithdrawalFee(actor=self._r.actor, **body))
        return result

    def create_crypto_withdrawal(self, **body: Any) -> dict[str, Any]:
        """POST /v2/transfer/crypto-withdrawals"""
        for name in ("amount", "total"):
            body[name] = amount_text(body.get(name), name)
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


# -- loading strategies and their parameters -----------------------------------------------

# The types a parameter's default may have; a float default makes a Decimal parameter.
PARAM_TYPES = (bool, int, Decimal, float, str)
_TRUE = ("true", "yes", "1", "on")
_FALSE = ("false", "no", "0", "off")


def strategy_class(spec: str) -> type:
    """The class `path/to/file.py:ClassName` or `package.module:ClassName` names."""
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
    if not isinstance(cls, type):
        raise BacktestError(f"strategy {spec!r}: no class {name} in {target}")
    return cls


def load_strategy(spec: str, params: Mapping[str, Any] | None = None) -> Any:
    """`path/to/file.py:ClassName` or `package.module:ClassName`, instantiated, with
    `params` set on the instance (see `apply_params`)."""
    strategy = strategy_class(spec)()
    apply_params(strategy, params)
    return strategy


def declared_params(cls: type) -> dict[str, Any]:
    """A strategy's parameters and their defaults: its public class attributes holding a
    bool, int, Decimal, float or str (backtesting.py's habit), the base class's excepted."""
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or klass is Strategy:
            continue
        for name, value in vars(klass).items():
            if name.startswith("_"):
                continue
            if isinstance(value, PARAM_TYPES):
                found[name] = value
            else:
                found.pop(name, None)  # a subclass made it something else
    return found


def param_value(name: str, default: Any, value: Any) -> Any:
    """`value` (text from a command line, or a Python value) as the type of the
    parameter's default: bool, int, Decimal (for a Decimal or float default, never a
    float), or str. A value that does not fit is a `BacktestError` naming the parameter."""

    def refused(why: str) -> BacktestError:
        return BacktestError(f"parameter {name}={value!r}: {why}")

    if isinstance(value, float):
        raise refused("a float carries binary noise: give it as text or a Decimal")
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise refused("not a boolean (true or false)")
    if isinstance(default, int):
        if isinstance(value, bool):
            raise refused("not an integer")
        if isinstance(value, int):
            return value
        if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise refused("not an integer")
    if isinstance(default, Decimal | float):
        if isinstance(value, bool):
            raise refused("not a number")
        if isinstance(value, int | Decimal):
            number = Decimal(value)
        elif isinstance(value, str):
            try:
                number = Decimal(value.strip())
            except ArithmeticError:
                raise refused("not a number") from None
        else:
            raise refused("not a number")
        if not number.is_finite():
            raise refused("not a finite number")
        return number
    if isinstance(value, str):
        return value
    raise refused("not text")


def parse_params(cls: type, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """`params` checked against `cls`'s declared parameters and typed like their
    defaults; an unknown name is refused with the names there are."""
    declared = declared_params(cls)
    typed: dict[str, Any] = {}
    for name, value in (params or {}).items():
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise BacktestError(
                f"parameter {name}: {cls.__name__} has no such parameter (its parameters: {known})"
            )
        typed[name] = param_value(name, declared[name], value)
    return typed


def apply_params(strategy: Any, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Set `params` on the strategy instance (before `on_start`); answer every parameter
    the run uses, defaults included, in declaration order."""
    cls = type(strategy)
    typed = parse_params(cls, params)
    for name, value in typed.items():
        setattr(strategy, name, value)
    return {
        name: typed.get(name, Decimal(repr(default)) if isinstance(default, float) else default)
        for name, default in declared_params(cls).items()
    }


def params_text(params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters as JSON holds them: Decimals as text, the rest as they are."""
    return {k: format(v, "f") if isinstance(v, Decimal) else v for k, v in params.items()}


__all__ = [
    "Api",
    "ApiError",
    "Strategy",
    "amount_text",
    "apply_params",
    "declared_params",
    "load_strategy",
    "param_value",
    "params_text",
    "parse_params",
    "strategy_class",
]
