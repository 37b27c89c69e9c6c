"""The sandbox's magic values: every memo or metadata value that asks for a rare path.

Said once here; the domain modules read their values from this module, and
docs/sandbox-triggers.md is generated from `TRIGGERS` (`sandex triggers`), so the page,
the code and the tests cannot drift apart."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

# A withdrawal's memo: FAILED at confirmation, the hold returned.
FAIL = "sandbox:fail"
# A withdrawal's memo `sandbox:fail:<reason>`: FAILED, `reason` in its status details.
FAIL_WITH = "sandbox:fail:"
# A withdrawal's or sandbox crypto deposit's memo, or a metadata value of fiat deposit
# instructions: PENDING until released through /v2/sandbox/transfers/{id}/complete|fail;
# a metadata value of a LIMIT order: OPEN outside the book until released through
# /v2/sandbox/orders/{id}/release.
HOLD = "sandbox:hold"
# A sandbox crypto deposit's memo: held for travel-rule review whatever its value.
REVIEW = "sandbox:review"
# A metadata value of fiat deposit instructions `sandbox:delay:<seconds>`: each wire to
# them is credited that many seconds of engine time after it is sent.
DELAY_WITH = "sandbox:delay:"
# A metadata value of a fiat account: its automated review rejects it; of an order: it
# is REJECTED when it reaches the market.
REJECT = "sandbox:reject"
# An order's metadata value `sandbox:reject:<reason>`: REJECTED at submission, `reason`
# recorded in its OrderRejected event.
REJECT_WITH = "sandbox:reject:"
# The reason an order rejected by `sandbox:reject` alone is given.
ORDER_REJECTED = "SANDBOX_REJECTED"
# Longest reason a memo may carry into a status detail.
MAX_REASON = 100


@dataclass(frozen=True, slots=True)
class Trigger:
    """One magic value: what to write, where it is read, and what then happens."""

    value: str
    kind: str
    applies_to: str
    outcome: str


TRIGGERS: tuple[Trigger, ...] = (
    Trigger(
        FAIL,
        "memo",
        "crypto withdrawal, fiat withdrawal",
        "FAILED at confirmation; the hold is returned; `status_details.sandbox_forced_failure`"
        " says why",
    ),
    Trigger(
        FAIL_WITH + "<reason>",
        "memo",
        "crypto withdrawal, fiat withdrawal",
        "FAILED at confirmation with `status_details.sandbox_forced_failure.reason` ="
        f" `<reason>` (at most {MAX_REASON} characters); the hold is returned",
    ),
    Trigger(
        HOLD,
        "memo",
        "crypto withdrawal, fiat withdrawal, sandbox crypto deposit",
        "stays PENDING until `POST /v2/sandbox/transfers/{id}/complete` or `/fail`",
    ),
    Trigger(
        REVIEW,
        "memo",
        "sandbox crypto deposit",
        "held for travel-rule review (secondary status TRAVEL_RULE_INFO_REQUESTED)"
        " whatever its value, until updated or rejected",
    ),
    Trigger(
        HOLD,
        "metadata value",
        "fiat deposit instructions",
        "each sandbox fiat deposit to them is a PENDING WIRE_DEPOSIT until"
        " `POST /v2/sandbox/transfers/{id}/complete` or `/fail`",
    ),
    Trigger(
        HOLD,
        "metadata value",
        "LIMIT order (GTC or GTT)",
        "OPEN but out of the book: neither the house's ladder nor another order trades with"
        " it until `POST /v2/sandbox/orders/{id}/release`, after which it meets the market"
        " as an order submitted then would; it can be cancelled (or expire) while held",
    ),
    Trigger(
        DELAY_WITH + "<seconds>",
        "metadata value",
        "fiat deposit instructions",
        "each sandbox fiat deposit to them is credited `<seconds>` of engine time later",
    ),
    Trigger(
        REJECT,
        "metadata value",
        "fiat account, order",
        "a fiat account's automated review makes it REJECTED; an order is REJECTED when it"
        f" reaches the market (reason `{ORDER_REJECTED}` in its `OrderRejected` event), its"
        " hold returned",
    ),
    Trigger(
        REJECT_WITH + "<reason>",
        "metadata value",
        "order",
        "REJECTED when it reaches the market, `<reason>` (at most"
        f" {MAX_REASON} characters) in its `OrderRejected` event; its hold returned",
    ),
)


def failure(memo: str | None) -> tuple[bool, str | None]:
    """Whether `memo` asks a withdrawal to fail, and the reason it names (None: none)."""
    if memo == FAIL:
        return True, None
    if memo is not None and memo.startswith(FAIL_WITH):
        return True, memo[len(FAIL_WITH) :][:MAX_REASON]
    return False, None


def held(memo: str | None) -> bool:
    return memo == HOLD


def metadata_values(metadata: dict[str, str] | None) -> Iterable[str]:
    return (metadata or {}).values()


def rejects(metadata: dict[str, str] | None) -> bool:
    return REJECT in metadata_values(metadata)


def holds_order(metadata: dict[str, str] | None) -> bool:
    """Whether an order's metadata asks it to be held out of the market until released."""
    return HOLD in metadata_values(metadata)


def order_rejection(metadata: dict[str, str] | None) -> str | None:
    """The reason an order's metadata asks it to be rejected for, if it does."""
    if not metadata:
        return None
    for value in metadata.values():
        if value == REJECT:
            return ORDER_REJECTED
        if value.startswith(REJECT_WITH):
            return value[len(REJECT_WITH) :][:MAX_REASON] or ORDER_REJECTED
    return None


def delay_of(metadata: dict[str, str] | None) -> Decimal | None:
    """The seconds a `sandbox:delay:<seconds>` metadata value asks for, if one does."""
    for value in metadata_values(metadata):
        if value.startswith(DELAY_WITH):
            try:
                seconds = Decimal(value[len(DELAY_WITH) :])
            except InvalidOperation:
                continue
            if seconds.is_finite() and seconds >= 0:
                return seconds
    return None


def page() -> str:
    """docs/sandbox-triggers.md: the registry as a table."""
    lines = [
        "# Sandbox triggers",
        "",
        "<!-- Generated by `sandex triggers` from sandex.engine.domain.sandbox_triggers.TRIGGERS;"
        " do not edit. -->",
        "",
        "Magic values that make the sandbox take a rare path on purpose. Each is said once,"
        " in `sandex.engine.domain.sandbox_triggers.TRIGGERS`; docs/faults.md shows them with"
        " curl.",
        "",
        "| value | kind | applies to | outcome |",
        "| --- | --- | --- | --- |",
    ]
    for t in TRIGGERS:
        lines.append(f"| `{t.value}` | {t.kind} | {t.applies_to} | {t.outcome} |")
    return "\n".join(lines) + "\n"
