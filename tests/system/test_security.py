"""Security: tokens, secrets, logs, scopes and tenancy.

- A token that is forged, altered, expired, revoked or of another deployment is a 401.
- Client secrets are stored hashed; no secret or token reaches a log.
- Scopes: a table states each operation's scope; the test holds the app's OpenAPI
  document, the reference and the server's behaviour to it.
- Tenancy: every operation that takes an id answers 404 to another customer's client.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from freezegun import freeze_time

from sandex.api_adapter.operations import OPERATIONS
from sandex.engine.config.settings import ALL_SCOPES, BOOTSTRAP_SCOPES, KNOWN_SCOPES
from tests.support.database import query, stored_bytes
from tests.support.reference import document
from tests.support.server_helpers import ROOT as ROOT_DIR
from tests.support.server_helpers import Server

SANDEX = [sys.executable, "-m", "sandex.api_adapter.cli"]
ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
ACCOUNT_ID = "caa82b32-8abd-4899-afdc-f9d4bf9b4e98"  # a CUBIX account id


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# -- tokens ------------------------------------------------------------------------------


def test_an_altered_token_is_401_whatever_it_claims(http_sandbox: Any) -> None:
    _, creds = http_sandbox.tenant()
    tenant = http_sandbox.login(creds["client_id"], creds["client_secret"], "funding:read_profile")
    token = tenant["Authorization"].split()[1]
    prefix, payload, signature = token.split(".")
    claims = _claims(token)
    forgeries = {
        "more scopes": {**claims, "s": list(ALL_SCOPES)},
        "another client": {**claims, "c": "sandex"},
        "longer life": {**claims, "e": claims["e"] + 10**9},
    }
    for name, forged in forgeries.items():
        altered = f"{prefix}.{_b64(orjson.dumps(forged))}.{signature}"
        r = http_sandbox.get("/v2/profiles", headers=_bearer(altered))
        assert r.status_code == 401, name
    unsigned = f"{prefix}.{payload}."
    assert http_sandbox.get("/v2/profiles", headers=_bearer(unsigned)).status_code == 401
    other_prefix = f"sdx2.{payload}.{signature}"
    assert http_sandbox.get("/v2/profiles", headers=_bearer(other_prefix)).status_code == 401
    assert http_sandbox.get("/v2/profiles", headers=tenant).status_code == 200


def test_a_token_names_its_expiry_and_is_refused_after_it(sandbox: Any) -> None:
    with freeze_time("2030-06-01 12:00:00"):
        headers = sandbox.login("sandex", "sandex-secret")
    claims = _claims(headers["Authorization"].split()[1])
    assert claims["e"] - claims["i"] == 3599
    with freeze_time("2030-06-01 12:59:58"):
        assert sandbox.get("/v2/profiles", headers=headers).status_code == 200
    with freeze_time("2030-06-01 12:59:59"):
        r = sandbox.get("/v2/profiles", headers=headers)
        assert r.status_code == 401 and "expired" in r.json()["detail"]


def test_a_token_of_another_deployment_is_401_even_for_the_same_client_id(
    sandbox_factory: Any,
) -> None:
    one = sandbox_factory("one.db")
    two = sandbox_factory("two.db")  # same bootstrap client id and secret, its own key
    assert one.get("/v2/profiles", headers=two.headers).status_code == 401
    assert two.get("/v2/profiles", headers=one.headers).status_code == 401


def test_sandex_clients_revoke_on_a_live_database_shuts_the_client_out(
    tmp_path: Path,
) -> None:
    db = tmp_path / "live.db"
    server = Server(db)  # the default rate limits: several logins within a second pass
    try:
        admin = server.token()
        created = httpx.post(f"{server.base}/v2/sandbox/customers", headers=admin).json()
        tenant = server.token(created["client_id"], created["client_secret"])
        assert httpx.get(f"{server.base}/v2/profiles", headers=tenant).status_code == 200
        done = subprocess.run(
            [*SANDEX, "clients", "revoke", created["client_id"], "--db", str(db)],
            cwd=ROOT_DIR,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        r = httpx.get(f"{server.base}/v2/profiles", headers=tenant)
        assert r.status_code == 401 and "revoked" in r.json()["detail"]
        form = {
            "grant_type": "client_credentials",
            "client_id": created["client_id"],
            "client_secret": created["client_secret"],
        }
        assert httpx.post(f"{server.base}/oauth2/token", data=form).status_code == 401
        # The server reloads the log another process wrote: its next write just works.
        deposit = {"asset": "BTC", "amount": "1"}
        url = f"{server.base}/v2/sandbox/profiles/default/deposit"
        assert httpx.post(url, json=deposit, headers=admin).status_code == 200
    finally:
        code, _, err = server.stop()
    assert code == 0, err
    verify = subprocess.run(
        [*SANDEX, "verify", "--db", str(db)], cwd=ROOT_DIR, capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stdout


def test_revoking_an_unknown_client_is_a_clear_error(sandbox: Any) -> None:
    sandbox.close()
    done = subprocess.run(
        [*SANDEX, "clients", "revoke", "nobody", "--db", str(sandbox.db)],
        cwd=ROOT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "not found" in done.stderr


# -- secrets and logs -------------------------------------------------------------------


def test_client_secrets_are_stored_only_as_salted_hashes(sandbox: Any) -> None:
    _, one = sandbox.tenant()
    _, two = sandbox.tenant()
    sandbox.close()
    raw = stored_bytes(sandbox.db)
    assert b"ClientCreated" in raw  # the log itself was read
    for secret in ("sandex-secret", one["client_secret"], two["client_secret"]):
        assert secret.encode() not in raw
    rows = query(sandbox.db, "SELECT data FROM events WHERE type = 'ClientCreated'")
    hashes = [json.loads(r[0]) for r in rows]
    assert all(len(h["secret_hash"]) == 64 and h["salt"] for h in hashes)
    assert len({h["salt"] for h in hashes}) == len(hashes)


def test_no_secret_or_token_reaches_the_server_log(tmp_path: Path) -> None:
    server = Server(tmp_path / "logs.db")
    seen: list[str] = []
    try:
        admin = server.token()
        seen.append(admin["Authorization"].split()[1])
        created = httpx.post(f"{server.base}/v2/sandbox/customers", headers=admin).json()
        seen.append(created["client_secret"])
        tenant = server.token(created["client_id"], created["client_secret"])
        seen.append(tenant["Authorization"].split()[1])
        forged = tenant["Authorization"][:-4] + "AAAA"
        seen.append(forged.split()[1])
        httpx.get(f"{server.base}/v2/profiles", headers={"Authorization": forged})
        wrong = {"grant_type": "client_credentials", "client_id": "sandex"}
        httpx.post(f"{server.base}/oauth2/token", data={**wrong, "client_secret": "guess-me-1"})
        seen.append("guess-me-1")
        httpx.post(
            f"{server.base}/oauth2/token?client_secret=in-the-query-2", data=wrong, timeout=5
        )
        seen.append("in-the-query-2")
        httpx.post(
            f"{server.base}/v2/profiles",
            content=b'{"nickname": "x", "nickname": "sneaky-secret-3"}',
            headers={**tenant, "content-type": "application/json"},
        )
        seen.append("sneaky-secret-3")
    finally:
        code, out, err = server.stop()
    assert code == 0
    assert '"event": "request"' in err or '"event":"request"' in err
    for secret in seen:
        assert secret not in err, f"{secret[:12]}… found in the server log"
        assert secret not in out


_LOG_A_BUG = """
import structlog
from sandex.api_adapter.logging import configure

configure(json_lines={json_lines})

def handler(authorization="Bearer sdx1.SECRET-TOKEN-123", client_secret="hunter2-secret"):
    try:
        raise RuntimeError("a bug")
    except RuntimeError:
        structlog.get_logger("sandex.http").exception("unhandled error")

handler()
"""


@pytest.mark.parametrize("json_lines", [False, True])
def test_a_logged_traceback_shows_no_local_variables(json_lines: bool) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LOG_A_BUG.format(json_lines=json_lines)],
        cwd=ROOT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    logged = done.stdout + done.stderr
    assert "RuntimeError" in logged and "unhandled error" in logged
    assert "SECRET-TOKEN-123" not in logged and "hunter2-secret" not in logged


def test_a_500_names_the_request_id_and_nothing_of_the_bug(sandbox: Any) -> None:
    async def boom() -> None:
        raise RuntimeError("a bug with a secret inside")

    sandbox.app.add_api_route("/v2/boom", boom)
    r = sandbox.get("/v2/boom", headers={**sandbox.headers, "X-Request-ID": "req-42"})
    assert r.status_code == 500
    assert r.headers["content-type"] == "application/problem+json"
    assert "req-42" in r.json()["detail"]
    assert "secret" not in r.text and "Traceback" not in r.text


# -- scopes ------------------------------------------------------------------------------

# operation id -> (method, path, required scope or None for a public operation): the
# operation table's rows, which the gates read; the tests below hold the OpenAPI document,
# the reference's scopes and each operation's answers to it.
SCOPES: dict[str, tuple[str, str, str | None]] = {
    op.id: (op.method, op.path, op.scope) for op in OPERATIONS
}
PATH_VALUES = {
    "profile_id": "default",
    "id": "00000000-0000-0000-0000-000000000000",
    "market": "BTCUSD",
    "asset": "BTC",
    "name": "none",
    "identity_id": "00000000-0000-0000-0000-000000000000",
    "world_id": "w_none",
}


def _operations(doc: dict[str, Any]) -> dict[str, tuple[str, str, str | None]]:
    found = {}
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            scopes = [s for req in op.get("security", []) for s in req.get("OAuth2", [])]
            assert len(scopes) <= 1, f"{op['operationId']} names several scopes"
            found[op["operationId"]] = (method.upper(), path, scopes[0] if scopes else None)
    return found


def test_the_openapi_document_states_each_operations_scope_as_the_table_does(
    http_sandbox: Any,
) -> None:
    documented = _operations(http_sandbox.http.get("/openapi.json").json())
    missing = sorted(set(documented) - set(SCOPES))
    assert not missing, f"operations without a row in the operation table: {missing}"
    assert documented == {k: v for k, v in SCOPES.items() if k in documented}
    assert set(SCOPES) - set(documented) <= {"ListEvents", "GetEvent"}


def test_the_table_agrees_with_the_reference() -> None:
    doc = document()
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            scopes = [s for req in op.get("security") or [] for s in req.get("OAuth2", [])]
            expected = SCOPES[op["operationId"]]
            assert expected[:2] == (method.upper(), "/v2" + path), op["operationId"]
            assert expected[2] == (scopes[0] if scopes else None), op["operationId"]


def _call(sb: Any, method: str, path: str, headers: dict[str, str]) -> Any:
    url = path.format(**PATH_VALUES)
    if method in ("POST", "PUT", "PATCH"):
        return sb.http.request(method, url, json={}, headers=headers)
    return sb.http.request(method, url, headers=headers)


def test_each_operation_admits_exactly_its_scope(http_sandbox: Any) -> None:
    """No token: 401. Every scope but the required one: 403 naming it. Only it: admitted."""
    http_sandbox.advance(0)
    tokens: dict[tuple[str, ...], dict[str, str]] = {}

    def token(scopes: tuple[str, ...]) -> dict[str, str]:
        if scopes not in tokens:
            tokens[scopes] = http_sandbox.login(
                http_sandbox.client_id, http_sandbox.client_secret, " ".join(scopes)
            )
        return tokens[scopes]

    failures = []
    last = ["ResetSandbox"]  # it wipes the http_sandbox, tokens and all
    for op in sorted(SCOPES, key=lambda o: o in last):
        method, path, scope = SCOPES[op]
        if op == "IssueToken":
            continue
        if scope is None:
            r = _call(http_sandbox, method, path, {})
            if r.status_code in (401, 403) or r.status_code >= 500:
                failures.append(f"{op}: public, but {r.status_code} without a token")
            continue
        r = _call(http_sandbox, method, path, {})
        if r.status_code != 401:
            failures.append(f"{op}: {r.status_code} without a token")
        others = tuple(s for s in BOOTSTRAP_SCOPES if s != scope)
        r = _call(http_sandbox, method, path, token(others))
        if r.status_code != 403 or r.json().get("meta") != {"required_scope": scope}:
            failures.append(f"{op}: {r.status_code} {r.text[:100]} without {scope}")
        r = _call(http_sandbox, method, path, token((scope,)))
        if r.status_code in (401, 403) or r.status_code >= 500:
            failures.append(f"{op}: {r.status_code} {r.text[:100]} with only {scope}")
    assert not failures, "\n".join(failures)


def test_a_tenant_has_every_scope_but_the_sandbox_admins(http_sandbox: Any) -> None:
    _, creds = http_sandbox.tenant()
    form = {
        "grant_type": "client_credentials",
        "client_id": creds["client_id"],
        "client_secret": creds["client_secret"],
    }
    granted = set(http_sandbox.http.post("/oauth2/token", data=form).json()["scope"].split())
    opt_in = {"sandbox:write_customer", "exchange:self_match_prevention", "sandbox:worlds"}
    assert granted == set(KNOWN_SCOPES) - opt_in


# -- tenancy -----------------------------------------------------------------------------


def _own_resources(sb: Any) -> dict[str, str]:
    """Customer A's resources, one of each kind that an id can name."""
    sb.deposit("BTC", "1")
    sb.deposit("USD", "100000")
    profile = sb.get("/v2/profiles/default").json()["id"]
    fee = sb.post(
        "/v2/transfer/fees/crypto-withdrawal",
        {
            "asset": "BTC",
            "destination_address": ADDRESS,
            "crypto_network": "BITCOIN",
            "amount": "0.001",
        },
    ).json()
    withdrawal = sb.post(
        "/v2/transfer/crypto-withdrawals",
        {
            "profile_id": "default",
            "asset": "BTC",
            "destination_address": ADDRESS,
            "crypto_network": "BITCOIN",
            "amount": "0.001",
            "fee_id": fee["id"],
            "ref_id": "mine",
        },
    ).json()
    instructions = sb.post(
        "/v2/transfer/fiat-deposit-instructions",
        {"profile_id": "default", "fiat_network": "WIRE", "ref_id": "mine"},
    ).json()
    order = sb.post(
        "/v2/profiles/default/orders",
        {
            "side": "BUY",
            "market": "BTCUSD",
            "type": "LIMIT",
            "price": "1000",
            "base_amount": "0.01",
        },
    )
    assert order.status_code == 200, order.text
    fee2 = sb.post(
        "/v2/transfer/fees/crypto-withdrawal",
        {
            "asset": "BTC",
            "destination_address": ADDRESS,
            "crypto_network": "BITCOIN",
            "amount": "0.001",
        },
    ).json()
    conversion = sb.post(
        "/v2/conversion/stablecoins",
        {"profile_id": "default", "amount": "10", "source_asset": "USD", "target_asset": "USDP"},
    ).json()
    quotes = sb.get("/v2/quotes", params={"markets": "BTCUSD"}).json()["items"]
    executed = sb.post(
        "/v2/profiles/default/quote-executions",
        {"quote_id": quotes[0]["id"], "quote_amount": "10"},
    ).json()
    address = sb.post(
        "/v2/transfer/deposit-addresses", {"profile_id": "default", "crypto_network": "BITCOIN"}
    ).json()
    held = sb.post(  # worth more than the default review threshold: held
        "/v2/sandbox/crypto-deposits",
        {"address": address["address"], "asset": "BTC", "amount": "1"},
    ).json()
    assert held["secondary_status"]["name"] == "TRAVEL_RULE_INFO_REQUESTED", held
    person = sb.post(
        "/v2/identity/identities", {"person_details": {"first_name": "J", "last_name": "D"}}
    ).json()
    joint = sb.post(
        "/v2/identity/identities", {"person_details": {"first_name": "K", "last_name": "D"}}
    ).json()
    institution = sb.post(
        "/v2/identity/identities",
        {
            "institution_details": {"name": "I"},
            "institution_members": [{"identity_id": person["id"], "roles": ["TRUSTEE"]}],
        },
    ).json()
    account = sb.post(
        "/v2/identity/accounts",
        {
            "account": {
                "identity_id": person["id"],
                "members": [{"identity_id": joint["id"], "roles": ["AUTHORIZED_USER"]}],
            }
        },
    ).json()
    fiat_account = sb.post(
        "/v2/transfer/fiat-accounts",
        {
            "fiat_account_owner": {"institution_details": {"name": "A Corp"}},
            "fiat_network_instructions": {"cubix": {"account_id": ACCOUNT_ID}},
            "ref_id": "mine",
        },
    ).json()
    events = sb.get("/v2/events").json()["events"]
    assert events, "customer A has events"
    # a fault rule that changes nothing the walk meets
    fault = sb.post(
        "/v2/sandbox/faults",
        {"match": {"operation": "GetSandboxClock"}, "action": {"delay_ms": 0}},
    ).json()
    webhook_fault = sb.post("/v2/sandbox/webhook-faults", {"action": {"duplicate": True}}).json()
    return {
        "fault_id": fault["id"],
        "webhook_fault_id": webhook_fault["id"],
        "identity_id": person["id"],
        "account_id": account["id"],
        "account_member_id": account["members"][0]["id"],
        "institution_member_id": institution["institution_members"][0]["id"],
        "quote_execution_id": executed["id"],
        "deposit_address_id": address["id"],
        "deposit_address": address["address"],
        "crypto_deposit_id": held["id"],
        "fiat_account_id": fiat_account["id"],
        "profile_id": profile,
        "transfer_id": withdrawal["id"],
        "order_id": order.json()["id"],
        "instructions_id": instructions["id"],
        "memo_id": instructions["memo_id"],
        "fee_id": fee2["id"],
        "event_id": events[0]["id"],
        "conversion_id": conversion["id"],
    }


# Every path parameter that names a customer's resource, and which of A's fills it
# (`id` by the path it sits in).
ID_PARAMS = {"profile_id": "profile_id", "identity_id": "identity_id"}
IDS_BY_PATH = {
    "/v2/identity/identities/{id}": "identity_id",
    "/v2/identity/identities/{id}/sandbox-status": "identity_id",
    "/v2/identity/accounts/{id}": "account_id",
    "/v2/identity/account-members/{id}": "account_member_id",
    "/v2/identity/institution-members/{id}": "institution_member_id",
    "/v2/transfer/transfers/{id}": "transfer_id",
    "/v2/profiles/{profile_id}/orders/{id}": "order_id",
    "/v2/transfer/fiat-deposit-instructions/{id}": "instructions_id",
    "/v2/events/{id}": "event_id",
    "/v2/conversion/stablecoins/{id}": "conversion_id",
    "/v2/profiles/{profile_id}/quote-executions/{id}": "quote_execution_id",
    "/v2/transfer/crypto-deposits/{id}/reject": "crypto_deposit_id",
    "/v2/transfer/crypto-deposits/{id}/update": "crypto_deposit_id",
    "/v2/transfer/fiat-accounts/{id}": "fiat_account_id",
    "/v2/sandbox/transfers/{id}/complete": "transfer_id",
    "/v2/sandbox/transfers/{id}/fail": "transfer_id",
    "/v2/sandbox/conversions/{id}/complete": "conversion_id",
    "/v2/sandbox/orders/{id}/release": "order_id",
    "/v2/sandbox/fiat-accounts/{id}/complete": "fiat_account_id",
    "/v2/sandbox/fiat-accounts/{id}/fail": "fiat_account_id",
    "/v2/sandbox/faults/{id}": "fault_id",
    "/v2/sandbox/webhook-faults/{id}": "webhook_fault_id",
}
# Parameters that name no customer's resource: a market, an asset, a snapshot of the
# whole sandbox, a world of the server (admin only: a tenant meets 403 before any id).
SHARED_PARAMS = {"market", "asset", "name", "world_id"}
# Valid bodies, so that a write reaches the id it names rather than a 400.
BODIES = {
    "CreateOrder": {
        "side": "BUY",
        "market": "BTCUSD",
        "type": "LIMIT",
        "price": "1000",
        "base_amount": "0.01",
    },
    "CreateSandboxDeposit": {"asset": "BTC", "amount": "1"},
    "UpdateProfile": {"nickname": "taken over"},
    "CreateQuoteExecution": {"quote_id": "none", "quote_amount": "10"},
    "RejectCryptoDeposit": {"identity_id": "someone"},
    "UpdateIdentity": {"metadata": {"taken": "over"}},
    "SandboxSetIdentityStatus": {"sanctions_verification_status": "APPROVED"},
    "DocumentUpload": {"name": "forged.pdf"},
    "UpdateCryptoDeposit": {
        "identity_id": "someone",
        "originator_address_info": {"individual_info": {"first_name": "J", "last_name": "D"}},
    },
    "UpdateFiatAccount": {"metadata": {"taken": "over"}},
}


def _fill(path: str, mine: dict[str, str]) -> str | None:
    values: dict[str, str] = {}
    for param in [p.split("}")[0] for p in path.split("{")[1:]]:
        if param in SHARED_PARAMS:
            values[param] = PATH_VALUES[param]
        elif param in ID_PARAMS:
            values[param] = mine[ID_PARAMS[param]]
        elif param == "id" and path in IDS_BY_PATH:
            values[param] = mine[IDS_BY_PATH[path]]
        else:
            return None
    return path.format(**values)


def test_every_id_in_a_path_is_404_to_another_customer(http_sandbox: Any) -> None:
    mine = _own_resources(http_sandbox)
    intruder, _ = http_sandbox.tenant()
    doc = http_sandbox.http.get("/openapi.json").json()
    walked, failures = [], []
    for path, ops in doc["paths"].items():
        if "{" not in path:
            continue
        for method, op in ops.items():
            url = _fill(path, mine)
            params = [p.split("}")[0] for p in path.split("{")[1:]]
            if all(p in SHARED_PARAMS for p in params):
                continue
            if url is None:
                failures.append(f"{op['operationId']}: no resource of A fills {path}")
                continue
            body = BODIES.get(op["operationId"], {}) if method in ("post", "put") else None
            if method == "get":  # the id is good: its owner sees it
                owner = http_sandbox.http.get(url, headers=http_sandbox.headers)
                if owner.status_code != 200:
                    failures.append(f"{op['operationId']}: A itself gets {owner.status_code}")
            r = http_sandbox.http.request(method.upper(), url, json=body, headers=intruder)
            walked.append(op["operationId"])
            if r.status_code != 404:
                failures.append(f"{op['operationId']} {url}: {r.status_code} {r.text[:120]}")
    assert not failures, "\n".join(failures)
    assert {"GetProfile", "GetTransfer", "GetOrder", "CancelOrder", "GetEvent"} <= set(walked)
    assert {"ListProfileOrders", "CreateOrder", "CreateSandboxDeposit"} <= set(walked)
    assert {"RejectCryptoDeposit", "UpdateCryptoDeposit"} <= set(walked)
    assert {"GetFiatAccount", "UpdateFiatAccount", "DeleteFiatAccount"} <= set(walked)
    # A's fiat account is still there: the intruder's delete did nothing.
    assert (
        http_sandbox.get(f"/v2/transfer/fiat-accounts/{mine['fiat_account_id']}").status_code == 200
    )
    # A's order is still open: the intruder's cancel did nothing.
    order = http_sandbox.get(f"/v2/profiles/{mine['profile_id']}/orders/{mine['order_id']}").json()
    assert order["status"] != "CANCELLED"


def test_every_id_in_a_body_is_404_to_another_customer(http_sandbox: Any) -> None:
    mine = _own_resources(http_sandbox)
    intruder, creds = http_sandbox.tenant()
    theirs = creds["profile_id"]
    http_sandbox.post(
        "/v2/sandbox/profiles/default/deposit", {"asset": "BTC", "amount": "1"}, headers=intruder
    )
    # the ids its orders name are checked though it has no identity of its own (the default)
    wire = {
        "account_number": "1",
        "fiat_account_owner_address": {"country": "US"},
        "routing_details": {
            "routing_number_type": "ABA",
            "routing_number": "021000021",
            "bank_name": "B",
            "bank_address": {"country": "US"},
        },
    }
    withdrawal = {
        "asset": "BTC",
        "destination_address": ADDRESS,
        "crypto_network": "BITCOIN",
        "amount": "0.001",
    }
    cases = {
        "withdraw from A's profile": (
            "/v2/transfer/crypto-withdrawals",
            {**withdrawal, "profile_id": mine["profile_id"]},
        ),
        "use A's fee quote": (
            "/v2/transfer/crypto-withdrawals",
            {**withdrawal, "profile_id": theirs, "fee_id": mine["fee_id"]},
        ),
        "move from A's profile": (
            "/v2/transfer/internal",
            {
                "from_profile_id": mine["profile_id"],
                "to_profile_id": theirs,
                "asset": "BTC",
                "amount": "0.1",
            },
        ),
        "move into A's profile": (
            "/v2/transfer/internal",
            {
                "from_profile_id": theirs,
                "to_profile_id": mine["profile_id"],
                "asset": "BTC",
                "amount": "0.1",
            },
        ),
        "instructions for A's profile": (
            "/v2/transfer/fiat-deposit-instructions",
            {"profile_id": mine["profile_id"], "fiat_network": "WIRE"},
        ),
        "wire to A's memo": (
            "/v2/sandbox/fiat-deposits",
            {
                "amount": "10.00",
                "asset": "USD",
                "memo_id": mine["memo_id"],
                "fiat_network_instructions": {"wire": wire},
            },
        ),
        # (a held-rate quote is not A's: quotes are the market's, shared by every caller)
        "quote proceeds into A's profile": (
            f"/v2/profiles/{theirs}/quote-executions",
            {
                "quote_id": "none",
                "base_amount": "0.001",
                "recipient_profile_id": mine["profile_id"],
            },
        ),
        "deposit address of A's profile": (
            "/v2/transfer/deposit-addresses",
            {"profile_id": mine["profile_id"], "crypto_network": "BITCOIN"},
        ),
        "send to A's deposit address": (
            "/v2/sandbox/crypto-deposits",
            {"address": mine["deposit_address"], "asset": "BTC", "amount": "0.01"},
        ),
        "account for A's identity": (
            "/v2/identity/accounts",
            {"account": {"identity_id": mine["identity_id"]}},
        ),
        "A's identity as a member": (
            "/v2/identity/account-members",
            {
                "account_id": mine["account_id"],
                "members": [{"identity_id": mine["identity_id"], "roles": ["AUTHORIZED_USER"]}],
            },
        ),
        "A's identity trading for A's account": (
            f"/v2/profiles/{theirs}/orders",
            {
                "side": "BUY",
                "market": "BTCUSD",
                "type": "LIMIT",
                "price": "1000",
                "base_amount": "0.01",
                "identity_id": mine["identity_id"],
                "identity_account_id": mine["account_id"],
            },
        ),
        "settle into A's profile": (
            f"/v2/profiles/{theirs}/orders",
            {
                "side": "BUY",
                "market": "BTCUSD",
                "type": "LIMIT",
                "price": "1000",
                "base_amount": "0.01",
                "recipient_profile_id": mine["profile_id"],
            },
        ),
    }
    cases["withdraw to A's fiat account"] = (
        "/v2/transfer/fiat-withdrawals",
        {
            "profile_id": theirs,
            "asset": "USD",
            "fiat_account_id": mine["fiat_account_id"],
            "amount": "1.00",
        },
    )
    failures = []
    for name, (path, body) in cases.items():
        r = http_sandbox.post(path, body, headers=intruder)
        if r.status_code != 404:
            failures.append(f"{name}: {r.status_code} {r.text[:150]}")
    # Lists filtered by A's ids or ref_ids show the intruder nothing.
    for path, params in [
        ("/v2/transfer/transfers", {"ids": mine["transfer_id"]}),
        ("/v2/transfer/transfers", {"ref_ids": "mine"}),
        ("/v2/transfer/transfers", {"profile_ids": mine["profile_id"]}),
        ("/v2/transfer/fiat-deposit-instructions", {"ids": mine["instructions_id"]}),
        ("/v2/orders", {"profile_id": mine["profile_id"]}),
        ("/v2/profiles", {"ids": mine["profile_id"]}),
        ("/v2/transfer/deposit-addresses", {"ids": mine["deposit_address_id"]}),
        ("/v2/transfer/deposit-addresses", {"profile_ids": mine["profile_id"]}),
        ("/v2/transfer/fiat-accounts", {"ids": mine["fiat_account_id"]}),
        ("/v2/transfer/fiat-accounts", {"ref_ids": "mine"}),
    ]:
        r = http_sandbox.get(path, params=params, headers=intruder)
        if r.status_code == 200 and any(
            item.get("profile_id") == mine["profile_id"] or item.get("id") in mine.values()
            for item in r.json().get("items", [])
        ):
            failures.append(f"{path} {params}: shows A's rows")
    assert not failures, "\n".join(failures)
    assert http_sandbox.balance("BTC")["available"] != "0"
