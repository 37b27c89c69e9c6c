"""Pacing: when each kind of pending item settles in this world (moto's state manager).

The settings give every kind its delay (`withdrawal_confirmation_seconds`,
`fiat_withdrawal_seconds`, `fiat_deposit_delay_seconds`, `conversion_settle_seconds`,
`fiat_account_review_seconds`); pacing is their per-world form, changed at run time
through `PUT /v2/sandbox/pacing` and recorded as `SandboxPacingSet` events, so a replay
paces as the run did. A kind settles `immediately`, `after_seconds` of engine time,
`after_polls` reads of it, or `manually` (only /v2/sandbox/transfers/{id}/complete|fail
moves it); `default` goes back to the settings. Items already pending keep their pace."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from sandex.engine.kernel.clock import format_time
from sandex.engine.kernel.commands import SetPacing
from sandex.engine.kernel.errors import Invalid
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

# Pending kinds: crypto and fiat withdrawals, crypto deposits, sandbox fiat deposits,
# stablecoin conversions, fiat account reviews.
KINDS = ("withdrawal", "deposit", "fiat_deposit", "conversion", "fiat_account_review")
MODES = ("default", "immediately", "after_seconds", "after_polls", "manually")
# The modes that count something, and the largest count they take.
_COUNTED = {"after_seconds": Decimal(10 * 365 * 24 * 3600), "after_polls": Decimal(1000)}
_STREAM = "sandbox-pacing"


@dataclass(frozen=True, slots=True)
class Pace:
    """When one new pending item settles: at `due`, after `polls` reads, or (both None)
    only by hand."""

    due: datetime | None
    polls: int | None = None

    @property
    def due_text(self) -> str | None:
        return None if self.due is None else format_time(self.due)


def _settings(state: State) -> dict[str, dict[str, Any]]:
    return state.ext.setdefault("sandbox_pacing", {})  # type: ignore[no-any-return]


def _awaited(state: State) -> dict[str, dict[str, Any]]:
    """Items settled after a number of polls: id -> {kind, left, customer_id}."""
    return state.ext.setdefault("sandbox_polls", {})  # type: ignore[no-any-return]


def pace(ctx: Ctx, kind: str, default_seconds: Decimal) -> Pace:
    """The pace of a new item of `kind`, whose settings' delay is `default_seconds`."""
    setting = _settings(ctx.state).get(kind)
    mode = setting["mode"] if setting else "default"
    if mode == "default":
        return Pace(ctx.now + _span(default_seconds))
    if mode == "immediately":
        return Pace(ctx.now)
    if mode == "after_seconds":
        return Pace(ctx.now + _span(Decimal(setting["value"])))  # type: ignore[index]
    if mode == "after_polls":
        return Pace(None, int(setting["value"]))  # type: ignore[index]
    return Pace(None)


def _span(seconds: Decimal) -> timedelta:
    return timedelta(microseconds=int(seconds * 1_000_000))


def await_polls(ctx: Ctx, kind: str, item_id: str, customer_id: str, polls: int) -> None:
    """Record that `item_id` settles after `polls` reads (its pace said so)."""
    ctx.emit(
        "SandboxPollsAwaited",
        f"sandbox-polls-{item_id}",
        {"item_id": item_id, "kind": kind, "polls": polls, "customer_id": customer_id},
    )


def polls_left(state: State, item_id: str) -> dict[str, Any] | None:
    return _awaited(state).get(item_id)


def set_pacing(ctx: Ctx, cmd: SetPacing) -> dict[str, Any]:
    if cmd.kind not in KINDS:
        raise Invalid(
            f"kind invalid: one of {', '.join(KINDS)}, not '{cmd.kind[:32]}'", field="kind"
        )
    if cmd.mode not in MODES:
        raise Invalid(
            f"mode invalid: one of {', '.join(MODES)}, not '{cmd.mode[:32]}'", field="mode"
        )
    value: str | None = None
    most = _COUNTED.get(cmd.mode)
    if most is not None:
        value = _count(cmd.value, cmd.mode, most)
    elif cmd.value is not None:
        raise Invalid(f"value invalid: mode {cmd.mode} takes no value", field="value")
    ctx.emit("SandboxPacingSet", _STREAM, {"kind": cmd.kind, "mode": cmd.mode, "value": value})
    return pacing_view(ctx.state)


def _count(text: str | None, mode: str, most: Decimal) -> str:
    unit = "seconds" if mode == "after_seconds" else "polls"
    try:
        number = Decimal(text) if text is not None else None
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite() or not 0 <= number <= most:
        raise Invalid(f"value invalid: mode {mode} needs 0 to {most} {unit}", field="value")
    if mode == "after_polls" and (number != number.to_integral_value() or number < 1):
        raise Invalid(
            "value invalid: mode after_polls needs a whole number of polls, 1 or more",
            field="value",
        )
    return format(number.normalize(), "f")


def pacing_view(state: State) -> dict[str, Any]:
    return view_of(_settings(state))


def view_of(settings: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every kind's pace from the kinds set otherwise than by default: its mode and, for
    the counting modes, the count."""
    view: dict[str, Any] = {}
    for kind in KINDS:
        setting = settings.get(kind) or {"mode": "default", "value": None}
        entry: dict[str, Any] = {"mode": setting["mode"]}
        if setting["value"] is not None:
            entry["value"] = setting["value"]
        view[kind] = entry
    return view


def _set(state: State, e: Event) -> None:
    _settings(state)[e.data["kind"]] = {"mode": e.data["mode"], "value": e.data["value"]}
    state.mark("sandbox_pacing", e.data["kind"])


def _polls_awaited(state: State, e: Event) -> None:
    _awaited(state)[e.data["item_id"]] = {
        "kind": e.data["kind"],
        "left": e.data["polls"],
        "customer_id": e.data["customer_id"],
    }
    state.mark("sandbox_polls", e.data["item_id"])


def _polled(state: State, e: Event) -> None:
    item_id = e.data["item_id"]
    if e.data["left"] > 0:
        _awaited(state)[item_id]["left"] = e.data["left"]
    else:
        _awaited(state).pop(item_id, None)
    state.mark("sandbox_polls", item_id)


def forget_polls(state: State, item_id: str) -> None:
    """An item settled otherwise (by hand): its polls no longer count."""
    if _awaited(state).pop(item_id, None) is not None:
        state.mark("sandbox_polls", item_id)


def _pacing_row(state: State, kind: str) -> dict[str, Any] | None:
    setting = _settings(state).get(kind)
    if setting is None:
        return None
    return {"kind": kind, "mode": setting["mode"], "value": setting["value"]}


def _polls_row(state: State, item_id: str) -> dict[str, Any] | None:
    entry = _awaited(state).get(item_id)
    if entry is None:
        return None
    return {"item_id": item_id, "customer_id": entry["customer_id"], "left_polls": entry["left"]}


PACING_TABLE = ReadModelTable(
    "sandbox_pacing",
    {"kind": str, "mode": str, "value": str},
    pk=("kind",),
    kind="sandbox_pacing",
    row=_pacing_row,
    key_columns=("kind",),
    keys=lambda s: _settings(s).keys(),
)
POLLS_TABLE = ReadModelTable(
    "sandbox_polls",
    {"item_id": str, "customer_id": str, "left_polls": int},
    pk=("item_id",),
    kind="sandbox_polls",
    row=_polls_row,
    key_columns=("item_id",),
    keys=lambda s: _awaited(s).keys(),
)

REGISTRATION = Registration(
    {SetPacing: set_pacing},
    {
        "SandboxPacingSet": _set,
        "SandboxPollsAwaited": _polls_awaited,
        "SandboxPolled": _polled,
    },
    tables=(PACING_TABLE, POLLS_TABLE),
)
