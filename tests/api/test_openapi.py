"""sandex's own `/openapi.json`: every answer typed with the reference's shapes, request
examples that work as they stand, and every status an operation can answer listed."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import jsonschema
from fastapi.routing import APIRoute

from sandex.api_adapter.app import ROUTERS
from sandex.api_adapter.pipeline import ANSWER_MODELS
from tests.support.conformance import Document, conformance_problems, problems, resolve
from tests.support.reference import document as reference_document
from tests.support.reference import full_response_schema, response_schema

# Where the reference's JSON document and sandex's differ on purpose: the service
# interface wins over the JSON (the reference's README says so).
INTERFACE_VALUES = {"STELLAR", "XLAYER", "RTP_DEPOSIT", "PLATFORM_TRANSFER_DEBIT"}
INTERFACE_VALUES |= {"PLATFORM_TRANSFER_CREDIT"}
# ... which calls the JSON's PAXOS_TRANSFER_* types PLATFORM_TRANSFER_*
RENAMED_VALUES = {"PAXOS_TRANSFER_DEBIT", "PAXOS_TRANSFER_CREDIT"}
# sandex serves a ticker for each of its markets; the JSON's ticker enum lists the USD ones
TICKER_MARKETS = {"BTCEUR", "BTCSGD", "ETHEUR", "ETHSGD"}
# A failed transfer's details name what failed: a forced withdrawal failure is an object,
# a wire too small for its fee a reason string (the JSON types every value an object).
LOOSER = {"status_details"}


def _own(sandbox: Any) -> dict[str, Any]:
    return sandbox.http.get("/openapi.json").json()  # type: ignore[no-any-return]


def _operations(doc: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    return {
        op["operationId"]: (path, method, op)
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
    }


def test_every_operation_documents_a_typed_success_answer(http_sandbox: Any) -> None:
    doc = _own(http_sandbox)
    schemas = doc["components"]["schemas"]
    untyped = []
    for name, (_, _, op) in _operations(doc).items():
        schema = op["responses"]["200"]["content"]["application/json"]["schema"]
        ref = schema.get("$ref", "")
        if not ref or "properties" not in schemas[ref.rsplit("/", 1)[-1]]:
            untyped.append(name)
    assert not untyped, f"200 answers typed as a bare object: {untyped}"
    assert len(_operations(doc)) >= 42


def _differences(ours: Any, ref: Any, where: str) -> list[str]:
    """How sandex's resolved schema departs from the reference's: field names, types,
    formats, patterns, enums, required fields, at every depth."""
    found: list[str] = []
    if not isinstance(ref, dict):
        return found
    if not isinstance(ours, dict):
        ours = {}
    for key in ("type", "format", "pattern"):
        if key in ref and ours.get(key) != ref[key]:
            found.append(f"{where}: {key} {ours.get(key)!r}, the reference {ref[key]!r}")
    if "enum" in ref:
        theirs, mine = set(ref["enum"]), set(ours.get("enum", ()))
        missing = theirs - mine - RENAMED_VALUES
        extra = mine - theirs - INTERFACE_VALUES - TICKER_MARKETS
        if missing or extra:
            found.append(f"{where}: enum lacks {sorted(missing)}, adds {sorted(extra)}")
    if "properties" in ref:
        names, theirs = set(ours.get("properties", {})), set(ref["properties"])
        if names != theirs:
            found.append(
                f"{where}: fields lack {sorted(theirs - names)}, add {sorted(names - theirs)}"
            )
        for name in names & theirs:
            found += _differences(
                ours["properties"][name], ref["properties"][name], f"{where}.{name}"
            )
        if set(ours.get("required", ())) != set(ref.get("required", ())):
            found.append(
                f"{where}: requires {sorted(ours.get('required', ()))},"
                f" the reference {sorted(ref.get('required', ()))}"
            )
    if isinstance(ref.get("items"), dict):
        found += _differences(ours.get("items", {}), ref["items"], f"{where}[]")
    extra_ref = ref.get("additionalProperties")
    if isinstance(extra_ref, dict) and where.rsplit(".", 1)[-1] not in LOOSER:
        found += _differences(ours.get("additionalProperties") or {}, extra_ref, f"{where}{{}}")
    return found


def test_every_success_answer_has_the_references_shape(http_sandbox: Any) -> None:
    """Matched by operation id: the same fields, types, formats, enums and required
    fields as the reference's schema of the same operation."""
    own = _own(http_sandbox)
    schemas = own["components"]["schemas"]
    ours = _operations(own)
    reference = _operations(reference_document())
    assert len(reference) == 29
    found = []
    for name, (path, method, _) in sorted(reference.items()):
        assert name in ours, f"sandex does not serve {name}"
        schema = ours[name][2]["responses"]["200"]["content"]["application/json"]["schema"]
        label = schema["$ref"].rsplit("/", 1)[-1]
        found += _differences(resolve(schema, schemas), response_schema(path, method), label)
    assert not found, "\n".join(sorted(set(found)))


# Operations beyond the subset, held to the whole reference document (paxos-openapi.json).
FULL_DOCUMENT_OPERATIONS = (
    "CreateIdentity",
    "ListIdentities",
    "GetIdentity",
    "UpdateIdentity",
    "ListIdentityDocuments",
    "DocumentUpload",
    "SandboxSetIdentityStatus",
    "AddInstitutionMembers",
    "DeleteInstitutionMember",
    "CreateAccount",
    "ListAccounts",
    "UpdateAccount",
    "GetAccount",
    "AddAccountMembers",
    "DeleteAccountMember",
)


def test_the_identity_operations_have_the_whole_references_shapes(http_sandbox: Any) -> None:
    own = _own(http_sandbox)
    schemas = own["components"]["schemas"]
    ours = _operations(own)
    found = []
    for name in FULL_DOCUMENT_OPERATIONS:
        path, method, op = ours[name]
        schema = op["responses"]["200"]["content"]["application/json"]["schema"]
        label = schema["$ref"].rsplit("/", 1)[-1]
        reference = full_response_schema(path.removeprefix("/v2"), method)
        found += _differences(resolve(schema, schemas), reference, label)
    assert not found, "\n".join(sorted(set(found)))


def test_the_shape_comparison_finds_a_renamed_field_a_type_and_an_enum() -> None:
    ref = {
        "type": "object",
        "required": ["id"],
        "properties": {
            "id": {"type": "string"},
            "side": {"type": "string", "enum": ["BUY", "SELL"]},
            "n": {"type": "integer", "format": "int32"},
        },
    }
    ours = {
        "type": "object",
        "properties": {
            "ident": {"type": "string"},
            "side": {"type": "string", "enum": ["BUY"]},
            "n": {"type": "string"},
        },
    }
    found = "\n".join(_differences(ours, ref, "X"))
    for words in ("lack ['id']", "add ['ident']", "X.n: type 'string'", "X.n: format None"):
        assert words in found, found
    assert "enum lacks ['SELL']" in found and "requires []" in found


# What only another answer can give: the example's placeholder, then where it comes from.
# What needs another example's answer first (a webhook to read, a snapshot to restore).
LATER = ["GetSandboxWebhook", "RemoveSandboxWebhook", "RestoreSandboxSnapshot", "ResetSandbox"]
# A fiat account is APPROVED by its review on the engine clock: the clock moves first.
LATER = ["CreateQuoteExecution", "MoveSandboxClock", "CreateFiatWithdrawal", *LATER]
# Query parameters an operation cannot do without.
QUERIES = {"ListHistoricalPrices": {"increment": "ONE_HOUR"}}
FROM_ANSWERS = {
    "memo_id": "CreateFiatDepositInstructions",
    "to_profile_id": "CreateProfile",
    "address": "CreateDepositAddress",
    "fiat_account_id": "CreateFiatAccount",
}
# Where the answer names the field otherwise: the resource's own id.
ANSWER_FIELDS = {"to_profile_id": "id", "fiat_account_id": "id"}


def test_the_request_examples_are_valid_and_work_as_they_stand(sandbox: Any) -> None:
    """What "Try it out" sends: the document's example body and path parameters, in the
    document's order, on a sandbox whose DEFAULT profile holds BTC and USD."""
    doc = _own(sandbox)
    schemas = doc["components"]["schemas"]
    sandbox.deposit("BTC", "1")
    sandbox.deposit("USD", "100000")
    answers: dict[str, Any] = {}
    failed = []
    operations = _operations(doc)
    order = sorted(operations, key=lambda n: n in LATER and LATER.index(n) + 1)
    for name in order:
        path, method, op = operations[name]
        if not sandbox.serves(path):
            continue
        if name == "IssueToken":
            form = {k: v["examples"][0] for k, v in _form_fields(op).items()}
            r = sandbox.http.post(path, data={"grant_type": "client_credentials", **form})
            assert r.status_code == 200, r.text
            continue
        params = {
            p["name"]: p.get("example") for p in op.get("parameters", []) if p["in"] == "path"
        }
        if None in params.values():
            continue  # an id only an answer gives (GET /v2/transfer/transfers/{id})
        url = path.format(**params)
        kwargs: dict[str, Any] = {}
        required = [p for p in op.get("parameters", []) if p["in"] == "query" and p.get("required")]
        params = {p["name"]: p["example"] for p in required if "example" in p}
        params.update(QUERIES.get(name, {}))
        if params:
            kwargs["params"] = params
        if "requestBody" in op:
            media = op["requestBody"]["content"]["application/json"]
            assert "example" in media, f"{name} has no request example"
            body = dict(media["example"])
            schema = resolve(media["schema"], schemas)
            jsonschema.Draft202012Validator(schema).validate(body)
            for field, source in FROM_ANSWERS.items():
                if field in body:
                    body[field] = answers[source][ANSWER_FIELDS.get(field, field)]
            if "quote_id" in body:  # a quote held by the ListQuotes answer
                body["quote_id"] = answers["ListQuotes"]["items"][0]["id"]
            body = _identity_ids(sandbox, name, body, answers)
            kwargs["json"] = body
        r = sandbox.http.request(method.upper(), url, headers=sandbox.headers, **kwargs)
        if r.status_code != 200:
            failed.append(f"{name}: {r.status_code} {r.text}")
        else:
            answers[name] = r.json()
    assert not failed, "\n".join(failed)
    assert {"CreateOrder", "CreateCryptoWithdrawal", "InitiateSandboxFiatDeposit"} <= set(answers)


def _identity_ids(
    sandbox: Any, name: str, body: dict[str, Any], answers: dict[str, Any]
) -> dict[str, Any]:
    """The ids an identity or account example names: the person CreateIdentity's example
    made, an institution made here for it, the account CreateAccount's example made."""
    if name not in ("AddInstitutionMembers", "CreateAccount", "UpdateAccount", "AddAccountMembers"):
        return body
    person = answers["CreateIdentity"]["id"]
    if name == "AddInstitutionMembers":
        other = sandbox.post(
            "/v2/identity/identities", {"person_details": {"first_name": "A", "last_name": "B"}}
        ).json()["id"]
        institution = sandbox.post(
            "/v2/identity/identities",
            {
                "institution_details": {"name": "Institution A"},
                "institution_members": [{"identity_id": other, "roles": ["TRUSTEE"]}],
            },
        ).json()["id"]
        members = [{**m, "identity_id": person} for m in body["members"]]
        return {**body, "institution_id": institution, "members": members}
    if name == "CreateAccount":
        return {"account": {**body["account"], "identity_id": person}}
    account = answers["CreateAccount"]["id"]
    if name == "UpdateAccount":
        return {"account": {**body["account"], "id": account}}
    members = [{**m, "identity_id": person} for m in body["members"]]
    return {**body, "account_id": account, "members": members}


def _form_fields(op: dict[str, Any]) -> dict[str, Any]:
    form = op["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    return {k: v for k, v in form["properties"].items() if "examples" in v}


def test_answers_are_documented_not_validated_on_the_way_out(http_sandbox: Any) -> None:
    """The shapes are for the document only: FastAPI validates and re-encodes an answer
    only through a route's `response_model` (its response field), which none has: each
    answer stays the route's own pre-serialized body."""
    routes = [r for router in ROUTERS for r in router.routes if isinstance(r, APIRoute)]
    assert len(routes) >= 42
    assert [r.name for r in routes if r.response_field is not None] == []
    assert [r.name for r in routes if (r.operation_id, 200) not in ANSWER_MODELS] == []


# Assembles a world's app as `sandex serve` does, never started, and prints the names of
# the response shapes whose schemas were built, then whether the document has them.
BUILT_SHAPES = """
import sys, tempfile
from pathlib import Path
from sandex.api_adapter import response_shapes
from sandex.api_adapter.bootstrap import served_on
from sandex.api_adapter.world import World
from sandex.engine.config.settings import Settings

def built():
    return [m.__name__ for m in vars(response_shapes).values()
            if isinstance(m, type) and issubclass(m, response_shapes.Shape)
            and m.__pydantic_complete__]

with tempfile.TemporaryDirectory() as tmp:
    world = World.open(Path(tmp) / "o.db", Settings(clock="manual"),
                       bootstrap=served_on("127.0.0.1"), worlds=False)
    try:
        print(len(built()))
        document = world.app.openapi()
        print("Profile" in document["components"]["schemas"])
    finally:
        world.stop()
"""


def test_an_apps_assembly_builds_no_answer_shape_until_the_document_is_asked_for() -> None:
    """The shapes document only, so a server's start (and every world's app) leaves
    their schemas unbuilt: the document builds them when it is first asked for."""
    done = subprocess.run(
        [sys.executable, "-c", BUILT_SHAPES], capture_output=True, text=True, check=True
    )
    built, documented = done.stdout.split()
    assert (built, documented) == ("0", "True")


def test_every_generic_refusal_of_every_operation_is_documented(sandbox: Any) -> None:
    """The refusals any operation can meet before its own rules: no token (401), a token
    without the scope (403), a body too large (413), of another media type (415) or not
    JSON (400), an unknown id (404). Each answer must be one the document lists."""
    doc = _own(sandbox)
    narrow = sandbox.login("sandex", "sandex-secret", scope="funding:read_profile")
    bearer = sandbox.headers
    limit = sandbox.engine.settings.max_body_bytes
    seen: set[int] = set()
    for path, ops in doc["paths"].items():
        url = re.sub(r"\{\w+\}", "nope", path)
        for method in ops:
            m = method.upper()
            tries: list[dict[str, Any]] = [
                {"headers": {}},
                {"headers": narrow},
                {"headers": {**bearer, "Content-Length": str(limit + 1)}, "content": b"{}"},
            ]
            if m in ("POST", "PUT", "PATCH", "DELETE"):
                tries.append(
                    {"headers": {**bearer, "Content-Type": "text/plain"}, "content": b"hello"}
                )
                tries.append(
                    {"headers": {**bearer, "Content-Type": "application/json"}, "content": b"{"}
                )
            for kw in tries:
                seen.add(sandbox.http.request(m, url, **kw).status_code)
    assert {400, 401, 403, 404, 413, 415} <= seen
    problems = conformance_problems(sandbox.app, sandbox.answers)
    sandbox.answers.clear()  # reported here, not again when the test ends
    assert not problems, "\n".join(problems)


def test_the_conformance_check_finds_an_unlisted_status_a_wrong_field_and_an_extra_one(
    sandbox: Any,
) -> None:
    sandbox.get("/v2/profiles/default")
    sandbox.delete("/v2/profiles/default/orders/nope")
    assert conformance_problems(sandbox.app, sandbox.answers) == []
    profile, cancel = sandbox.answers[-2:]
    cancel.status = 418
    profile.body = b'{"id": 5, "nickname": "n", "type": "DEFAULT"}'
    doc = Document(_own(sandbox))
    found = problems(doc, [profile, cancel])
    assert "CancelOrder) answered 418, a status its document does not list" in found[0]
    assert "(GetProfile) answered 200: $['id']: 5 is not of type 'string'" in found[1]
    profile.body = b'{"id": "x", "nickname": "n", "type": "DEFAULT", "colour": "red"}'
    assert "fields its schema does not name: ['$.colour']" in problems(doc, [profile])[0]
    sandbox.answers.clear()


def test_no_two_schemas_of_the_document_share_a_title(http_sandbox: Any) -> None:
    """A request body and an answer modelled by two classes of one name become two
    schemas of one title, which a generated client cannot tell apart: it drops every
    operation that names either (as openapi-python-client did)."""
    schemas = http_sandbox.get("/openapi.json").json()["components"]["schemas"]
    titles: dict[str, list[str]] = {}
    for key, schema in schemas.items():
        titles.setdefault(schema.get("title", key), []).append(key)
    assert {t: keys for t, keys in titles.items() if len(keys) > 1} == {}
