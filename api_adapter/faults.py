"""The fault gate: the calls a world's fault rules (sandex.engine.domain.sandbox_faults) match,
and what a fired rule does to them.

`FaultIndex` keeps the armed rules in memory by operation id, so that a call of an
operation no rule names costs one dict lookup, and no rule at all an empty check. It
follows the engine: each arm, removal and spent or expired rule as the routes and the
writer answer them, and a whole reload from the read model when the app is built (a
start, a restart, a fork's or a world's app) and after a snapshot restore or a reset.

`FaultGate` is one of the request pipeline's gates (`app.state.gates`): it matches the
call (operation, caller, profile, body fields) and, for the rules that act `before`,
asks the writer to decide (a `DecideFault`, recorded) and carries out what fired: a
problem answered instead of the call, a delay, or a wire action. `FaultLayer`, a pure
ASGI layer around the fast lane and the routes, does the same for `after` rules once the
call was answered without a refusal, that is after its commit: the decision is recorded
after the call's events, then its action replaces the answer. What fired is left for the
request log in the request's state (`FIRED`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sandex.api_adapter import wire_faults
from sandex.api_adapter.middleware.body_guard import body_value
from sandex.api_adapter.pipeline import FIRED, Passage
from sandex.api_adapter.problem_types import title_for
from sandex.api_adapter.problems import FaultProblem, render
from sandex.api_adapter.writer_bridge import actor_of, submit
from sandex.engine.domain.sandbox_faults import WIRE_ACTIONS, DecideFault, template_of
from sandex.engine.kernel.commands import SYSTEM, Actor
from sandex.engine.kernel.errors import LogFull

# The environment variable that starts `sandex serve` without the fault gate when "1":
# the baseline bench_faults measures the gate against (docs/faults.md); not a setting.
NO_FAULT_GATE = "SANDEX_NO_FAULT_GATE"
# The request state's key of the `after` rules a call matched, decided once answered.
_AFTER = "sandex.fault_after"
# The request state's key of the template a `Prefer` header names (FaultLayer notes it).
_PREFERRED = "sandex.fault_preferred"
_PREFER = b"prefer"
_PREFERENCE = "sandbox-fault="


@dataclass(frozen=True, slots=True)
class Rule:
    """What the gate matches of a rule; the writer decides the rest (counts, time)."""

    id: str
    position: int
    when: str
    owner: str | None
    client_id: str | None
    profile_id: str | None
    body: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, view: dict[str, Any]) -> Rule:
        match = view["match"]
        return cls(
            view["id"],
            view.get("position", 0),
            view["when"],
            match.get("customer_id"),
            match.get("client_id"),
            match.get("profile_id"),
            tuple((match.get("body") or {}).items()),
        )

    def matches(self, scope: Scope, passage: Passage) -> bool:
        who = passage.principal
        if self.owner is not None and (who is None or who.customer_id != self.owner):
            return False
        if self.client_id is not None and (who is None or who.client_id != self.client_id):
            return False
        if self.profile_id is not None and _profile_of(scope, passage) != self.profile_id:
            return False
        if self.body:
            value = body_value(scope)
            if not isinstance(value, dict):
                return False
            for name, wanted in self.body:
                if value.get(name) != wanted:
                    return False
        return True


def _profile_of(scope: Scope, passage: Passage) -> Any:
    """The profile a call names: its path's `{profile_id}`, else its body's."""
    op = passage.operation
    if "{profile_id}" in op.path:
        path: str = scope["path"]
        start = path.find(op.head)
        if start >= 0:
            rest = path[start + len(op.head) :]
            return rest[: len(rest) - len(op.tail)] if op.tail else rest
    value = body_value(scope)
    return value.get("profile_id") if isinstance(value, dict) else None


class _Rules:
    """One operation's rules, grouped so that a call meets only those that can match it:
    by owner (the world's rules, each tenant's), then by the value of their first body
    field (a rule of `{"body": {"market": "ETHUSD"}}` is not met by a BTCUSD order)."""

    __slots__ = ("armed", "groups")

    def __init__(self) -> None:
        self.armed: list[Rule] = []  # in the order they were armed
        self.groups: dict[str | None, tuple[list[Rule], dict[str, dict[Any, list[Rule]]]]] = {}

    def regroup(self) -> None:
        self.armed.sort(key=lambda r: r.position)
        groups: dict[str | None, tuple[list[Rule], dict[str, dict[Any, list[Rule]]]]] = {}
        for rule in self.armed:
            plain, keyed = groups.setdefault(rule.owner, ([], {}))
            if rule.body and _hashable(rule.body[0][1]):
                name, value = rule.body[0]
                keyed.setdefault(name, {}).setdefault(value, []).append(rule)
            else:
                plain.append(rule)
        self.groups = groups

    def candidates(self, scope: Scope, passage: Passage) -> list[Rule]:
        """The rules that may match the call, in the order they were armed."""
        who = passage.principal
        owners: tuple[str | None, ...] = (None,) if who is None else (None, who.customer_id)
        found: list[Rule] = []
        for owner in owners:
            group = self.groups.get(owner)
            if group is None:
                continue
            plain, keyed = group
            found += plain
            if keyed:
                value = body_value(scope)
                if isinstance(value, dict):
                    for name, by_value in keyed.items():
                        wanted = value.get(name)
                        if _hashable(wanted):
                            found += by_value.get(wanted, ())
        if len(found) > 1:
            found.sort(key=lambda r: r.position)
        return found


def _hashable(value: Any) -> bool:
    return not isinstance(value, dict | list)


class FaultIndex:
    """The armed rules by operation id, in the order they were armed."""

    def __init__(self) -> None:
        self.by_operation: dict[str, _Rules] = {}
        self._operation_of: dict[str, str] = {}
        self.after = 0  # how many rules act after the call: the layer's cue

    def load(self, views: Iterable[dict[str, Any]]) -> None:
        """Every rule anew, from the read model (active ones: spent rules fire no more)."""
        self.by_operation = {}
        self._operation_of = {}
        self.after = 0
        for view in views:
            if not view["spent"]:
                self.add(view)

    def add(self, view: dict[str, Any]) -> None:
        rule = Rule.of(view)
        operation = view["match"]["operation"]
        rules = self.by_operation.setdefault(operation, _Rules())
        rules.armed.append(rule)
        rules.regroup()
        self._operation_of[rule.id] = operation
        self.after += rule.when == "after"

    def drop(self, rule_ids: Iterable[str]) -> None:
        for rule_id in rule_ids:
            operation = self._operation_of.pop(rule_id, None)
            if operation is None:
                continue
            rules = self.by_operation[operation]
            for rule in rules.armed:
                if rule.id == rule_id:
                    rules.armed.remove(rule)
                    rules.regroup()
                    self.after -= rule.when == "after"
                    break
            if not rules.armed:
                del self.by_operation[operation]


def reload(app_state: Any) -> None:
    """The index anew from the read model: after a snapshot restore or a reset, which
    bring back (or clear) the rules with the rest of the world."""
    app_state.faults.load(app_state.queries.sandbox_faults())


def _preference(scope: Scope) -> str | None:
    """The template a `Prefer: sandbox-fault=<name>` header names, if any."""
    for name, value in scope["headers"]:
        if name == _PREFER:
            for part in value.decode("latin-1").split(","):
                token = part.strip()
                if token.startswith(_PREFERENCE):
                    return token[len(_PREFERENCE) :].strip().strip('"')
    return None


def _actor(scope: Scope, passage: Passage) -> Actor:
    if passage.principal is None:
        return SYSTEM
    return actor_of(passage.principal, scope["state"].get("client_request_id", "") or "")


class FaultGate:
    """The pipeline's fault gate; `state` is the app's (engine, faults)."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.index: FaultIndex = state.faults

    def __call__(self, scope: MutableMapping[str, Any], passage: Passage) -> Awaitable[None] | None:
        template = scope["state"].get(_PREFERRED)
        by_operation = self.index.by_operation
        rules = by_operation.get(passage.operation.id) if by_operation else None
        if template is None and rules is None:
            return None
        op_id = passage.operation.id
        if template is not None:
            if template_of(template)["when"] == "after":
                scope["state"][_AFTER] = (op_id, (), template, passage)
                return None
            return self._before(scope, passage, DecideFault(operation=op_id, template=template))
        before: list[str] = []
        after: list[str] = []
        for rule in rules.candidates(scope, passage) if rules is not None else ():
            if rule.matches(scope, passage):
                (before if rule.when == "before" else after).append(rule.id)
        if after:
            scope["state"][_AFTER] = (op_id, tuple(after), None, passage)
        if not before:
            return None
        command = DecideFault(operation=op_id, when="before", rule_ids=tuple(before))
        return self._before(scope, passage, command)

    async def _before(
        self, scope: MutableMapping[str, Any], passage: Passage, command: DecideFault
    ) -> None:
        fired = await decide(self.state, scope, passage, command)
        if fired is not None:
            await carry_out(scope, fired, before=True)


async def decide(
    state: Any, scope: MutableMapping[str, Any], passage: Passage, command: DecideFault
) -> dict[str, Any] | None:
    """The writer's decision on a call (recorded): what fired, if anything. The rules
    that can fire no more leave the index."""
    command = DecideFault(
        actor=_actor(scope, passage),
        operation=command.operation,
        when=command.when,
        rule_ids=command.rule_ids,
        template=command.template,
    )
    try:
        answer = await submit(state.engine, command)
    except LogFull:  # a world whose log is full records nothing: no fault can fire
        return None
    if answer["dead"]:
        state.faults.drop(answer["dead"])
    fired: dict[str, Any] | None = answer["fired"]
    if fired is not None:
        kind = next(iter(fired["action"]))
        scope["state"][FIRED] = {
            "rule_id": fired.get("rule_id") or fired.get("template"),
            "template": fired.get("template"),
            "when": fired["when"],
            "action": kind,
        }
    return fired


async def carry_out(
    scope: MutableMapping[str, Any], fired: dict[str, Any], *, before: bool
) -> None:
    """Do what fired: raise its problem, wait its delay, or arm its wire action. A wire
    action before the call keeps the call from running (a 503 the wire replaces)."""
    action = fired["action"]
    kind = next(iter(action))
    if kind == "delay_ms":
        await asyncio.sleep(action["delay_ms"] / 1000)
        return
    if kind in WIRE_ACTIONS:
        wire_faults.arm(scope, kind)
        if before:
            raise FaultProblem(
                503,
                f"sandbox fault {_name(fired)}: {kind} before the call, which did not run",
                "about:blank",
                1,
                {"sandbox_fault": _name(fired)},
            )
        return
    raise problem_of(fired)


def _name(fired: dict[str, Any]) -> str:
    return str(fired.get("rule_id") or fired.get("template"))


def problem_of(fired: dict[str, Any]) -> FaultProblem:
    """The problem a fired rule answers: its status, its type (about:blank, titled by the
    status, unless given), a `Retry-After` for a 429 or a 503 (1 s unless given)."""
    given = fired["action"]["problem"]
    status = given["status"]
    wait = given.get("retry_after")
    if wait is None and status in (429, 503):
        wait = 1
    detail = given.get("detail") or f"{title_for(status)}: sandbox fault {_name(fired)}"
    return FaultProblem(
        status, detail, given.get("type", "about:blank"), wait, {"sandbox_fault": _name(fired)}
    )


class FaultLayer:
    """Pure ASGI layer around the fast lane and the routes: notes a `Prefer` header for
    the gate, and decides a call's `after` rules once it is answered without refusal."""

    def __init__(self, app: ASGIApp, state: Any) -> None:
        self.app = app
        self.state = state
        self.index: FaultIndex = state.faults

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        template = _preference(scope)
        if template is not None:
            scope.setdefault("state", {})[_PREFERRED] = template
        elif not self.index.after:
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, self._after(scope, receive, send))

    def _after(self, scope: Scope, receive: Receive, send: Send) -> Send:
        swallowed = False

        async def answer(message: Message) -> None:
            nonlocal swallowed
            if swallowed:
                return
            if message["type"] == "http.response.start":
                pending = scope["state"].pop(_AFTER, None)
                if pending is not None and message["status"] < 400:
                    op_id, rule_ids, template, passage = pending
                    command = DecideFault(
                        operation=op_id, when="after", rule_ids=rule_ids, template=template
                    )
                    fired = await decide(self.state, scope, passage, command)
                    if fired is not None:
                        try:
                            await carry_out(scope, fired, before=False)
                        except FaultProblem as exc:
                            swallowed = True
                            await render(exc, scope["method"], scope["path"])(scope, receive, send)
                            return
            await send(message)

        return answer
