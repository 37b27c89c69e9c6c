"""Order-flow files: timed orders in YAML, in the style of a scenario file, and the
strategy that runs one."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sandex.engine.backtest.errors import BacktestError
from sandex.engine.backtest.price_files import from_micros, to_micros
from sandex.engine.backtest.strategy import Api, ApiError, Strategy
from sandex.engine.config.yaml_errors import describe as describe_yaml_error
from sandex.engine.domain.trading.order import OPEN_STATES
from sandex.engine.kernel.clock import format_time, parse_time


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
        from sandex.engine.tools.scenario_file import parse_duration

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
        if order["status"] in OPEN_STATES:
            if order["id"] not in self.opened:
                self.opened.append(order["id"])
        elif order["id"] in self.opened:
            self.opened.remove(order["id"])

    def on_timer(self, name: str, time: datetime) -> None:
        from sandex.engine.tools.scenario_file import clock_variables, extract, substitute

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


__all__ = ["Flow", "FlowStep", "FlowStrategy", "flow_from_data", "load_flow"]
