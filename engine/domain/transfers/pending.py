"""Pending items settled by hand or by polls: a sandbox's control of what waits.

`ReleasePending` (POST /v2/sandbox/transfers/{id}/complete or /fail, and the same for
conversions and fiat accounts) settles a caller's PENDING withdrawal (crypto or fiat),
crypto deposit, sandbox fiat deposit, CREATED stablecoin conversion or PENDING fiat
account, whatever its pace. `CountPoll` counts a
read of an item paced `after_polls` (sandex.engine.domain.sandbox_pacing) and settles it as its
timer would have at the last one. Each decision is a `SandboxReleased` or `SandboxPolled`
event before the settlement's own, so a replay settles the same items the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sandex.engine.domain import sandbox_pacing, sandbox_triggers
from sandex.engine.domain.transfers import (
    deposit_addresses,
    fiat_accounts,
    fiat_withdrawals,
    funding,
    stablecoin_conversions,
    transfer_records,
    withdrawals,
)
from sandex.engine.kernel.commands import CountPoll, ReleasePending
from sandex.engine.kernel.errors import Conflict, Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

OUTCOMES = ("complete", "fail")


def _settle_transfer(ctx: Ctx, t: dict[str, Any], fail: bool, reason: str | None) -> None:
    tid, kind = t["id"], t["type"]
    if kind == "CRYPTO_WITHDRAWAL":
        withdrawals.settle(ctx, tid, fail=fail, reason=reason)
    elif kind in fiat_withdrawals.TRANSFER_TYPES.values():
        fiat_withdrawals.settle_as(ctx, tid, fail=fail, reason=reason)
    elif kind == "CRYPTO_DEPOSIT":
        if fail:
            details = {"reason": reason or "released to fail"}
            transfer_records.fail(ctx, tid, {"status_details": details}, [])
        else:
            deposit_addresses.confirm(ctx, tid)
    else:
        deposit_id = funding.held_fiat_deposit(ctx.state, tid)
        assert deposit_id is not None  # _pending_transfer admits no other type
        funding.settle_fiat_deposit(ctx, deposit_id, tid, fail=fail, reason=reason)


def _pending_transfer(ctx: Ctx, customer_id: str, item_id: str) -> dict[str, Any] | None:
    t = ctx.state.transfers.get(item_id)
    if t is None or t["customer_id"] != customer_id:
        return None
    if t["status"] != "PENDING":
        raise Conflict(
            f"transfer {item_id} is {t['status']}: only a PENDING one can be released",
            meta={"status": t["status"]},
        )
    movable = (
        t["type"] in withdrawals.HELD_TYPES
        or t["type"] == "CRYPTO_DEPOSIT"
        or funding.held_fiat_deposit(ctx.state, item_id) is not None
    )
    if not movable:
        raise Conflict(f"transfer {item_id} of type {t['type']} is not settled by the sandbox")
    if t["type"] == "CRYPTO_DEPOSIT" and deposit_addresses.under_review(ctx.state, item_id):
        raise Conflict(
            f"crypto deposit {item_id} waits for travel rule information: update or reject it"
        )
    return dict(t)


def release(ctx: Ctx, cmd: ReleasePending) -> dict[str, Any]:
    if cmd.outcome not in OUTCOMES:
        raise Invalid(f"outcome invalid: one of {', '.join(OUTCOMES)}", field="outcome")
    reason = cmd.reason
    if reason is not None and not 0 < len(reason) <= sandbox_triggers.MAX_REASON:
        raise Invalid(
            f"reason invalid: 1 to {sandbox_triggers.MAX_REASON} characters", field="reason"
        )
    fail = cmd.outcome == "fail"
    customer_id = cmd.actor.customer_id
    item_id = cmd.item_id
    settle: Callable[[], dict[str, Any]]
    transfer = conversion = account = None
    if cmd.kind == "transfer":
        transfer = _pending_transfer(ctx, customer_id, item_id)
    elif cmd.kind == "conversion":
        conversion = stablecoin_conversions.conversions(ctx.state).get(item_id)
    else:
        account = fiat_accounts.owned_account(ctx.state, customer_id, item_id)
    if transfer is not None:

        def settle() -> dict[str, Any]:
            _settle_transfer(ctx, transfer, fail, reason)
            return transfer_records.transfer_view(ctx.state.transfers[item_id])

    elif conversion is not None and conversion["customer_id"] == customer_id:
        if conversion["status"] != "CREATED":
            raise Conflict(
                f"conversion {item_id} is {conversion['status']}: only a CREATED one can be"
                " released",
                meta={"status": conversion["status"]},
            )
        if fail:
            raise Invalid(
                "outcome invalid: a conversion is completed or cancelled, not failed",
                field="outcome",
            )

        def settle() -> dict[str, Any]:
            stablecoin_conversions.settle(ctx, item_id)
            return stablecoin_conversions.conversion_view(conversion)

    elif account is not None:
        if account["status"] != "PENDING":
            raise Conflict(
                f"fiat account {item_id} is {account['status']}: only a PENDING one can be"
                " released",
                meta={"status": account["status"]},
            )

        def settle() -> dict[str, Any]:
            fiat_accounts.decide_review(ctx, item_id, approve=not fail)
            return fiat_accounts.account_view(account)

    else:
        raise NotFound(f"{cmd.kind.replace('_', ' ')} not found with id {item_id[:64]}")
    ctx.emit(
        "SandboxReleased",
        f"sandbox-release-{item_id}",
        {"item_id": item_id, "outcome": cmd.outcome, "reason": reason},
    )
    return settle()


# What a pending item's timer does when its time comes, by pending kind: what the last
# of its polls does.
_NATURAL: dict[str, Callable[[Ctx, str], None]] = {
    "withdrawal": lambda ctx, i: (
        withdrawals.confirm(ctx, i)
        if ctx.state.transfers[i]["type"] == "CRYPTO_WITHDRAWAL"
        else fiat_withdrawals.settle(ctx, i)
    ),
    "deposit": deposit_addresses.confirm,
    "fiat_deposit": lambda ctx, i: _credit_held(ctx, i),
    "conversion": stablecoin_conversions.settle,
    "fiat_account_review": lambda ctx, i: fiat_accounts.decide_review(
        ctx,
        i,
        approve=not sandbox_triggers.rejects(fiat_accounts.accounts(ctx.state)[i].get("metadata")),
    ),
}


def _credit_held(ctx: Ctx, transfer_id: str) -> None:
    deposit_id = funding.held_fiat_deposit(ctx.state, transfer_id)
    if deposit_id is not None:
        funding.settle_fiat_deposit(ctx, deposit_id, transfer_id)


def count_poll(ctx: Ctx, cmd: CountPoll) -> None:
    """One read of the caller's item: its count goes down; at zero it settles. An item
    that counts no polls (or another customer's) is left alone, and nothing is written."""
    entry = sandbox_pacing.polls_left(ctx.state, cmd.item_id)
    if entry is None or entry["customer_id"] != cmd.actor.customer_id:
        return
    left = entry["left"] - 1
    kind = entry["kind"]
    ctx.emit(
        "SandboxPolled",
        f"sandbox-polls-{cmd.item_id}",
        {"item_id": cmd.item_id, "left": left},
    )
    if left <= 0 and _still_pending(ctx.state, kind, cmd.item_id):
        _NATURAL[kind](ctx, cmd.item_id)


def _still_pending(state: State, kind: str, item_id: str) -> bool:
    if kind == "conversion":
        return bool(stablecoin_conversions.conversions(state)[item_id]["status"] == "CREATED")
    if kind == "fiat_account_review":
        record = fiat_accounts.accounts(state)[item_id]
        return bool(record["status"] == "PENDING" and not record.get("deleted"))
    return bool(state.transfers[item_id]["status"] == "PENDING")


def _released(state: State, e: Event) -> None:
    sandbox_pacing.forget_polls(state, e.data["item_id"])


REGISTRATION = Registration(
    {ReleasePending: release, CountPoll: count_poll},
    {"SandboxReleased": _released},
)
