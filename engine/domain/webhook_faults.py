"""Webhook delivery faults: a tenant's rules that make its own webhook's deliveries fail,
wait, arrive twice or arrive out of order (docs/faults.md).

Whether a receiver answered stays outside the log (sandex.engine.domain.webhook_registrations);
which delivery a rule hits does not: the deliverer asks the writer before a delivery
while one of its customer's rules is armed (`DecideWebhookDelivery`), and the writer
picks the rule, records `WebhookFaultFired` and, at its last firing, `WebhookFaultSpent`.
So a rebuild, time travel or a fork holds the same firings, and a rule fires once per
delivery however many threads look. Rules match in the order they were armed, one rule
per question: a `fail` rule answers each attempt (the next N attempts fail, so the
delivery arrives on attempt N+1); the others answer only a delivery's first attempt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from orjson import dumps

from sandex.engine.domain.webhook_registrations import registrations
from sandex.engine.kernel.clock import format_time
from sandex.engine.kernel.commands import Command
from sandex.engine.kernel.errors import Conflict, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

KEY = "webhook_faults"
# What a rule does to a delivery: exactly one of these in its `action`.
ACTIONS = ("fail", "delay_seconds", "duplicate", "out_of_order")
MATCH_FIELDS = ("webhook_id", "event_type")
# The statuses a failed attempt may be recorded with: a receiver's refusal or its fault.
FAIL_STATUSES = range(400, 600)
MAX_TIMES = 1000
MAX_DELAY_SECONDS = 30 * 24 * 3600
# Rules a customer may keep, spent ones included (deleting one makes room).
MAX_RULES = 100


@dataclass(frozen=True, slots=True)
class ArmWebhookFault(Command):
    match: dict[str, Any] = field(default_factory=dict)
    action: dict[str, Any] = field(default_factory=dict)
    times: int = 1


@dataclass(frozen=True, slots=True)
class RemoveWebhookFault(Command):
    rule_id: str = ""


@dataclass(frozen=True, slots=True)
class DecideWebhookDelivery(Command):
    """The deliverer's question before an attempt of `event_id` to the actor's webhook:
    which armed rule, if any, fires. `after_held`: the delivery that a held (out of
    order) one waits for, which is not held in turn."""

    webhook_id: str = ""
    event_id: str = ""
    event_type: str = ""
    attempt: int = 1
    after_held: bool = False


def rules(state: State) -> dict[str, dict[str, Any]]:
    """Every rule by id, in the order armed."""
    return state.ext.setdefault(KEY, {})  # type: ignore[no-any-return]


def rule_view(rule: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": rule["id"],
        "match": rule["match"],
        "action": rule["action"],
        "times": rule["times"],
        "remaining": rule["remaining"],
        "created_at": rule["created_at"],
    }


def _checked_match(ctx: Ctx, customer_id: str, match: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(match) - set(MATCH_FIELDS))
    if unknown:
        raise Invalid(
            f"match invalid: {unknown[0][:32]} is not one of {', '.join(MATCH_FIELDS)}",
            field=f"match.{unknown[0][:32]}",
        )
    checked = {k: v for k, v in match.items() if v is not None}
    for name, value in checked.items():
        if not isinstance(value, str) or not value:
            raise Invalid(f"match.{name} invalid: a non-empty string", field=f"match.{name}")
    webhook_id = checked.get("webhook_id")
    if webhook_id is not None:
        own = registrations(ctx.state).get(customer_id)
        if own is None or own["id"] != webhook_id:
            raise NotFound("webhook not found", field="match.webhook_id")
    return checked


def _checked_action(action: dict[str, Any]) -> dict[str, Any]:
    given = [k for k, v in action.items() if v is not None]
    if len(given) != 1 or given[0] not in ACTIONS:
        raise Invalid(f"action invalid: exactly one of {', '.join(ACTIONS)}", field="action")
    name = given[0]
    value = action[name]
    if name == "fail":
        status = value.get("status") if isinstance(value, dict) else None
        if type(status) is not int or status not in FAIL_STATUSES:
            raise Invalid(
                "action.fail.status invalid: an HTTP status from 400 to 599",
                field="action.fail.status",
            )
        return {"fail": {"status": status}}
    if name == "delay_seconds":
        if type(value) is not int or not 1 <= value <= MAX_DELAY_SECONDS:
            raise Invalid(
                f"action.delay_seconds invalid: whole seconds from 1 to {MAX_DELAY_SECONDS}",
                field="action.delay_seconds",
            )
        return {"delay_seconds": value}
    if value is not True:
        raise Invalid(f"action.{name} invalid: true", field=f"action.{name}")
    return {name: True}


def arm(ctx: Ctx, cmd: ArmWebhookFault) -> dict[str, Any]:
    customer_id = cmd.actor.customer_id
    action = _checked_action(cmd.action)
    if type(cmd.times) is not int or not 1 <= cmd.times <= MAX_TIMES:
        raise Invalid(f"times invalid: from 1 to {MAX_TIMES}", field="times")
    match = _checked_match(ctx, customer_id, cmd.match)
    if sum(r["customer_id"] == customer_id for r in rules(ctx.state).values()) >= MAX_RULES:
        raise Conflict(f"at most {MAX_RULES} webhook fault rules; delete one first")
    rule_id = ctx.ids.uuid()
    ctx.emit(
        "WebhookFaultArmed",
        f"webhook-fault-{rule_id}",
        {
            "rule_id": rule_id,
            "customer_id": customer_id,
            "match": match,
            "action": action,
            "times": cmd.times,
        },
    )
    return rule_view(rules(ctx.state)[rule_id])


def remove(ctx: Ctx, cmd: RemoveWebhookFault) -> dict[str, Any]:
    rule = rules(ctx.state).get(cmd.rule_id)
    if rule is None or rule["customer_id"] != cmd.actor.customer_id:
        raise NotFound("webhook fault rule not found")
    view = rule_view(rule)
    ctx.emit("WebhookFaultRemoved", f"webhook-fault-{cmd.rule_id}", {"rule_id": cmd.rule_id})
    return view


def _applies(rule: dict[str, Any], customer_id: str, cmd: DecideWebhookDelivery) -> bool:
    if rule["customer_id"] != customer_id or rule["remaining"] <= 0:
        return False
    match = rule["match"]
    if match.get("webhook_id", cmd.webhook_id) != cmd.webhook_id:
        return False
    if match.get("event_type", cmd.event_type) != cmd.event_type:
        return False
    name = next(iter(rule["action"]))
    if cmd.attempt > 1 and name != "fail":
        return False
    return not (cmd.after_held and name == "out_of_order")


def decide_delivery(ctx: Ctx, cmd: DecideWebhookDelivery) -> dict[str, Any] | None:
    """The rule that fires for this attempt, recorded, or None (nothing recorded)."""
    customer_id = cmd.actor.customer_id
    own = registrations(ctx.state).get(customer_id)
    if own is None or own["id"] != cmd.webhook_id:
        return None
    rule = next((r for r in rules(ctx.state).values() if _applies(r, customer_id, cmd)), None)
    if rule is None:
        return None
    rule_id, action = rule["id"], rule["action"]
    stream = f"webhook-fault-{rule_id}"
    fired: dict[str, Any] = {
        "rule_id": rule_id,
        "webhook_id": cmd.webhook_id,
        "event_id": cmd.event_id,
        "attempt": cmd.attempt,
        "action": action,
        "remaining": rule["remaining"] - 1,
    }
    if "delay_seconds" in action:
        fired["release_at"] = format_time(ctx.now + timedelta(seconds=action["delay_seconds"]))
    ctx.emit("WebhookFaultFired", stream, fired)
    if fired["remaining"] == 0:
        ctx.emit("WebhookFaultSpent", stream, {"rule_id": rule_id})
    return {k: fired[k] for k in ("rule_id", "action", "release_at") if k in fired}


def _armed(state: State, e: Event) -> None:
    d = e.data
    rules(state)[d["rule_id"]] = {
        "id": d["rule_id"],
        "customer_id": d["customer_id"],
        "match": d["match"],
        "action": d["action"],
        "times": d["times"],
        "remaining": d["times"],
        "created_at": e.occurred_at,
        "position": e.position,  # orders the listing as the rules are matched
    }
    state.mark("webhook_fault", d["rule_id"])


def _fired(state: State, e: Event) -> None:
    rules(state)[e.data["rule_id"]]["remaining"] = e.data["remaining"]
    state.mark("webhook_fault", e.data["rule_id"])


def _spent(state: State, e: Event) -> None:
    """The rule is kept, listed with nothing remaining, until it is deleted."""
    state.mark("webhook_fault", e.data["rule_id"])


def _removed(state: State, e: Event) -> None:
    rules(state).pop(e.data["rule_id"], None)
    state.mark("webhook_fault", e.data["rule_id"])


def _row(state: State, key: str) -> dict[str, Any] | None:
    rule = rules(state).get(key)
    if rule is None:
        return None
    return {
        "id": rule["id"],
        "customer_id": rule["customer_id"],
        "match": dumps(rule["match"]).decode(),
        "action": dumps(rule["action"]).decode(),
        "times": rule["times"],
        "remaining": rule["remaining"],
        "created_at": rule["created_at"],
        "position": rule["position"],
    }


TABLE = ReadModelTable(
    "webhook_faults",
    {
        "id": str,
        "customer_id": str,
        "match": str,
        "action": str,
        "times": int,
        "remaining": int,
        "created_at": str,
        "position": int,
    },
    pk=("id",),
    kind="webhook_fault",
    row=_row,
    key_columns=("id",),
    keys=lambda s: rules(s).keys(),
)
REGISTRATION = Registration(
    {ArmWebhookFault: arm, RemoveWebhookFault: remove, DecideWebhookDelivery: decide_delivery},
    {
        "WebhookFaultArmed": _armed,
        "WebhookFaultFired": _fired,
        "WebhookFaultSpent": _spent,
        "WebhookFaultRemoved": _removed,
    },
    tables=(TABLE,),
)
