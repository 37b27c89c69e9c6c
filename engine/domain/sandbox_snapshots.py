"""Snapshots, restores and resets of the sandbox, recorded in the log like everything else.

`SnapshotTaken {name}` marks a point of the log. `SnapshotRestored {name, position}`
brings the sandbox back to the state it had at that point, and `SandboxReset` to an
empty one; the log itself only grows, so it stays the truth: replaying it (or cutting
it with time travel) passes through the same snapshot, the same restore, and the same
state after it.

What is restored is the world of money and trading: the ledger, transfers, orders and
books, fee quotes, fiat instructions, pending timers. What is kept is who may call
(customers, clients, profiles: tokens keep working), the clock (time never moves
back), webhook registrations and the snapshots themselves. The public event feed is not
state at all (engine/domain/feed.py): what was announced stays announced.

Applying `SnapshotTaken` keeps a deep copy of the restorable parts, and applying a
restore installs a fresh copy of it, so a snapshot can be restored any number of times;
live and replayed alike, since both run the same appliers.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sandex.engine.kernel.commands import Command
from sandex.engine.kernel.errors import Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.money import ZERO
from sandex.engine.kernel.read_model_spec import KeyLister, ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

KEY = "snapshots"
STREAM = "sandbox"
MAX_SNAPSHOTS = 100
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

# State fields restored; everything else of `State` is kept.
RESTORED_FIELDS = (
    "ledger",
    "transfers",
    "transfer_refs",
    "fiat_instructions",
    "memos",
    "pending_fiat",
    "timers",
)
# `State.ext` entries kept across a restore; every other entry is restored.
KEPT_EXT = {"webhooks", KEY, "clock_to"}
# Read-model kinds a restore does not touch.
KEPT_KINDS = {"customer", "client", "profile", "webhook", "snapshot"}


@dataclass(frozen=True, slots=True)
class TakeSnapshot(Command):
    name: str = ""


@dataclass(frozen=True, slots=True)
class RestoreSnapshot(Command):
    name: str = ""


@dataclass(frozen=True, slots=True)
class ResetSandbox(Command):
    pass


def snapshots(state: State) -> dict[str, dict[str, Any]]:
    return state.ext.setdefault(KEY, {})  # type: ignore[no-any-return]


def snapshot_view(record: dict[str, Any]) -> dict[str, Any]:
    return {"name": record["name"], "position": record["position"], "taken_at": record["taken_at"]}


def _restorable(state: State) -> dict[str, Any]:
    parts = {name: getattr(state, name) for name in RESTORED_FIELDS}
    parts["ext"] = {k: v for k, v in state.ext.items() if k not in KEPT_EXT}
    return parts


def _install(state: State, parts: dict[str, Any], restored: Mapping[str, KeyLister]) -> None:
    """Swap the restorable parts in, rewriting every read-model row they touch:
    `restored` lists the keys of each read-model kind a restore rewrites."""
    before = {kind: set(keys(state)) for kind, keys in restored.items()} if state.live else {}
    old_ledger = state.ledger
    old_trading = state.ext.get("trading")
    for name in RESTORED_FIELDS:
        setattr(state, name, parts[name])
    kept = {k: v for k, v in state.ext.items() if k in KEPT_EXT}
    state.ext.clear()
    state.ext.update(parts["ext"])
    state.ext.update(kept)
    # An account the restored ledger never saw reads zero, and says so: its balance row
    # is then rewritten (not left stale), live and in a rebuild alike.
    for key in old_ledger.balances:
        state.ledger.balances.setdefault(key, ZERO)
    _keep_counters(old_trading, state)
    for kind, keys in before.items():
        for key in keys | set(restored[kind](state)):
            state.mark(kind, key)


def _keep_counters(old: Any, state: State) -> None:
    """Execution and trade numbers only grow: a number once shown is never reused."""
    if old is None:
        return
    from sandex.engine.domain.trading import trading_state

    new = trading_state(state)
    new.next_execution = max(new.next_execution, old.next_execution)
    new.next_trade = max(new.next_trade, old.next_trade)


# -- decisions --------------------------------------------------------------------------


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise Invalid(
            "name invalid: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter"
            " or digit",
            field="name",
        )


def take_snapshot(ctx: Ctx, cmd: TakeSnapshot) -> dict[str, Any]:
    _check_name(cmd.name)
    existing = snapshots(ctx.state)
    if cmd.name not in existing and len(existing) >= MAX_SNAPSHOTS:
        raise Invalid(
            f"name invalid: at most {MAX_SNAPSHOTS} snapshots; reuse a name to replace one",
            field="name",
        )
    ctx.emit("SnapshotTaken", STREAM, {"name": cmd.name})
    return snapshot_view(existing[cmd.name])


def restore_snapshot(ctx: Ctx, cmd: RestoreSnapshot) -> dict[str, Any]:
    record = snapshots(ctx.state).get(cmd.name)
    if record is None:
        raise NotFound(f"snapshot not found with name {cmd.name[:64]}")
    ctx.emit("SnapshotRestored", STREAM, {"name": cmd.name, "position": record["position"]})
    return {**snapshot_view(record), "restored_at": ctx.now_text}


def reset_sandbox(ctx: Ctx, cmd: ResetSandbox) -> dict[str, Any]:
    event = ctx.emit("SandboxReset", STREAM, {})
    return {"position": event.position, "reset_at": ctx.now_text}


# -- appliers ---------------------------------------------------------------------------


def _taken(state: State, e: Event) -> None:
    name = e.data["name"]
    snapshots(state)[name] = {
        "name": name,
        "position": e.position,
        "taken_at": e.occurred_at,
        "parts": copy.deepcopy(_restorable(state)),
    }
    state.mark("snapshot", name)


DECIDERS = {
    TakeSnapshot: take_snapshot,
    RestoreSnapshot: restore_snapshot,
    ResetSandbox: reset_sandbox,
}


def _row(state: State, key: str) -> dict[str, Any] | None:
    record = snapshots(state).get(key)
    return None if record is None else snapshot_view(record)


TABLE = ReadModelTable(
    "snapshots",
    {"name": str, "position": int, "taken_at": str},
    pk=("name",),
    kind="snapshot",
    row=_row,
    key_columns=("name",),
    keys=lambda s: snapshots(s).keys(),
)


def registration(tables: Iterable[ReadModelTable]) -> Registration:
    """The module's registration, given the read models of the engine it joins: a
    restore or reset rewrites the rows of every one of them but the kept kinds."""
    restored = {t.kind: t.keys for t in tables if t.keys is not None and t.kind not in KEPT_KINDS}

    def _restored(state: State, e: Event) -> None:
        parts = copy.deepcopy(snapshots(state)[e.data["name"]]["parts"])
        _install(state, parts, restored)

    def _reset(state: State, e: Event) -> None:
        _install(state, _restorable(State()), restored)

    appliers = {"SnapshotTaken": _taken, "SnapshotRestored": _restored, "SandboxReset": _reset}
    return Registration(DECIDERS, appliers, tables=(TABLE,))
