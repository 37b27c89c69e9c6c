"""The scenario runner: drives a sandbox over HTTP, step by step, and reports what
differs from what the scenario expects.

It runs against a fresh sandbox in-process (a new database in a temporary folder, a
manual clock, the real ASGI app through an in-memory transport) or against a running
sandbox at a URL: the targets of api_adapter/scenarios/targets.py. Either way every
step is an HTTP request, so a scenario exercises exactly what an integration would.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from sandex.api_adapter.operations import operation
from sandex.api_adapter.scenarios.targets import (
    BOOTSTRAP_CLIENT,
    BOOTSTRAP_SECRET,
    InProcess,
    Remote,
    Stream,
    StreamsUnsupported,
    Target,
)
from sandex.engine.kernel.clock import format_time, parse_time
from sandex.engine.tools.scenario_file import (
    ADMIN,
    ANONYMOUS,
    Actor,
    ActorStep,
    AdvanceStep,
    BalancesStep,
    CloseStreamStep,
    FaultStep,
    MessagesStep,
    OrderStep,
    PriceStep,
    RequestStep,
    Scenario,
    SetToStep,
    StreamStep,
    UnknownVariable,
    clock_variables,
    compare,
    extract,
    format_duration,
    references,
    same_amount,
    substitute,
)

# Where a fault step arms its rule, as the operation table has it.
FAULTS_PATH = operation("CreateSandboxFault").path


@dataclass
class StepResult:
    index: int
    label: str
    ok: bool
    diffs: list[str] = field(default_factory=list)
    status: int | None = None
    seconds: float = 0.0
    answer: bytes | None = None  # a request step's response body, as sent


@dataclass
class ScenarioResult:
    scenario: Scenario
    steps: list[StepResult] = field(default_factory=list)
    log_hash: str | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> list[StepResult]:
        return [s for s in self.steps if not s.ok]

    @property
    def ok(self) -> bool:
        return not self.failed


class StepFailed(Exception):
    """A step could not be carried out (as opposed to a response that differs)."""


# -- the runner ------------------------------------------------------------------------


def _body(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text


class Runner:
    def __init__(
        self,
        scenario: Scenario,
        target: Target,
        on_step: Callable[[StepResult], None] | None = None,
    ) -> None:
        self.scenario = scenario
        self.target = target
        self.http = target.client
        self.on_step = on_step
        self.variables: dict[str, Any] = {}
        self._answer: bytes | None = None  # the step being run's response body
        self.credentials: dict[str, tuple[str, str]] = {
            ADMIN: (target.client_id, target.client_secret)
        }
        self._tokens: dict[tuple[str, tuple[str, ...] | None], str] = {}
        self.default_actor = next(iter(scenario.actors), ADMIN)
        self.clock_mode = "manual"
        self.streams: dict[str, Stream] = {}

    # -- HTTP helpers --

    def _token(self, actor: str, scopes: list[str] | None = None) -> str:
        key = (actor, tuple(scopes) if scopes is not None else None)
        if key not in self._tokens:
            if actor not in self.credentials:
                raise StepFailed(f"unknown actor {actor!r}: declare it under actors")
            client_id, secret = self.credentials[actor]
            form = {
                "grant_type": "client_credentials",
                "client_id": client_id,
                "client_secret": secret,
            }
            if scopes is not None:
                form["scope"] = " ".join(scopes)
            r = self.http.post("/oauth2/token", data=form)
            for _ in range(3):  # a served sandbox may limit logins per client
                if r.status_code != 429:
                    break
                time.sleep(float(r.headers.get("Retry-After", "1")))
                r = self.http.post("/oauth2/token", data=form)
            if r.status_code != 200:
                raise StepFailed(f"login of {actor} refused: {r.status_code} {r.text[:200]}")
            self._tokens[key] = r.json()["access_token"]
        return self._tokens[key]

    def _send(
        self,
        method: str,
        path: str,
        *,
        actor: str | None,
        body: Any = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        scopes: list[str] | None = None,
        expected: int = 200,
    ) -> httpx.Response:
        """Send as `actor`. A 429 is refused before any work is done, so unless the step
        expects one it is waited out and sent again (a served sandbox limits rates)."""
        sent = dict(headers or {})
        who = actor or self.default_actor
        if who != ANONYMOUS and not any(k.lower() == "authorization" for k in sent):
            sent["Authorization"] = f"Bearer {self._token(who, scopes)}"
        kwargs: dict[str, Any] = {"headers": sent}
        if query:
            kwargs["params"] = query
        if body is not None:
            kwargs["json"] = body
        try:
            r = self.http.request(method, path, **kwargs)
            for _ in range(5):
                if r.status_code != 429 or expected == 429:
                    break
                time.sleep(float(r.headers.get("Retry-After", "1")))
                r = self.http.request(method, path, **kwargs)
            return r
        except httpx.HTTPError as exc:
            raise StepFailed(f"{method} {path}: {exc}") from exc

    def _with_clock(self, value: Any) -> Any:
        if {"now", "now_ms"} & references(value):
            r = self.http.get("/v2/sandbox/clock")
            self.variables.update(clock_variables(parse_time(r.json()["now"])))
        return substitute(value, self.variables)

    # -- steps --

    def run(self) -> ScenarioResult:
        result = ScenarioResult(self.scenario)
        started = time.perf_counter()
        r = self.http.get("/v2/sandbox/clock")
        if r.status_code == 200:
            self.clock_mode = r.json().get("mode", "manual")
        work: list[tuple[str, Callable[[], int | None]]] = []
        for name, spec in self.scenario.actors.items():
            work.append((f"actor {name}", partial(self._create_actor, name, spec)))
        for step in self.scenario.steps:
            work.append((_label(step), partial(self._step, step)))
        try:
            for index, (label, action) in enumerate(work, start=1):
                t0 = time.perf_counter()
                diffs: list[str] = []
                status: int | None = None
                self._answer = None
                try:
                    status = action()
                except _Mismatch as exc:
                    diffs, status = exc.diffs, exc.status
                except (StepFailed, UnknownVariable, ValueError, KeyError) as exc:
                    diffs = [_describe(exc)]
                step_result = StepResult(
                    index, label, not diffs, diffs, status, time.perf_counter() - t0, self._answer
                )
                result.steps.append(step_result)
                if self.on_step is not None:
                    self.on_step(step_result)
        finally:
            for stream in self.streams.values():
                stream.close()
            self.streams.clear()
        result.seconds = time.perf_counter() - started
        return result

    def _step(self, step: Any) -> int | None:
        if isinstance(step, RequestStep):
            return self._request(step)
        if isinstance(step, FaultStep):
            return self._fault(step)
        if isinstance(step, AdvanceStep):
            return self._advance(step.advance)
        if isinstance(step, SetToStep):
            return self._set_to(format_time(step.set_to))
        if isinstance(step, PriceStep):
            market = substitute(step.price.market, self.variables)
            price = substitute(step.price.price, self.variables)
            r = self._send(
                "POST", f"/v2/sandbox/markets/{market}/price", actor=ADMIN, body={"price": price}
            )
            _expect_ok(r)
            return r.status_code
        if isinstance(step, ActorStep):
            return self._create_actor(step.create_actor, step)
        if isinstance(step, BalancesStep):
            return self._balances(step)
        if isinstance(step, OrderStep):
            return self._order(step)
        if isinstance(step, StreamStep):
            return self._open_stream(step)
        if isinstance(step, MessagesStep):
            return self._expect_messages(step)
        if isinstance(step, CloseStreamStep):
            return self._close_stream(step.close_stream)
        raise StepFailed(f"unknown step {type(step).__name__}")

    def _create_actor(self, name: str, spec: Actor | ActorStep) -> int:
        if name in self.credentials:
            raise StepFailed(f"actor {name} exists already")
        body: dict[str, Any] = {"scopes": spec.scopes} if spec.scopes else {}
        if spec.self_match_prevention:
            body["self_match_prevention"] = True
        if spec.identity_labels:
            body["identity_labels"] = True
        r = self._send("POST", "/v2/sandbox/customers", actor=ADMIN, body=body or None)
        _expect_ok(r)
        made = r.json()
        self.credentials[name] = (made["client_id"], made["client_secret"])
        for key in ("customer_id", "client_id", "client_secret", "profile_id"):
            self.variables[f"{name}.{key}"] = made[key]
        return r.status_code

    def _fault(self, step: FaultStep) -> int:
        actor = substitute(step.actor, self.variables) if step.actor else ADMIN
        body = self._with_clock(step.fault)
        r = self._send("POST", FAULTS_PATH, actor=actor, body=body)
        _expect_ok(r)
        armed = r.json()
        diffs: list[str] = []
        for name, where in step.save.items():
            try:
                self.variables[name] = extract(armed, where)
            except KeyError:
                diffs.append(f"save {name}: the armed rule has no {where}")
        if diffs:
            raise _Mismatch(diffs, r.status_code)
        return r.status_code

    def _request(self, step: RequestStep) -> int | None:
        req = step.request
        path = self._with_clock(req.path)
        actor = substitute(req.actor, self.variables) if req.actor else None
        if step.expect.wire is not None:
            return self._spoiled(step, path, actor)
        r = self._send(
            req.method,
            path,
            actor=actor,
            body=self._with_clock(req.body),
            query=self._with_clock(req.query),
            headers=self._with_clock(req.headers),
            scopes=req.scopes,
            expected=step.expect.status,
        )
        self._answer = r.content
        body = _body(r)
        expect = step.expect
        diffs: list[str] = []
        if r.status_code != expect.status:
            diffs.append(f"status: expected {expect.status}, got {r.status_code}")
        # Saved first, so that the expected body may name what this very response defines.
        for name, where in step.save.items():
            try:
                self.variables[name] = extract(body, where)
            except KeyError:
                diffs.append(f"save {name}: the response has no {where}")
        if expect.body is not None:
            wanted = self._with_clock(expect.body)
            diffs += compare(wanted, body, mode=expect.match, ignore=expect.ignore)
        if diffs:
            if r.status_code != expect.status and isinstance(body, dict) and "detail" in body:
                diffs.append(f"detail: {body['detail']}")
            raise _Mismatch(diffs, r.status_code)
        return r.status_code

    def _spoiled(self, step: RequestStep, path: str, actor: str | None) -> int | None:
        """A request whose answer a wire fault should spoil: what the client got, compared
        with the outcome expected."""
        req = step.request
        sent = dict(self._with_clock(req.headers) or {})
        who = actor or self.default_actor
        if who != ANONYMOUS and not any(k.lower() == "authorization" for k in sent):
            sent["Authorization"] = f"Bearer {self._token(who, req.scopes)}"
        kwargs: dict[str, Any] = {"headers": sent}
        query = self._with_clock(req.query)
        if query:
            kwargs["params"] = query
        body = self._with_clock(req.body)
        if body is not None:
            kwargs["json"] = body
        got, status = wire_outcome(self.http, req.method, path, kwargs)
        if got != step.expect.wire:
            raise _Mismatch([f"wire: expected {step.expect.wire}, got {got}"], status)
        return status

    def _advance(self, delta: timedelta) -> int | None:
        if self.clock_mode == "wall":
            time.sleep(delta.total_seconds())
            return None
        if delta % timedelta(seconds=1) == timedelta(0):
            r = self._send(
                "POST",
                "/v2/sandbox/clock",
                actor=ADMIN,
                body={"advance_seconds": delta // timedelta(seconds=1)},
            )
            _expect_ok(r)
            return r.status_code
        now = parse_time(self.http.get("/v2/sandbox/clock").json()["now"])
        return self._set_to(format_time(now + delta))

    def _set_to(self, when: str) -> int:
        if self.clock_mode == "wall":
            raise StepFailed("set_to needs a manual clock; this sandbox runs on a wall clock")
        r = self._send("POST", "/v2/sandbox/clock", actor=ADMIN, body={"set_to": when})
        _expect_ok(r)
        return r.status_code

    def _balances(self, step: BalancesStep) -> int:
        check = step.expect_balances
        profile = substitute(check.profile, self.variables)
        r = self._send("GET", f"/v2/profiles/{profile}/balances", actor=check.actor)
        _expect_ok(r)
        have = {item["asset"]: item for item in r.json()["items"]}
        diffs: list[str] = []
        for asset, wanted in check.balances.items():
            item = have.get(asset)
            if item is None:
                diffs.append(f"{asset}: no such balance")
                continue
            pairs = (
                [("available", wanted)]
                if isinstance(wanted, str)
                else [("available", wanted.available), ("trading", wanted.trading)]
            )
            for name, amount in pairs:
                if amount is None:
                    continue
                amount = substitute(amount, self.variables)
                if not same_amount(amount, item[name]):
                    diffs.append(f"{asset}.{name}: expected {amount}, got {item[name]}")
        if diffs:
            raise _Mismatch(diffs, r.status_code)
        return r.status_code

    def _order(self, step: OrderStep) -> int:
        check = step.expect_order
        profile = substitute(check.profile, self.variables)
        order_id = substitute(check.id, self.variables)
        r = self._send("GET", f"/v2/profiles/{profile}/orders/{order_id}", actor=check.actor)
        _expect_ok(r)
        diffs = compare(
            self._with_clock(check.body), r.json(), mode=check.match, ignore=check.ignore
        )
        if diffs:
            raise _Mismatch(diffs, r.status_code)
        return r.status_code

    # -- WebSocket streams --

    def _settle(self) -> None:
        try:
            self.target.settle(list(self.streams.values()))
        except (StreamsUnsupported, TimeoutError) as exc:
            raise StepFailed(str(exc)) from exc

    def _open_stream(self, step: StreamStep) -> int | None:
        """Open, and wait for the first messages (a book's SNAPSHOT, a market's last
        trade), so that what follows is the same on every run."""
        name = step.stream.name
        if name in self.streams:
            raise StepFailed(f"a stream named {name} is open already")
        path = substitute(step.stream.path, self.variables)
        try:
            stream = self.target.open_stream(path)
        except StreamsUnsupported as exc:
            raise StepFailed(str(exc)) from exc
        self.streams[name] = stream
        self._settle()
        if stream.closed is not None:
            code, reason = stream.closed
            del self.streams[name]
            stream.close()
            raise StepFailed(f"the server closed stream {name} at once: {code} {reason}".rstrip())
        return None

    def _expect_messages(self, step: MessagesStep) -> int | None:
        check = step.expect_messages
        stream = self.streams.get(check.stream)
        if stream is None:
            raise StepFailed(f"no open stream named {check.stream}")
        self._settle()
        got, stream.messages = stream.messages, []
        wanted = self._with_clock(check.messages)
        diffs = message_diffs(wanted, got, mode=check.match, ignore=check.ignore)
        if stream.closed is not None:
            code, reason = stream.closed
            diffs.append(f"the server closed the stream: {code} {reason}".rstrip())
        if diffs:
            raise _Mismatch(diffs, None)
        return None

    def _close_stream(self, name: str) -> int | None:
        stream = self.streams.pop(name, None)
        if stream is None:
            raise StepFailed(f"no open stream named {name}")
        stream.close()
        return None


def wire_outcome(
    http: httpx.Client, method: str, path: str, kwargs: dict[str, Any]
) -> tuple[str, int | None]:
    """What the client got, as a wire fault's outcome (`drop`, `reset`, `empty`,
    `truncate`) or `an answer N`, and the status line's status if one came. In-process
    the app's stand-in for the connection (`sandex.api_adapter.wire_faults`) raises what a
    connection would and announces a truncated body's whole length."""
    try:
        with http.stream(method, path, **kwargs) as r:
            try:
                content = r.read()
            except httpx.TransportError:  # the status line came, then the body stopped
                return "truncate", r.status_code
            announced = r.headers.get("content-length")
            if announced is not None and announced.isdigit() and int(announced) > len(content):
                return "truncate", r.status_code
            if r.status_code == 200 and not content:
                return "empty", r.status_code
            return f"an answer {r.status_code}", r.status_code
    except httpx.RemoteProtocolError:  # the connection ended before any answer
        return "drop", None
    except (httpx.ReadError, httpx.WriteError):  # reset (ECONNRESET, EPIPE) before any answer
        return "reset", None


def message_diffs(
    wanted: list[Any], got: list[Any], *, mode: str = "subset", ignore: list[str] | None = None
) -> list[str]:
    """Every difference between the messages expected and those received, in order: each
    pair compared as a body, then each message missing or extra shown whole."""
    diffs: list[str] = []
    if len(wanted) != len(got):
        diffs.append(f"expected {len(wanted)} messages, got {len(got)}")
    for i, (e, a) in enumerate(zip(wanted, got, strict=False)):
        diffs += [f"message {i + 1}: {d}" for d in compare(e, a, mode=mode, ignore=ignore or [])]
    for i in range(len(got), len(wanted)):
        diffs.append(f"message {i + 1}: missing (expected {_json(wanted[i])})")
    for i in range(len(wanted), len(got)):
        diffs.append(f"message {i + 1}: unexpected {_json(got[i])}")
    return diffs


def _json(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))


class _Mismatch(Exception):
    def __init__(self, diffs: list[str], status: int | None) -> None:
        super().__init__(diffs[0] if diffs else "")
        self.diffs = diffs
        self.status = status


def _expect_ok(r: httpx.Response) -> None:
    if r.status_code != 200:
        body = _body(r)
        detail = body.get("detail") if isinstance(body, dict) else body
        raise _Mismatch([f"status: expected 200, got {r.status_code}: {detail}"], r.status_code)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, UnknownVariable):
        return f"unknown variable {{{exc.args[0]}}}: save it or declare the actor first"
    if isinstance(exc, KeyError):
        return f"missing {exc.args[0]}"
    return str(exc)


def _label(step: Any) -> str:
    note = f"  ({step.note})" if getattr(step, "note", None) else ""
    if isinstance(step, RequestStep):
        who = f" as {step.request.actor}" if step.request.actor else ""
        return f"{step.request.method} {step.request.path}{who}{note}"
    if isinstance(step, FaultStep):
        rule = step.fault
        match: dict[str, Any] = rule["match"] if isinstance(rule.get("match"), dict) else {}
        action: dict[str, Any] = rule["action"] if isinstance(rule.get("action"), dict) else {}
        what = match.get("operation") or f"{match.get('method', '')} {match.get('path', '')}"
        who = f" as {step.actor}" if step.actor else ""
        kind = ",".join(action)
        return f"fault {str(what).strip()} {rule.get('when', 'before')} {kind}{who}{note}"
    if isinstance(step, AdvanceStep):
        return f"advance {format_duration(step.advance)}{note}"
    if isinstance(step, SetToStep):
        return f"set_to {format_time(step.set_to)}{note}"
    if isinstance(step, PriceStep):
        return f"price {step.price.market} {step.price.price}{note}"
    if isinstance(step, ActorStep):
        return f"actor {step.create_actor}{note}"
    if isinstance(step, BalancesStep):
        assets = ", ".join(step.expect_balances.balances)
        return f"expect_balances {step.expect_balances.profile} {assets}{note}"
    if isinstance(step, OrderStep):
        return f"expect_order {step.expect_order.id}{note}"
    if isinstance(step, StreamStep):
        return f"stream {step.stream.name} {step.stream.path}{note}"
    if isinstance(step, MessagesStep):
        check = step.expect_messages
        return f"expect_messages {check.stream} ({len(check.messages)}){note}"
    if isinstance(step, CloseStreamStep):
        return f"close_stream {step.close_stream}{note}"
    return type(step).__name__


def run_in_process(
    scenario: Scenario,
    *,
    on_step: Callable[[StepResult], None] | None = None,
    keep_db: str | Path | None = None,
    check_invariants: bool = False,
    db: str | None = None,
) -> ScenarioResult:
    """Run on a fresh sandbox (`db`: an empty database to run it on, e.g. a PostgreSQL
    URL; a temporary file when None); the result carries the hash of the log it wrote."""
    # A throwaway database need not survive a power cut: no fsync per commit.
    settings = scenario.settings_model().model_copy(update={"durability": "NORMAL"})
    if check_invariants:
        settings = settings.model_copy(update={"assert_invariants": True})
    target = InProcess(settings, keep_db=keep_db, db=db)
    try:
        result = Runner(scenario, target, on_step).run()
    finally:
        target.close()
    result.log_hash = target.log_hash()
    return result


def run_remote(
    scenario: Scenario,
    url: str,
    *,
    client_id: str = BOOTSTRAP_CLIENT,
    client_secret: str = BOOTSTRAP_SECRET,
    on_step: Callable[[StepResult], None] | None = None,
) -> ScenarioResult:
    target = Remote(url, client_id, client_secret)
    try:
        return Runner(scenario, target, on_step).run()
    finally:
        target.close()
