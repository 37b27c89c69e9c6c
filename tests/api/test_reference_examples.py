"""Every example request body of the service's own document, sent verbatim to the
operation sandex serves under its path: none is refused for its shape (a client that
copies the document must not fail here and pass against the service), but for the
document's own faults, answered as docs/api-coverage.md ("The document's own examples")
says.

Path ids are those of resources made here; ids inside a body are the document's, which
this sandbox does not hold (a 404 names them)."""

from __future__ import annotations

import re
from typing import Any

from tests.support import reference
from tests.support.identity_helpers import IDENTITIES, person

# What each sound example is answered: 200, or 404 where its body names an id (a
# profile, an identity, a quote, a memo) that only the service's own records hold.
TAKEN: dict[tuple[str, str], int] = {
    ("UpdateProfile", "schema example"): 200,
    ("CreateIdentity", "Create Institutional Identity"): 404,
    ("DocumentUpload", "Create Document Upload"): 200,
    ("UpdateIdentity", "schema example"): 200,
    ("AddInstitutionMembers", "Add Institution Members"): 404,
    ("CreateAccount", "schema example"): 404,
    ("UpdateAccount", "media example"): 404,
    ("AddAccountMembers", "Add Account Members"): 404,
    ("SandboxSetIdentityStatus", "schema example"): 200,
    ("CreateOrder", "Market Buy"): 200,
    ("CreateOrder", "Market Sell"): 200,
    ("CreateQuoteExecution", "Buy $100 BTC"): 404,
    ("CreateQuoteExecution", "Sell 2 ETH"): 404,
    ("CreateQuoteExecution", "schema example"): 404,
    ("InitiateSandboxFiatDeposit", "media example"): 404,
    ("RejectCryptoDeposit", "schema example"): 404,  # names the document's identity
    ("CreateCryptoWithdrawal", "schema example"): 404,
    ("CreateDepositAddress", "schema example"): 404,
    ("CreateCryptoWithdrawalFee", "schema example"): 200,
    ("UpdateFiatAccount", "Update fiat account owner person details"): 200,
    ("UpdateFiatAccount", "Update fiat account owner institution details"): 200,
    ("UpdateFiatAccount", "Update fiat account metadata"): 200,
    ("CreateFiatWithdrawal", "schema example"): 404,
    ("CreateInternalTransfer", "Internal Transfer"): 404,
    ("CreateInternalTransfer", "Internal Transfer with 3rd-Party Integrations"): 404,
    ("CreateInternalTransfer", "schema example"): 404,
}
# The document's faults, as docs/api-coverage.md lists them: the status and detail.
OFF_TICK = (400, "price invalid: 190.23 is not a multiple of tick size 0.05")
IGNORED = (200, "")
FAULTS: dict[tuple[str, str], tuple[int, str]] = {
    ("CreateIdentity", "Create Person Identity"): IGNORED,  # metadata in person_details
    ("CreateOrder", "Limit Buy"): OFF_TICK,
    ("CreateOrder", "Limit Sell"): OFF_TICK,
    ("CreateOrder", "schema example"): OFF_TICK,
    ("UpdateCryptoDeposit", "schema example"): (400, "originator_address_info is required"),
    ("CreateFiatAccount", "schema example"): (
        400,
        "fiat_network_instructions.wire.routing_details.routing_number_type is required",
    ),
    # fiat_network_instructions inside fiat_account_owner
    ("UpdateFiatAccount", "Update fiat account owner address"): IGNORED,
    ("UpdateFiatAccount", "Update routing bank name & address"): IGNORED,
    ("UpdateFiatAccount", "Update intermediary bank name & address"): IGNORED,
    ("CreateFiatDepositInstructions", "Create fiat deposit instructions"): (  # "account_ id"
        404,
        "profile not found with id 5fc6d191-193c-4e28-94fa-656bbdbdfaad",
    ),
    ("CreateStablecoinConversion", "Create Stablecoin Conversion"): (  # "amount'"
        400,
        "amount is required",
    ),
}

FIAT_ACCOUNTS = "/v2/transfer/fiat-accounts"
CRYPTO_DEPOSITS = "/v2/transfer/crypto-deposits"
WIRE = {
    "account_number": "12345678",
    "fiat_account_owner_address": {"country": "USA", "address1": "456 Main Street"},
    "routing_details": {
        "routing_number_type": "ABA",
        "routing_number": "031302971",
        "bank_name": "Customers Bank",
        "bank_address": {"country": "USA"},
    },
}


def _made(r: Any) -> dict[str, Any]:
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def _held_deposit(sandbox: Any) -> str:
    """A crypto deposit held for the travel rule (worth more than its review figure)."""
    address = _made(
        sandbox.post(
            "/v2/transfer/deposit-addresses",
            {"profile_id": "default", "crypto_network": "ETHEREUM"},
        )
    )["address"]
    sent = sandbox.post(
        "/v2/sandbox/crypto-deposits", {"address": address, "asset": "ETH", "amount": "1000"}
    )
    return _made(sent)["id"]  # type: ignore[no-any-return]


def _fiat_account(sandbox: Any, owner: dict[str, Any]) -> str:
    body = {"fiat_account_owner": owner, "fiat_network_instructions": {"wire": WIRE}}
    return _made(sandbox.post(FIAT_ACCOUNTS, body))["id"]  # type: ignore[no-any-return]


def _path_ids(sandbox: Any) -> dict[str, str]:
    """The id each served path's parameter is given ("{path}:{parameter}", or
    "{operation}/{example}:{parameter}" for one example): a resource made here, so that
    the body is judged by the operation itself. The profile holds the funds the order
    examples need, at an ETHUSD price on its tick near theirs."""
    profile = _made(sandbox.get("/v2/profiles/default"))["id"]
    identity = person(sandbox)["id"]
    fiat_account = _fiat_account(sandbox, {"person_details": {"first_name": "J", "last_name": "D"}})
    institution_account = _fiat_account(sandbox, {"institution_details": {"name": "SomeCorp"}})
    reject, update = _held_deposit(sandbox), _held_deposit(sandbox)
    _made(sandbox.post("/v2/sandbox/markets/ETHUSD/price", {"price": "190.25"}))
    sandbox.deposit("USD", "10000")
    sandbox.deposit("ETH", "10")
    sandbox.advance(5)  # the fiat account reviewed: APPROVED
    return {
        "/v2/profiles/{profile_id}:profile_id": profile,
        "/v2/profiles/{profile_id}/orders:profile_id": profile,
        "/v2/profiles/{profile_id}/quote-executions:profile_id": profile,
        f"{IDENTITIES}/{{id}}:id": identity,
        f"{IDENTITIES}/{{identity_id}}/documents:identity_id": identity,
        f"{IDENTITIES}/{{id}}/sandbox-status:id": identity,
        f"{FIAT_ACCOUNTS}/{{id}}:id": fiat_account,
        "UpdateFiatAccount/Update fiat account owner institution details:id": institution_account,
        f"{CRYPTO_DEPOSITS}/{{id}}/reject:id": reject,
        f"{CRYPTO_DEPOSITS}/{{id}}/update:id": update,
    }


def _path(ids: dict[str, str], operation: str, name: str, template: str) -> str:
    """`template` with each parameter given its id (the example's own, else the path's)."""
    return re.sub(
        r"\{(\w+)\}",
        lambda m: ids.get(f"{operation}/{name}:{m[1]}") or ids[f"{template}:{m[1]}"],
        template,
    )


def _answers(
    sandbox: Any, ids: dict[str, str], examples: list[tuple[str, str, str, str, Any]]
) -> dict[tuple[str, str], Any]:
    """Each served example's answer: (status, detail, body)."""
    served = {
        (method.upper(), path)
        for path, ops in sandbox.app.openapi()["paths"].items()
        for method in ops
    }
    answers = {}
    for operation, method, template, name, body in examples:
        if (method, template) in served:
            path = _path(ids, operation, name, template)
            r = sandbox.http.request(method, path, json=body, headers=sandbox.headers)
            answers[(operation, name)] = r.status_code, r.json().get("detail", ""), r.json()
    return answers


def test_every_example_body_of_the_document_is_taken_as_the_service_takes_it(
    sandbox: Any,
) -> None:
    examples = reference.request_examples()  # first: it skips where the document is absent
    ids = _path_ids(sandbox)
    fiat_account = f"{FIAT_ACCOUNTS}/{ids[f'{FIAT_ACCOUNTS}/{{id}}:id']}"
    wire_before = _made(sandbox.get(fiat_account))["fiat_network_instructions"]
    answers = _answers(sandbox, ids, examples)
    assert set(answers) == set(TAKEN) | set(FAULTS)
    assert {k: status for k, (status, _, _) in answers.items() if k in TAKEN} == TAKEN
    assert {k: (status, why) for k, (status, why, _) in answers.items() if k in FAULTS} == FAULTS
    # person_details.metadata is not the identity's
    assert "metadata" not in answers[("CreateIdentity", "Create Person Identity")][2]
    # the wire changes sent inside fiat_account_owner changed nothing of the wire
    assert _made(sandbox.get(fiat_account))["fiat_network_instructions"] == wire_before


# With strict_fields, the examples whose bodies hold a field no schema names: that field.
STRAY_FIELDS = {
    ("UpdateProfile", "schema example"): "profile_id",
    ("UpdateIdentity", "schema example"): "id",
    ("SandboxSetIdentityStatus", "schema example"): "id",
    ("CreateIdentity", "Create Person Identity"): "person_details.metadata",
    ("CreateFiatDepositInstructions", "Create fiat deposit instructions"): "account_ id",
    ("CreateStablecoinConversion", "Create Stablecoin Conversion"): "amount'",
    ("UpdateCryptoDeposit", "schema example"): "originator_address_info.first_name",
    **{
        ("UpdateFiatAccount", name): "fiat_account_owner.fiat_network_instructions"
        for name in (
            "Update fiat account owner address",
            "Update routing bank name & address",
            "Update intermediary bank name & address",
        )
    },
}


def test_with_strict_fields_the_stray_fields_of_the_examples_are_400s_naming_them(
    sandbox_factory: Any,
) -> None:
    examples = reference.request_examples()
    strict = sandbox_factory(strict_fields=True)
    answers = _answers(strict, _path_ids(strict), examples)
    refused = {
        k: body["meta"]["field"]
        for k, (status, why, body) in answers.items()
        if status == 400 and why.endswith("invalid: unknown field")
    }
    assert refused == STRAY_FIELDS
