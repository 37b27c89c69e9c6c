"""The rule of the create-order interface, and of every other operation that names an
identity and an account (quote executions, stablecoin conversions, internal transfers,
withdrawals, deposit addresses, fiat deposit instructions and fiat accounts): "the
identity must be allowed to trade for the account"; an identity named alone (a held
crypto deposit's update or rejection) must at least be the customer's. Nothing that does not exist can be
allowed, so the named identity must be the customer's, APPROVED, and a member of the
named account (its primary identity, or a member) with a role that acts for it
(BENEFICIAL_OWNER, AUTHORIZED_USER; a FINANCIAL_ADVISOR advises), and the account must
not be disabled.

The service says whether the ids are needed depends on the integration type: a customer
created with `identity_labels` (an integration that does not use identities) keeps them
as labels until it creates an identity of its own, as every customer did before the
rule held for all."""

from __future__ import annotations

from sandex.engine.domain.identity.accounts import find_account
from sandex.engine.domain.identity.identities import find_identity, uses_identities
from sandex.engine.kernel.errors import Forbidden, Invalid
from sandex.engine.kernel.state import State

ACTING_ROLES = frozenset({"BENEFICIAL_OWNER", "AUTHORIZED_USER"})


def ids_are_labels(state: State, customer_id: str) -> bool:
    """Whether the customer's identity ids are labels: created with `identity_labels`
    and no identity of its own yet."""
    customer = state.customers.get(customer_id) or {}
    return bool(customer.get("identity_labels")) and not uses_identities(state, customer_id)


def check_named(state: State, customer_id: str, identity_id: str) -> None:
    """Refuse (404) an identity the customer does not have, unless its ids are labels: an
    identity named without an account (a held deposit's update or rejection)."""
    if not ids_are_labels(state, customer_id):
        find_identity(state, customer_id, identity_id)


def check_acting(
    state: State,
    customer_id: str,
    identity_id: str | None,
    account_id: str | None,
    *,
    action: str,
    identity_field: str = "identity_id",
    account_field: str = "account_id",
) -> None:
    """Refuse unless the identity may `action` for the account (see the module)."""
    if (identity_id is None and account_id is None) or ids_are_labels(state, customer_id):
        return
    if identity_id is None or account_id is None:
        missing = identity_field if identity_id is None else account_field
        raise Invalid(f"{identity_field} and {account_field} must be sent together", field=missing)
    identity = find_identity(state, customer_id, identity_id)
    account = find_account(state, customer_id, account_id)
    status = identity["summary_status"]
    if status != "APPROVED":
        raise Forbidden(
            f"identity {identity['id']} is {status}: only an APPROVED identity may {action}",
            meta={"identity_id": identity["id"], "summary_status": status},
        )
    if account.get("user_disabled") or account.get("admin_disabled"):
        raise Forbidden(f"account {account['id']} is disabled", meta={"account_id": account["id"]})
    roles = {"BENEFICIAL_OWNER"} if account["identity_id"] == identity["id"] else set()
    for member in account["members"]:
        if member["identity_id"] == identity["id"]:
            roles |= set(member["roles"])
    if not roles & ACTING_ROLES:
        why = (
            f"its roles are {', '.join(sorted(roles))}"
            if roles
            else "it is not a member of the account"
        )
        raise Forbidden(
            f"identity {identity['id']} is not allowed to {action} for account"
            f" {account['id']}: {why}",
            meta={"identity_id": identity["id"], "account_id": account["id"]},
        )
