"""HTTP fault rules: which calls of a world fail, stall or lose their answer (issue 31).

A rule is armed, removed and decided by the writer like any other command, so that every
decision is an event of the log (`SandboxFaultArmed`, `SandboxFaultRemoved`,
`SandboxFaultFired`, `SandboxFaultPassed`) and a replay, a rebuild, time travel or a fork
fails exactly the calls the run failed. The adapter matches a call against the rules
(operation, caller, profile, body fields) and asks the writer to decide the ones that
match; the writer counts (`skip`, `times`), draws (`probability`, a delay's range) and
checks the time (`until`, `ttl_seconds`). Draws hash the world's seed, the rule's id and
its match count, so the n-th matching call of a rule draws the same whatever else runs.
A `Prefer: sandbox-fault=<name>` header fires one of `TEMPLATES` for that call alone."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from sandex.engine.kernel.clock import format_time, parse_time
from sandex.engine.kernel.commands import Command
from sandex.engine.kernel.errors import Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

KEY = "sandbox_faults"
WHEN = ("before", "after")
# What a fired rule does: answer a problem, wait, or do something to the connection.
WIRE_ACTIONS = ("drop", "reset", "empty", "truncate")
ACTIONS = ("problem", "delay_ms", *WIRE_ACTIONS)
_TOP = ("match", "when", "action", "times", "skip", "probability", "until", "ttl_seconds")
_MATCH = ("operation", "method", "path", "client_id", "profile_id", "body")
_PROBLEM = ("status", "type", "detail", "retry_after")
# A rule's status as the API shows it: it fires, it fired `times` times, or its time is up.
STATUSES = ("active", "spent", "expired")
MAX_RULES = 1000
MAX_DELAY_MS = 60_000
_MAX_COUNT = 1_000_000
_MAX_TTL = 10 * 365 * 24 * 3600
_MAX_TEXT = 500
_DRAW_SCALE = 1_000_000  # a probability draw is a whole number of millionths
_TEMPLATE_STREAM = "sandbox-faults"

# The one-off faults a request asks for with `Prefer: sandbox-fault=<name>`.
TEMPLATES: dict[str, dict[str, Any]] = {
    "unavailable": {"when": "before", "action": {"problem": {"status": 503}}},
    "server-error": {"when": "before", "action": {"problem": {"status": 500}}},
    "bad-gateway": {"when": "before", "action": {"problem": {"status": 502}}},
    "timeout": {"when": "before", "action": {"problem": {"status": 504}}},
    "rate-limited": {"when": "before", "action": {"problem": {"status": 429, "retry_after": 1}}},
    "conflict": {"when": "before", "action": {"problem": {"status": 409}}},
    "slow": {"when": "before", "action": {"delay_ms": {"min": 500, "max": 2000}}},
    "lost-answer": {"when": "after", "action": {"drop": True}},
    "reset": {"when": "after", "action": {"reset": True}},
    "empty": {"when": "after", "action": {"empty": True}},
    "truncate": {"when": "after", "action": {"truncate": True}},
}


@dataclass(frozen=True, slots=True)
class ArmFault(Command):
    """Arm the rule `rule` (the request's body, as the issue spells it). `owner` is the
    tenant's customer whose calls alone it matches (None: the world's, any call);
    `operations` the (operationId, method, path template) a rule may match."""

    rule: dict[str, Any] = field(default_factory=dict)
    owner: str | None = None
    operations: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class RemoveFault(Command):
    """Remove a rule; `owner` as ArmFault's: a tenant removes only its own."""

    rule_id: str = ""
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class DecideFault(Command):
    """A call matched `rule_ids` (in the order they were armed) at `when`, or asked for
    `template`: which fires, if any."""

    operation: str = ""
    when: str = "before"
    rule_ids: tuple[str, ...] = ()
    template: str | None = None


def rules(state: State) -> dict[str, dict[str, Any]]:
    return state.ext.setdefault(KEY, {})  # type: ignore[no-any-return]


# -- checking a rule --------------------------------------------------------------------


def _whole(value: Any, name: str, least: int, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise Invalid(f"{name} invalid: a whole number from {least} to {most}", field=name)
    return value


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value or len(value) > _MAX_TEXT:
        raise Invalid(f"{name} invalid: a string of 1 to {_MAX_TEXT} characters", field=name)
    return value


def _object(value: Any, name: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise Invalid(f"{name} invalid: must be an object", field=name)
    for key in value:
        if key not in allowed:
            raise Invalid(
                f"{name}.{key} invalid: unknown field; one of {', '.join(allowed)}",
                field=f"{name}.{key}",
            )
    return value


def _match(
    given: Any, owner: str | None, operations: tuple[tuple[str, str, str], ...]
) -> dict[str, Any]:
    m = _object(given, "match", _MATCH)
    match: dict[str, Any] = {}
    if "operation" in m:
        if "method" in m or "path" in m:
            raise Invalid(
                "match.operation invalid: give operation, or method and path, not both",
                field="match.operation",
            )
        name = _text(m["operation"], "match.operation")
        if name not in {op for op, _, _ in operations}:
            raise Invalid(
                f"match.operation invalid: no operation a rule can match has the"
                f" operationId {name[:64]}",
                field="match.operation",
            )
        match["operation"] = name
    elif "method" in m or "path" in m:
        method = _text(m.get("method"), "match.method").upper()
        path = _text(m.get("path"), "match.path")
        found = [op for op, verb, template in operations if verb == method and template == path]
        if not found:
            raise Invalid(
                f"match.path invalid: no operation a rule can match is {method} {path[:128]}"
                " (a path template, as /v2/profiles/{profile_id}/orders)",
                field="match.path",
            )
        match.update(operation=found[0], method=method, path=path)
    else:
        raise Invalid(
            "match.operation is required (or match.method and match.path)", field="match.operation"
        )
    for name in ("client_id", "profile_id"):
        if name in m:
            match[name] = _text(m[name], f"match.{name}")
    if "body" in m:
        body = m["body"]
        if not isinstance(body, dict) or not body:
            raise Invalid("match.body invalid: an object of fields and values", field="match.body")
        for key, value in body.items():
            if value is None or isinstance(value, dict | list):
                raise Invalid(
                    f"match.body.{key} invalid: a string, number or boolean",
                    field=f"match.body.{key}",
                )
        match["body"] = dict(body)
    if owner is not None:
        match["customer_id"] = owner
    return match


def _action(given: Any) -> dict[str, Any]:
    a = _object(given, "action", ACTIONS)
    if len(a) != 1:
        raise Invalid(f"action invalid: exactly one of {', '.join(ACTIONS)}", field="action")
    kind, value = next(iter(a.items()))
    if kind == "problem":
        p = _object(value, "action.problem", _PROBLEM)
        problem: dict[str, Any] = {
            "status": _whole(p.get("status"), "action.problem.status", 400, 599)
        }
        if p.get("type") is not None:
            kind_uri = _text(p["type"], "action.problem.type")
            if not kind_uri.startswith(("https://", "about:blank")):
                raise Invalid(
                    "action.problem.type invalid: a problem type URI (https://...) or about:blank",
                    field="action.problem.type",
                )
            problem["type"] = kind_uri
        if p.get("detail") is not None:
            problem["detail"] = _text(p["detail"], "action.problem.detail")
        if p.get("retry_after") is not None:
            problem["retry_after"] = _whole(
                p["retry_after"], "action.problem.retry_after", 0, 86_400
            )
        return {"problem": problem}
    if kind == "delay_ms":
        if isinstance(value, dict):
            d = _object(value, "action.delay_ms", ("min", "max"))
            low = _whole(d.get("min"), "action.delay_ms.min", 0, MAX_DELAY_MS)
            high = _whole(d.get("max"), "action.delay_ms.max", 0, MAX_DELAY_MS)
            if high < low:
                raise Invalid(
                    "action.delay_ms.max invalid: at least min", field="action.delay_ms.max"
                )
            return {"delay_ms": {"min": low, "max": high}}
        return {"delay_ms": _whole(value, "action.delay_ms", 0, MAX_DELAY_MS)}
    if value is not True:
        raise Invalid(f"action.{kind} invalid: must be true", field=f"action.{kind}")
    return {kind: True}


def _probability(value: Any) -> str:
    try:
        number = Decimal(str(value)) if not isinstance(value, bool) else None
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite() or not 0 <= number <= 1:
        raise Invalid("probability invalid: a decimal from 0 to 1", field="probability")
    return format(number.normalize(), "f")


def check_rule(
    ctx: Ctx,
    given: dict[str, Any],
    owner: str | None,
    operations: tuple[tuple[str, str, str], ...],
) -> dict[str, Any]:
    """The rule's recorded form, or an `Invalid` naming the first wrong field."""
    if not isinstance(given, dict):
        raise Invalid("request body must be a JSON object", field="body")
    for key in given:
        if key not in _TOP:
            raise Invalid(f"{key} invalid: unknown field", field=key)
    if "match" not in given:
        raise Invalid("match is required", field="match")
    if "action" not in given:
        raise Invalid("action is required", field="action")
    when = given.get("when", "before")
    if when not in WHEN:
        raise Invalid("when invalid: before or after", field="when")
    rule: dict[str, Any] = {
        "match": _match(given["match"], owner, operations),
        "when": when,
        "action": _action(given["action"]),
        "times": None,
        "skip": 0,
        "probability": "1",
        "until": None,
        "ttl_seconds": None,
    }
    if given.get("times") is not None:
        rule["times"] = _whole(given["times"], "times", 1, _MAX_COUNT)
    if given.get("skip") is not None:
        rule["skip"] = _whole(given["skip"], "skip", 0, _MAX_COUNT)
    if given.get("probability") is not None:
        rule["probability"] = _probability(given["probability"])
    ends: list[datetime] = []
    if given.get("until") is not None:
        try:
            until = parse_time(_text(given["until"], "until"))
        except ValueError as exc:
            raise Invalid("until invalid: an RFC 3339 time with offset", field="until") from exc
        if until <= ctx.now:
            raise Invalid("until invalid: must be after the engine's now", field="until")
        rule["until"] = format_time(until)
        ends.append(until)
    if given.get("ttl_seconds") is not None:
        rule["ttl_seconds"] = _whole(given["ttl_seconds"], "ttl_seconds", 1, _MAX_TTL)
        ends.append(ctx.now + timedelta(seconds=rule["ttl_seconds"]))
    rule["expires_at"] = format_time(min(ends)) if ends else None
    return rule


# -- decisions --------------------------------------------------------------------------


def arm_fault(ctx: Ctx, cmd: ArmFault) -> dict[str, Any]:
    rule = check_rule(ctx, cmd.rule, cmd.owner, cmd.operations)
    if len(rules(ctx.state)) >= MAX_RULES:
        raise Invalid(
            f"match invalid: a world holds at most {MAX_RULES} rules; remove some", field="match"
        )
    rule_id = ctx.ids.uuid()
    ctx.emit(
        "SandboxFaultArmed", f"sandbox-fault-{rule_id}", {"id": rule_id, "owner": cmd.owner, **rule}
    )
    made = rules(ctx.state)[rule_id]
    return {**rule_view(made), "owner": cmd.owner or "", "position": made["position"]}


def remove_fault(ctx: Ctx, cmd: RemoveFault) -> dict[str, Any]:
    rule = rules(ctx.state).get(cmd.rule_id)
    if rule is None or (cmd.owner is not None and rule["owner"] != cmd.owner):
        raise NotFound(f"fault rule not found with id {cmd.rule_id[:64]}")
    view = rule_view(rule)
    ctx.emit("SandboxFaultRemoved", f"sandbox-fault-{cmd.rule_id}", {"id": cmd.rule_id})
    return view


def draw(seed: int, subject: str, count: int, salt: str) -> int:
    """A number from the seed, a rule (or template) and its match count: the same for the
    same n-th match of the same rule, in any run of the same world."""
    text = f"{seed}:{subject}:{count}:{salt}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


def _taken(action: dict[str, Any], seed: int, subject: str, count: int) -> dict[str, Any]:
    """The action as it is carried out: a delay's range drawn to one delay."""
    delay = action.get("delay_ms")
    if isinstance(delay, dict):
        span = delay["max"] - delay["min"] + 1
        return {"delay_ms": delay["min"] + draw(seed, subject, count, "delay") % span}
    return action


def template_of(name: str) -> dict[str, Any]:
    """The template a `Prefer: sandbox-fault=<name>` header names; a 400 naming the
    header when there is none of that name."""
    template = TEMPLATES.get(name)
    if template is None:
        raise Invalid(
            f"Prefer invalid: sandbox-fault={name[:64]} is none of {', '.join(TEMPLATES)}",
            field="Prefer",
        )
    return template


def decide_fault(ctx: Ctx, cmd: DecideFault) -> dict[str, Any]:
    """The first of the call's rules that fires, recorded; the rules it passed by are
    recorded too. `dead`: the rules that can fire no more (spent, expired, removed)."""
    seed = ctx.ids.seed
    if cmd.template is not None:
        template = template_of(cmd.template)
        action = _taken(template["action"], seed, cmd.template, ctx.state.position + 1)
        fired = {
            "template": cmd.template,
            "operation": cmd.operation,
            "when": template["when"],
            "action": action,
        }
        ctx.emit("SandboxFaultFired", _TEMPLATE_STREAM, fired)
        return {"fired": fired, "dead": []}
    known = rules(ctx.state)
    dead: list[str] = []
    for rule_id in cmd.rule_ids:
        rule = known.get(rule_id)
        if rule is None or rule["spent"]:
            dead.append(rule_id)
            continue
        if rule["when"] != cmd.when:
            continue
        if rule["expires_at"] is not None and ctx.now >= parse_time(rule["expires_at"]):
            dead.append(rule_id)
            continue
        count = rule["matched"] + 1
        stream = f"sandbox-fault-{rule_id}"
        base = {"rule_id": rule_id, "operation": cmd.operation, "when": cmd.when, "match": count}
        if count <= rule["skip"]:
            ctx.emit("SandboxFaultPassed", stream, {**base, "reason": "skip"})
            continue
        drawn: str | None = None
        if rule["probability"] != "1":
            number = Decimal(draw(seed, rule_id, count, "probability") % _DRAW_SCALE)
            share = number / _DRAW_SCALE
            drawn = format(share, "f")
            if share >= Decimal(rule["probability"]):
                ctx.emit(
                    "SandboxFaultPassed", stream, {**base, "reason": "probability", "draw": drawn}
                )
                continue
        spent = rule["times"] is not None and rule["fired"] + 1 >= rule["times"]
        fired = {**base, "action": _taken(rule["action"], seed, rule_id, count), "spent": spent}
        if drawn is not None:
            fired["draw"] = drawn
        ctx.emit("SandboxFaultFired", stream, fired)
        if spent:
            dead.append(rule_id)
        return {"fired": fired, "dead": dead}
    return {"fired": None, "dead": dead}


# -- appliers ---------------------------------------------------------------------------


def _armed(state: State, e: Event) -> None:
    data = e.data
    rules(state)[data["id"]] = {
        **data,
        "armed_at": e.occurred_at,
        "position": e.position,
        "matched": 0,
        "fired": 0,
        "spent": False,
    }
    state.mark(KEY, data["id"])


def _removed(state: State, e: Event) -> None:
    rules(state).pop(e.data["id"], None)
    state.mark(KEY, e.data["id"])


def _fired(state: State, e: Event) -> None:
    rule_id = e.data.get("rule_id")
    if rule_id is None:  # a template's: no rule to count
        return
    rule = rules(state)[rule_id]
    rule["matched"] = e.data["match"]
    rule["fired"] += 1
    rule["spent"] = e.data["spent"]
    state.mark(KEY, rule_id)


def _passed(state: State, e: Event) -> None:
    rule_id = e.data["rule_id"]
    rules(state)[rule_id]["matched"] = e.data["match"]
    state.mark(KEY, rule_id)


# -- views ------------------------------------------------------------------------------


def rule_view(rule: dict[str, Any]) -> dict[str, Any]:
    """A rule as the API answers it: its body as armed (normalised), its id, owner and
    counts. Whether it expired is the reader's to say (it depends on the time read)."""
    return {
        "id": rule["id"],
        "match": rule["match"],
        "when": rule["when"],
        "action": rule["action"],
        "times": rule["times"],
        "skip": rule["skip"],
        "probability": rule["probability"],
        "until": rule["until"],
        "ttl_seconds": rule["ttl_seconds"],
        "expires_at": rule["expires_at"],
        "armed_at": rule["armed_at"],
        "matched": rule["matched"],
        "fired": rule["fired"],
        "spent": rule["spent"],
    }


def status_of(view: dict[str, Any], now: datetime) -> str:
    """One of STATUSES for a rule's view, read at engine time `now`."""
    if view["spent"]:
        return "spent"
    expires = view["expires_at"]
    if expires is not None and now >= parse_time(expires):
        return "expired"
    return "active"


def _row(state: State, rule_id: str) -> dict[str, Any] | None:
    rule = rules(state).get(rule_id)
    if rule is None:
        return None
    return {
        "id": rule_id,
        "owner": rule["owner"] or "",
        "armed_at": rule["armed_at"],
        "position": rule["position"],
        "body": orjson.dumps(rule_view(rule)).decode(),
    }


TABLE = ReadModelTable(
    "sandbox_faults",
    {"id": str, "owner": str, "armed_at": str, "position": int, "body": str},
    pk=("id",),
    kind=KEY,
    row=_row,
    key_columns=("id",),
    keys=lambda s: rules(s).keys(),
)

REGISTRATION = Registration(
    {ArmFault: arm_fault, RemoveFault: remove_fault, DecideFault: decide_fault},
    {
        "SandboxFaultArmed": _armed,
        "SandboxFaultRemoved": _removed,
        "SandboxFaultFired": _fired,
        "SandboxFaultPassed": _passed,
    },
    tables=(TABLE,),
)
