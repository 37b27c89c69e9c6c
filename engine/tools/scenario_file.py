"""Scenario files: requests, clock moves and expectations that replay the same way every
time. This module parses and checks them and holds the pure parts of running them
(variable substitution, body matching, durations); the runner, which speaks HTTP,
lives in `sandex.api_adapter.scenarios.runner`, so the engine stays free of HTTP.

The format is documented in `docs/scenarios.md`.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from sandex.engine.config.settings import Settings
from sandex.engine.config.yaml_errors import describe as describe_yaml_error
from sandex.engine.domain.sandbox_faults import WIRE_ACTIONS
from sandex.engine.kernel.clock import format_time, parse_time, to_millis

FORMAT_VERSION = 1

# The bootstrap client (it alone may move the clock and create customers), and the
# name that sends no token at all.
ADMIN = "admin"
ANONYMOUS = "anonymous"
RESERVED_ACTORS = frozenset({ADMIN, ANONYMOUS})
# Settings a scenario may not choose: it always runs on a manual clock with seeded
# execution ids, and how the engine commits is not part of what a scenario describes.
_FORBIDDEN_SETTINGS = frozenset(
    {
        "clock",
        "durability",
        "group_commit_max",
        "group_commit_events",
        "tick_interval_seconds",
        "execution_ids",
    }
)

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNITS = {"ms": Decimal("0.001"), "s": Decimal(1), "m": Decimal(60), "h": Decimal(3600)}
_UNITS["d"] = Decimal(86400)


class ScenarioError(ValueError):
    """A scenario file that cannot be run: the message names the file and the place."""


def parse_duration(value: Any) -> timedelta:
    """`15s`, `500ms`, `2m`, `1h30m`, `1d` or a number of seconds."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or text such as 15s, 2m, 1h30m")
    if isinstance(value, int):
        seconds = Decimal(value)
    elif isinstance(value, str):
        text = value.strip().replace(" ", "")
        if not text:
            raise ValueError("empty duration")
        try:
            seconds = Decimal(text)
        except InvalidOperation:
            pos = 0
            seconds = Decimal(0)
            for m in _DURATION_PART.finditer(text):
                if m.start() != pos:
                    break
                seconds += Decimal(m.group(1)) * _UNITS[m.group(2)]
                pos = m.end()
            if pos != len(text):
                raise ValueError(
                    f"duration {value!r} invalid: use a number with ms, s, m, h or d (15s, 1h30m)"
                ) from None
    else:
        raise ValueError("a duration is a number of seconds or text such as 15s, 2m, 1h30m")
    if seconds < 0:
        raise ValueError(f"duration {value!r} invalid: time never moves backwards")
    return timedelta(microseconds=int(seconds * 1_000_000))


def format_duration(delta: timedelta) -> str:
    micros = delta // timedelta(microseconds=1)
    if micros % 1_000_000 == 0:
        return f"{micros // 1_000_000}s"
    if micros % 1000 == 0:
        return f"{micros // 1000}ms"
    return f"{format(Decimal(micros) / 1_000_000, 'f')}s"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Actor(_Model):
    """A customer created on the fly, with its own client; `scopes` narrows the client,
    `self_match_prevention` grants the permission self_match_prevention_id needs,
    `identity_labels` keeps its identity ids as labels (docs/identities.md)."""

    scopes: list[str] | None = None
    self_match_prevention: bool = False
    identity_labels: bool = False


class Request(_Model):
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str
    body: Any = None
    query: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    # Who sends it: an actor, `admin` (the bootstrap client) or `anonymous` (no token).
    actor: str | None = None
    # A token narrowed to these scopes (the client must hold them).
    scopes: list[str] | None = None

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError("a path starts with /")
        return v


# What a client sees of an answer a wire fault spoiled (docs/faults.md), named as the
# fault's action: no answer and the connection closed (`drop`) or reset (`reset`), a 200
# with an empty body (`empty`), or a 200 whose body stops short (`truncate`).
WIRE_OUTCOMES = WIRE_ACTIONS


class Expect(_Model):
    status: int = 200
    # A wire fault's outcome instead of an answer; then neither status nor body is given.
    wire: str | None = None
    # Absent: the body is not checked.
    body: Any = None
    match: Literal["subset", "exact"] = "subset"
    # Fields neither compared nor required: a bare name at any depth, or a dotted path.
    ignore: list[str] = Field(default_factory=list)

    @field_validator("wire")
    @classmethod
    def _wire(cls, v: str | None) -> str | None:
        if v is not None and v not in WIRE_OUTCOMES:
            raise ValueError(f"wire {v!r} invalid: one of {', '.join(WIRE_OUTCOMES)}")
        return v

    @model_validator(mode="after")
    def _wire_alone(self) -> Expect:
        if self.wire is not None and ({"status", "body"} & self.model_fields_set):
            raise ValueError("expect wire stands alone: a spoiled answer has no status or body")
        return self


class RequestStep(_Model):
    note: str | None = None
    request: Request
    expect: Expect = Field(default_factory=Expect)
    # variable -> dotted path into the response body (`id`, `items.0.id`, `$` = all)
    save: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _nothing_to_save(self) -> RequestStep:
        if self.expect.wire is not None and self.save:
            raise ValueError("a step that expects a wire fault has no answer to save from")
        return self


class FaultStep(_Model):
    """Arm a fault rule (`POST /v2/sandbox/faults`): `fault` is the rule's body as the API
    takes it, sent by `actor` (default `admin`: a rule for the whole sandbox; an actor's
    rule matches only its own calls); `save` names values of the armed rule, its `id`."""

    note: str | None = None
    fault: dict[str, Any]
    actor: str | None = None
    save: dict[str, str] = Field(default_factory=dict)


class AdvanceStep(_Model):
    note: str | None = None
    advance: timedelta

    @field_validator("advance", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> timedelta:
        return parse_duration(v)


class SetToStep(_Model):
    note: str | None = None
    set_to: datetime

    @field_validator("set_to", mode="before")
    @classmethod
    def _time(cls, v: Any) -> datetime:
        if isinstance(v, datetime):
            if v.tzinfo is None:
                raise ValueError("set_to needs a UTC offset or Z")
            return v
        return parse_time(str(v))


class PriceMove(_Model):
    market: str
    price: str


class PriceStep(_Model):
    note: str | None = None
    price: PriceMove


class ActorStep(_Model):
    """Create an actor at this point of the scenario rather than at the start."""

    note: str | None = None
    create_actor: str
    scopes: list[str] | None = None
    self_match_prevention: bool = False
    identity_labels: bool = False


class Balance(_Model):
    available: str | None = None
    trading: str | None = None


class BalancesCheck(_Model):
    actor: str | None = None
    profile: str = "default"
    # asset -> available amount, or {available, trading}; compared as decimals
    balances: dict[str, str | Balance]


class BalancesStep(_Model):
    note: str | None = None
    expect_balances: BalancesCheck


class OrderCheck(_Model):
    actor: str | None = None
    profile: str = "default"
    id: str
    body: dict[str, Any]
    match: Literal["subset", "exact"] = "subset"
    ignore: list[str] = Field(default_factory=list)


class OrderStep(_Model):
    note: str | None = None
    expect_order: OrderCheck


# The WebSocket feeds a stream step may open (docs/market-data.md).
STREAM_PATHS = ("/marketdata", "/executiondata")


class StreamOpen(_Model):
    """A WebSocket feed opened under a name, read until `close_stream` or the end."""

    name: str
    path: str

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"stream name {v!r} invalid: a plain identifier")
        return v

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        if v.split("/")[1:2] not in ([p[1:]] for p in STREAM_PATHS):
            feeds = " or ".join(f"{p}[/{{market}}]" for p in STREAM_PATHS)
            raise ValueError(f"stream path {v!r} invalid: a feed is {feeds}")
        return v


class StreamStep(_Model):
    note: str | None = None
    stream: StreamOpen


class MessagesCheck(_Model):
    """The messages a stream received since it was opened or last checked: as many as
    listed, in order, each compared as `expect` compares a body."""

    stream: str
    messages: list[Any]
    match: Literal["subset", "exact"] = "subset"
    ignore: list[str] = Field(default_factory=list)


class MessagesStep(_Model):
    note: str | None = None
    expect_messages: MessagesCheck


class CloseStreamStep(_Model):
    note: str | None = None
    close_stream: str


Step = (
    RequestStep
    | FaultStep
    | AdvanceStep
    | SetToStep
    | PriceStep
    | ActorStep
    | BalancesStep
    | OrderStep
    | StreamStep
    | MessagesStep
    | CloseStreamStep
)
_STEP_KINDS: dict[str, type[_Model]] = {
    "request": RequestStep,
    "fault": FaultStep,
    "advance": AdvanceStep,
    "set_to": SetToStep,
    "price": PriceStep,
    "create_actor": ActorStep,
    "expect_balances": BalancesStep,
    "expect_order": OrderStep,
    "stream": StreamStep,
    "expect_messages": MessagesStep,
    "close_stream": CloseStreamStep,
}


class Scenario(_Model):
    version: Literal[1]
    purpose: Annotated[str, Field(min_length=1, max_length=300)]
    settings: dict[str, Any] = Field(default_factory=dict)
    actors: dict[str, Actor] = Field(default_factory=dict)
    steps: list[Step]
    # Where it was read from, for messages; not part of the format.
    source: str = Field(default="<scenario>", exclude=True)

    @field_validator("purpose")
    @classmethod
    def _one_line(cls, v: str) -> str:
        if "\n" in v.strip():
            raise ValueError("the purpose is one line")
        return v.strip()

    @field_validator("settings")
    @classmethod
    def _settings(cls, v: dict[str, Any]) -> dict[str, Any]:
        bad = sorted(set(v) & _FORBIDDEN_SETTINGS)
        if bad:
            raise ValueError(
                f"{bad[0]} is not a scenario setting (scenarios run on a manual clock)"
            )
        engine_settings(v)
        return v

    @field_validator("actors")
    @classmethod
    def _actors(cls, v: dict[str, Actor]) -> dict[str, Actor]:
        for name in v:
            if not _NAME.match(name) or name in RESERVED_ACTORS:
                raise ValueError(f"actor name {name!r} invalid: a plain identifier, not admin")
        return v

    @field_validator("steps", mode="before")
    @classmethod
    def _steps(cls, v: Any) -> Any:
        if not isinstance(v, list):
            raise ValueError("steps is a list")
        steps = [_step(i, raw) for i, raw in enumerate(v)]
        _check_streams(steps)
        return steps

    def settings_model(self) -> Settings:
        return engine_settings(self.settings)

    def step_count(self) -> int:
        return len(self.actors) + len(self.steps)


def engine_settings(values: dict[str, Any]) -> Settings:
    """The engine settings a scenario runs with: its own, on a manual clock, with ids
    and execution ids from the seed, 0 unless it names one (a replay answers the same ids
    every time). Rate limits count wall time, which a replay does not follow, so they are
    off unless asked for."""
    fixed = {"clock": "manual", "execution_ids": "seeded"}
    return Settings.model_validate({"rate_limits_enabled": False, "seed": 0, **values, **fixed})


def _step(index: int, raw: Any) -> _Model:
    if not isinstance(raw, dict):
        raise ValueError(f"step {index + 1} is not a mapping")
    kinds = [k for k in raw if k in _STEP_KINDS]
    if len(kinds) != 1:
        allowed = ", ".join(_STEP_KINDS)
        found = ", ".join(kinds) or "none"
        raise ValueError(f"step {index + 1} needs exactly one of {allowed} (found {found})")
    model = _STEP_KINDS[kinds[0]]
    return model.model_validate(raw)


def _check_streams(steps: list[_Model]) -> None:
    """A stream is opened before it is read or closed, and a name is open once at a time."""
    open_: set[str] = set()
    for index, step in enumerate(steps, start=1):
        if isinstance(step, StreamStep):
            if step.stream.name in open_:
                raise ValueError(f"step {index}: a stream named {step.stream.name} is open already")
            open_.add(step.stream.name)
            continue
        if isinstance(step, MessagesStep):
            name = step.expect_messages.stream
        elif isinstance(step, CloseStreamStep):
            name = step.close_stream
        else:
            continue
        if name not in open_:
            raise ValueError(
                f"step {index}: no open stream named {name} (open it with a stream step)"
            )
        if isinstance(step, CloseStreamStep):
            open_.discard(name)


def load(text: str, source: str = "<scenario>") -> Scenario:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}{describe_yaml_error(exc)}") from exc
    return from_data(raw, source)


def from_data(raw: Any, source: str = "<scenario>") -> Scenario:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{source}: a scenario is a mapping with version, purpose and steps")
    if raw.get("version") != FORMAT_VERSION:
        raise ScenarioError(
            f"{source}: version {raw.get('version')!r} is not supported; this sandex reads "
            f"version {FORMAT_VERSION}"
        )
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(f"{source}: {where}: {first['msg']}") from exc
    scenario.source = source
    return scenario


def load_file(path: str | Path) -> Scenario:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError:
        raise ScenarioError(f"{p}: not a scenario (not UTF-8 text)") from None
    return load(text, str(p))


# -- variables --------------------------------------------------------------------------

_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)([+-]\d+)?\}")


class UnknownVariable(KeyError):
    pass


def substitute(value: Any, variables: dict[str, Any]) -> Any:
    """Replace `{name}` (and `{name+N}` for integers) in every string of `value`. A string
    that is exactly one `{name}` takes the variable's own type (an integer stays one)."""
    if isinstance(value, str):
        return _substitute_text(value, variables)
    if isinstance(value, dict):
        return {substitute(k, variables): substitute(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, variables) for v in value]
    return value


def _lookup(name: str, offset: str | None, variables: dict[str, Any]) -> Any:
    if name not in variables:
        raise UnknownVariable(name)
    value = variables[name]
    if offset:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{{{name}{offset}}}: only an integer variable takes an offset")
        return value + int(offset)
    return value


def _substitute_text(text: str, variables: dict[str, Any]) -> Any:
    if "{" not in text:
        return text
    whole = _VAR.fullmatch(text)
    if whole:
        return _lookup(whole.group(1), whole.group(2), variables)
    parts = text.split("{{")
    out = []
    for part in parts:
        out.append(
            _VAR.sub(lambda m: str(_lookup(m.group(1), m.group(2), variables)), part).replace(
                "}}", "}"
            )
        )
    return "{".join(out)


def references(value: Any) -> set[str]:
    """The variable names a value mentions (to fetch the clock only when it is needed)."""
    found: set[str] = set()
    if isinstance(value, str):
        found.update(m.group(1) for m in _VAR.finditer(value))
    elif isinstance(value, dict):
        for k, v in value.items():
            found |= references(k) | references(v)
    elif isinstance(value, list):
        for v in value:
            found |= references(v)
    return found


def extract(body: Any, path: str) -> Any:
    """The value at a dotted path of a response body (`items.0.id`; `$` is the body)."""
    if path == "$":
        return body
    node = body
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif (
            isinstance(node, list)
            and part.lstrip("-").isdigit()
            and -len(node) <= int(part) < len(node)
        ):
            node = node[int(part)]
        else:
            raise KeyError(path)
    return node


def clock_variables(now: datetime) -> dict[str, Any]:
    return {"now": format_time(now), "now_ms": to_millis(now)}


# -- matching ---------------------------------------------------------------------------


def compare(
    expected: Any, actual: Any, *, mode: str = "subset", ignore: list[str] | tuple[str, ...] = ()
) -> list[str]:
    """Every difference between an expected and an actual body, as `path: what`.

    `subset`: the expected fields must be there with equal values, others are free;
    `exact`: no field may be missing or extra. Lists compare element by element and
    must be the same length in both modes. Ignored fields are neither compared nor
    required."""
    diffs: list[str] = []
    names = frozenset(i for i in ignore if "." not in i)
    paths = frozenset(i for i in ignore if "." in i)
    _compare(expected, actual, "", mode, names, paths, diffs)
    return diffs


def _ignored(key: str, path: str, names: frozenset[str], paths: frozenset[str]) -> bool:
    return key in names or path in paths


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 120 else text[:117] + "..."


def _compare(
    expected: Any,
    actual: Any,
    path: str,
    mode: str,
    names: frozenset[str],
    paths: frozenset[str],
    diffs: list[str],
) -> None:
    where = path or "body"
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            diffs.append(f"{where}: expected an object, got {_show(actual)}")
            return
        for key, value in expected.items():
            sub = f"{path}.{key}" if path else str(key)
            if _ignored(str(key), sub, names, paths):
                continue
            if key not in actual:
                diffs.append(f"{sub}: missing (expected {_show(value)})")
                continue
            _compare(value, actual[key], sub, mode, names, paths, diffs)
        if mode == "exact":
            for key in actual:
                sub = f"{path}.{key}" if path else str(key)
                if key not in expected and not _ignored(str(key), sub, names, paths):
                    diffs.append(f"{sub}: unexpected field {_show(actual[key])}")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list):
            diffs.append(f"{where}: expected a list, got {_show(actual)}")
            return
        if len(expected) != len(actual):
            diffs.append(f"{where}: expected {len(expected)} items, got {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            _compare(e, a, f"{path}.{i}" if path else str(i), mode, names, paths, diffs)
        return
    if type(expected) is not type(actual) or expected != actual:
        numbers = isinstance(expected, int | float) and isinstance(actual, int | float)
        if numbers and expected == actual and not isinstance(expected, bool):
            return
        diffs.append(f"{where}: expected {_show(expected)}, got {_show(actual)}")


def same_amount(expected: str, actual: str) -> bool:
    """Balances compare as decimals: `1.5` equals `1.50000000`."""
    try:
        return Decimal(expected) == Decimal(actual)
    except (InvalidOperation, TypeError):
        return expected == actual
