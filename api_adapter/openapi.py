"""sandex's own `/openapi.json`, made to say what the server really answers.

FastAPI documents a 422 validation error that sandex never sends; sandex answers
problem details (400, 401, 403, 404, 409, 413, 415, 429, 503) and its token endpoint
takes a form FastAPI cannot see. The document is fixed once, when first asked for, so
that clients and property-based fuzzers (schemathesis) can hold the server to it. Each
operation's path, method, scope and answer come from its row in the operation table
(api_adapter/operations.py), through its route (`pipeline.route`); the problems it may
answer follow from its scope and method.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

PROBLEM = {
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "meta": {"type": "object"},
    },
}
OAUTH_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {"error": {"type": "string"}, "error_description": {"type": "string"}},
}
TOKEN_FORM = {
    "type": "object",
    "required": ["grant_type"],
    "properties": {
        "grant_type": {"type": "string", "enum": ["client_credentials"]},
        "client_id": {"type": "string", "examples": ["sandex"]},
        "client_secret": {"type": "string", "examples": ["sandex-secret"]},
        "scope": {"type": "string", "examples": ["funding:read_profile exchange:write_order"]},
    },
}
# Path parameters a reader can send as they stand ("Try it out" fills them in).
PARAMETER_EXAMPLES = {
    "profile_id": "default",  # the DEFAULT profile of the caller's customer
    "market": "BTCUSD",
    "asset": "BTC",
    "name": "before-test",  # the snapshot that TakeSandboxSnapshot's example takes
}
# Required query parameters, likewise.
QUERY_EXAMPLES = {"transfer_type": "CRYPTO_WITHDRAWAL"}
# Where the common example would be refused: the DEFAULT profile is never deactivated.
NO_EXAMPLE = {("DeactivateProfile", "profile_id")}
BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
WIRE = {
    "account_number": "12345678",
    "fiat_account_owner_address": {"country": "US"},
    "routing_details": {
        "routing_number_type": "ABA",
        "routing_number": "021000021",
        "bank_name": "Example Bank",
        "bank_address": {"country": "US"},
    },
}
# A request body per operation (by its id in the operation table), with realistic
# values: each works as it stands on a sandbox whose DEFAULT profile holds some BTC and
# USD, but for the ids only another answer can give (a memo_id, a second profile's id).
REQUEST_EXAMPLES: dict[str, dict[str, Any]] = {
    "CreateProfile": {"nickname": "desk", "description": "the trading desk"},
    "UpdateProfile": {"nickname": "main desk"},
    "CreateSandboxDeposit": {"asset": "BTC", "amount": "0.5", "crypto_network": "BITCOIN"},
    "CreateFiatDepositInstructions": {"profile_id": "default", "fiat_network": "WIRE"},
    "InitiateSandboxFiatDeposit": {
        "amount": "150.33",
        "asset": "USD",
        "memo_id": "BQWECTNYX9",
        "fiat_network_instructions": {"wire": WIRE},
    },
    "MoveSandboxClock": {"advance_seconds": 60},
    "SetSandboxPacing": {"withdrawal": {"mode": "default"}},
    "CreateSandboxFault": {
        "match": {"operation": "CreateOrder", "body": {"market": "BTCUSD"}},
        "when": "before",
        "action": {"problem": {"status": 503}},
        "times": 2,
    },
    "CreateSandboxWebhookFault": {"action": {"fail": {"status": 503}}, "times": 2},
    "FailSandboxTransfer": {"reason": "compliance"},
    "FailSandboxFiatAccountReview": {"reason": "compliance"},
    "CreateSandboxCustomer": {},
    "CreateCryptoWithdrawalFee": {
        "asset": "BTC",
        "destination_address": BTC_ADDRESS,
        "crypto_network": "BITCOIN",
        "amount": "0.001",
    },
    "CreateCryptoWithdrawal": {
        "profile_id": "default",
        "asset": "BTC",
        "destination_address": BTC_ADDRESS,
        "crypto_network": "BITCOIN",
        "amount": "0.001",
    },
    "CreateStablecoinConversion": {
        "profile_id": "default",
        "amount": "100.00",
        "source_asset": "USD",
        "target_asset": "USDP",
    },
    "CreateInternalTransfer": {
        "from_profile_id": "default",
        "to_profile_id": "5f8a2a3c-93d1-4c0e-9a8e-2b8f6c1d7e40",
        "asset": "USD",
        "amount": "25.00",
    },
    "CreateOrder": {
        "side": "BUY",
        "market": "BTCUSD",
        "type": "LIMIT",
        "base_amount": "0.01",
        "price": "40000.00",
    },
    "SetSandboxMarketPrice": {"price": "42000.00"},
    "TakeSandboxSnapshot": {"name": "before-test"},
    "CreateSandboxWorld": {"name": "test-1", "clock": "manual"},
    "RegisterSandboxWebhook": {"url": "https://hooks.example.com/sandex"},
    "CreateQuoteExecution": {
        "quote_id": "366a26d2-3098-4226-a520-4bb43ae4d922",
        "quote_amount": "100",
    },
    "CreateDepositAddress": {"profile_id": "default", "crypto_network": "BITCOIN"},
    "CreateSandboxCryptoDeposit": {"address": BTC_ADDRESS, "asset": "BTC", "amount": "0.001"},
    "RejectCryptoDeposit": {"identity_id": "54385e67-d7ef-40d1-b488-ceda6dd9b264"},
    "CreateFiatAccount": {
        "fiat_account_owner": {"person_details": {"first_name": "Jane", "last_name": "Doe"}},
        "fiat_network_instructions": {"wire": WIRE},
    },
    "UpdateFiatAccount": {"metadata": {"desk": "treasury"}},
    "CreateFiatWithdrawal": {
        "profile_id": "default",
        "asset": "USD",
        "fiat_account_id": "caa82b32-8abd-4899-afdc-f9d4bf9b4e98",
        "amount": "12.34",
    },
    "UpdateCryptoDeposit": {
        "identity_id": "54385e67-d7ef-40d1-b488-ceda6dd9b264",
        "originator_address_info": {"individual_info": {"first_name": "John", "last_name": "Doe"}},
    },
    # identities and accounts: the ids are what other answers give
    "CreateIdentity": {
        "person_details": {
            "first_name": "John",
            "last_name": "Doe",
            "date_of_birth": "1980-01-01",
            "nationality": "USA",
            "address": {
                "country": "USA",
                "address1": "1 Example St",
                "city": "New York",
                "province": "NY",
                "zip_code": "10001",
            },
        },
        "ref_id": "33ece656-eef1-43b5-a851-b6b9099089a5",
    },
    "UpdateIdentity": {"person_details": {"email": "john@example.org"}},
    "SandboxSetIdentityStatus": {
        "id_verification_status": "APPROVED",
        "sanctions_verification_status": "APPROVED",
    },
    "DocumentUpload": {"name": "Proof_of_residence.jpg", "document_types": ["PROOF_OF_RESIDENCY"]},
    "AddInstitutionMembers": {
        "institution_id": "2908fa8b-427a-4089-b2cf-17654c604623",
        "members": [{"identity_id": "31abdcbd-2801-4dbc-8986-adec3828391b", "roles": ["GRANTOR"]}],
    },
    "CreateAccount": {
        "account": {
            "identity_id": "82c338f4-3cb7-4d9b-be2a-4b077c82ee3a",
            "ref_id": "fec36070-4c23-48ac-9ee1-df338b8233fc",
            "description": "Individual account for John Doe",
        }
    },
    "UpdateAccount": {
        "account": {"id": "79c27a0e-46a2-4276-9769-e1ebc055fa72", "description": "Joint account"}
    },
    "AddAccountMembers": {
        "account_id": "79c27a0e-46a2-4276-9769-e1ebc055fa72",
        "members": [
            {"identity_id": "08ba6b70-bcc0-4e4a-a67f-1d28842dedfc", "roles": ["AUTHORIZED_USER"]}
        ],
    },
}
_REASONS = {
    400: "Bad request: a field is missing, malformed or breaks a rule",
    401: "Missing, malformed, forged, expired or revoked bearer token",
    403: "The token lacks the scope, or a rule forbids the operation",
    404: "No such resource for this customer",
    409: "Conflicts with the current state (for example a reused ref_id)",
    413: "Request body too large",
    415: "Request body is not application/json",
    429: "Rate limit exceeded: the address is refused this family of operations until"
    " Retry-After (five minutes from going over)",
    500: "Internal error; a sandbox fault rule may answer it too (docs/faults.md)",
    502: "A sandbox fault rule answered it (docs/faults.md)",
    503: "The event store cannot take the write now, or a sandbox fault rule answered it; retry",
    504: "A sandbox fault rule answered it (docs/faults.md)",
}


def _integer_header(description: str) -> dict[str, Any]:
    return {"description": description, "schema": {"type": "integer", "minimum": 0}}


# The rate limiter's headers (`rate_limits.Verdict`): on a 429, and on every answer to
# an admitted request while rate limits are on.
RATE_LIMIT_HEADERS = {
    "Retry-After": _integer_header("Seconds until the address's penalty ends"),
    "RateLimit-Limit": _integer_header("Requests of this family an address may send in 300 s"),
    "RateLimit-Remaining": _integer_header("Requests the address may still send at once"),
    "RateLimit-Reset": _integer_header("Seconds until the penalty ends"),
    "RateLimit-Policy": {
        "description": "The family's budget and window: `budget;w=300`",
        "schema": {"type": "string"},
    },
}


def _problem(status: int) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "description": _REASONS[status],
        "content": {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
        },
    }
    if status == 429:
        answer["headers"] = RATE_LIMIT_HEADERS
    return answer


def _fix(doc: dict[str, Any]) -> None:
    doc.setdefault("components", {}).setdefault("schemas", {})["Problem"] = PROBLEM
    schemas = doc["components"]["schemas"]
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    for operations in doc.get("paths", {}).values():
        for method, op in operations.items():
            responses = op.setdefault("responses", {})
            responses.pop("422", None)
            for media in responses.get("200", {}).get("content", {}).values():
                schema = media.get("schema", {})
                if "$ref" in schema:  # the route's model, beside FastAPI's guess for a Response
                    schema.pop("type", None)
                elif schema == {"type": "string"}:
                    media["schema"] = {"type": "object"}  # every sandex answer is an object
            for parameter in op.get("parameters", []):
                if (op.get("operationId"), parameter["name"]) in NO_EXAMPLE:
                    continue
                if parameter["in"] == "path" and parameter["name"] in PARAMETER_EXAMPLES:
                    parameter["example"] = PARAMETER_EXAMPLES[parameter["name"]]
                if parameter["in"] == "query" and parameter["name"] in QUERY_EXAMPLES:
                    parameter["example"] = QUERY_EXAMPLES[parameter["name"]]
            example = REQUEST_EXAMPLES.get(op.get("operationId", ""))
            if example is not None:
                op["requestBody"]["content"]["application/json"]["example"] = example
            if op.get("operationId") == "IssueToken":
                op["requestBody"] = {
                    "required": True,
                    "content": {"application/x-www-form-urlencoded": {"schema": TOKEN_FORM}},
                }
                for code in ("400", "401"):
                    responses[code] = {
                        "description": "OAuth2 error (RFC 6749 section 5.2)",
                        "content": {"application/json": {"schema": OAUTH_ERROR}},
                    }
                responses["413"] = _problem(413)
                responses["429"] = _problem(429)
                continue
            # 413: any request, a declared length over the limit; 415: any body of another
            # media type sent with a POST or DELETE, whether the operation takes one or not
            # (`BodyGuard` answers both before any route)
            statuses = [400, 404, 413, 429, 500, 502, 503, 504]
            if op.get("security"):  # the row's scope, declared by its route's gate
                statuses += [401, 403]
            if method != "get":
                statuses += [409, 415]
            for status in sorted(statuses):
                declared = responses.setdefault(str(status), _problem(status))
                declared.setdefault("content", _problem(status)["content"])


def _answer_fields(app: FastAPI) -> None:
    """Each route's documented answers' fields, built now (`pipeline.ANSWER_MODELS`)."""
    from fastapi.routing import APIRoute, iter_route_contexts
    from fastapi.utils import create_model_field

    from sandex.api_adapter.pipeline import ANSWER_MODELS

    by_operation: dict[str, list[tuple[int | str, type[Any]]]] = {}
    for (operation_id, status), model in ANSWER_MODELS.items():
        by_operation.setdefault(operation_id, []).append((status, model))
    for context in iter_route_contexts(app.routes):
        if not isinstance(context.original_route, APIRoute):
            continue
        fields = context.response_fields
        for status, model in by_operation.get(context.operation_id or "", []):
            if status not in fields:
                fields[status] = create_model_field(
                    name=f"Response_{status}_{context.unique_id}", type_=model, mode="serialization"
                )


def install(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _answer_fields(app)
            _fix(generate())
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]
