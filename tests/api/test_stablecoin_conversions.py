"""Issue 19: stablecoin conversions (USD <-> USDP, PYUSD, USDG at par): the source leaves
at creation, the target arrives at settlement on the engine clock, a CREATED conversion
may be cancelled, and the document's refusals."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sandex.engine.kernel.commands import CreateCustomer
from tests.support.transfer_helpers import usd_below_the_cent

PATH = "/v2/conversion/stablecoins"
NO_ID = "00000000-0000-0000-0000-000000000000"


def _convert(
    sandbox: Any, amount: str, source: str = "USD", target: str = "USDP", **kw: Any
) -> Any:
    body = {
        "profile_id": "default",
        "amount": amount,
        "source_asset": source,
        "target_asset": target,
    }
    headers = kw.pop("headers", sandbox.headers)
    body.update(kw)
    return sandbox.post(PATH, body, headers=headers)


def test_usd_to_usdp_debits_at_once_and_credits_at_settlement(sandbox: Any) -> None:
    sandbox.deposit("USD", "1000")
    r = _convert(sandbox, "100.25", metadata={"desk": "a"}, ref_id="c-1")
    assert r.status_code == 200, r.text
    created = r.json()
    assert created["status"] == "CREATED"
    assert created["amount"] == "100.25"
    assert created["source_asset"] == "USD" and created["target_asset"] == "USDP"
    assert created["identity_id"] == NO_ID and created["account_id"] == NO_ID
    assert created["metadata"] == {"desk": "a"} and created["ref_id"] == "c-1"
    assert created["created_at"] == "2024-01-01T00:00:00.000000Z"
    assert "settled_at" not in created and "customer_id" not in created
    assert sandbox.balance("USD")["available"] == "899.75"
    assert sandbox.balance("USDP")["available"] == "0"
    sandbox.advance(9)
    assert sandbox.get(f"{PATH}/{created['id']}").json()["status"] == "CREATED"
    sandbox.advance(1)
    settled = sandbox.get(f"{PATH}/{created['id']}").json()
    assert settled["status"] == "SETTLED"
    assert settled["settled_at"] == settled["updated_at"] == "2024-01-01T00:00:10.000000Z"
    assert sandbox.balance("USDP")["available"] == "100.25"
    assert sandbox.balance("USD")["available"] == "899.75"
    assert sandbox.verify() == []


def test_each_stablecoin_converts_back_to_usd(http_sandbox: Any) -> None:
    for coin in ("USDP", "PYUSD", "USDG"):
        http_sandbox.deposit(coin, "50")
        r = _convert(http_sandbox, "20.5", source=coin, target="USD")
        assert r.status_code == 200, r.text
    http_sandbox.advance(10)
    assert http_sandbox.balance("USD")["available"] == "61.5"
    for coin in ("USDP", "PYUSD", "USDG"):
        assert http_sandbox.balance(coin)["available"] == "29.5"
    statuses = {c["status"] for c in http_sandbox.get(PATH).json()["items"]}
    assert statuses == {"SETTLED"}


def test_a_created_conversion_is_cancelled_and_the_source_returns(sandbox: Any) -> None:
    sandbox.deposit("USD", "10")
    created = _convert(sandbox, "10", target="PYUSD").json()
    assert sandbox.balance("USD")["available"] == "0"
    sandbox.advance(3)
    r = sandbox.delete(f"{PATH}/{created['id']}")
    assert r.status_code == 200, r.text
    cancelled = r.json()
    assert cancelled["status"] == "CANCELLED"
    assert cancelled["cancelled_at"] == cancelled["updated_at"] == "2024-01-01T00:00:03.000000Z"
    assert sandbox.balance("USD")["available"] == "10"
    sandbox.advance(20)
    assert sandbox.get(f"{PATH}/{created['id']}").json()["status"] == "CANCELLED"
    assert sandbox.balance("PYUSD")["available"] == "0"
    again = sandbox.delete(f"{PATH}/{created['id']}")
    assert again.status_code == 409
    assert again.json()["meta"] == {"status": "CANCELLED"}
    assert sandbox.verify() == []


def test_a_settled_conversion_is_past_its_cancellation_window(http_sandbox: Any) -> None:
    http_sandbox.deposit("USD", "10")
    created = _convert(http_sandbox, "10").json()
    http_sandbox.advance(10)
    r = http_sandbox.delete(f"{PATH}/{created['id']}")
    assert r.status_code == 409
    assert "only a CREATED conversion can be cancelled" in r.json()["detail"]
    assert http_sandbox.balance("USDP")["available"] == "10"


def test_the_settlement_delay_is_a_setting(sandbox_factory: Any) -> None:
    sb = sandbox_factory(conversion_settle_seconds=Decimal(0))
    sb.deposit("USD", "5")
    r = _convert(sb, "5", target="USDG")
    assert r.status_code == 200 and r.json()["status"] == "SETTLED", r.text
    assert sb.balance("USDG")["available"] == "5"


def test_insufficient_funds_is_the_documents_problem(http_sandbox: Any) -> None:
    http_sandbox.deposit("USD", "358.24")
    r = _convert(http_sandbox, "999")
    assert r.status_code == 403
    body = r.json()
    assert body["type"] == "https://developer.paxos.com/docs/v2/problems/insufficient-funds"
    assert body["meta"]["available"] == "358.24" and body["meta"]["needed"] == "999"


def test_a_reused_ref_id_is_409_with_the_existing_conversion(http_sandbox: Any) -> None:
    http_sandbox.deposit("USD", "10")
    first = _convert(http_sandbox, "3", ref_id="refid-1").json()
    r = _convert(http_sandbox, "4", ref_id="refid-1")
    assert r.status_code == 409
    assert r.json()["detail"] == "conversion already exists with ref_id 'refid-1'"
    assert r.json()["meta"]["existing"] == first
    listed = http_sandbox.get(PATH, params={"ref_id": "refid-1"}).json()["items"]
    assert [c["id"] for c in listed] == [first["id"]]
    assert http_sandbox.balance("USD")["available"] == "7"


def test_refused_pairs_amounts_and_precision_name_their_field(sandbox_factory: Any) -> None:
    sb = sandbox_factory(conversion_max_amount=Decimal(10000))
    sb.deposit("USD", "20000")
    sb.deposit("USDP", "20000")
    cases = [
        (_convert(sb, "1", source="USDP", target="PYUSD"), "target_asset"),
        (_convert(sb, "1", source="USD", target="USDC"), "target_asset"),
        (_convert(sb, "1", source="BTC", target="USD"), "source_asset"),
        (_convert(sb, "1", source="USD", target="USD"), "target_asset"),
        (_convert(sb, "-1"), "amount"),
        (_convert(sb, "1.005"), "amount"),
        (_convert(sb, "1.005", source="USDP", target="USD"), "amount"),
    ]
    for r, field in cases:
        assert r.status_code == 400, r.text
        assert r.json()["meta"]["field"] == field, r.text
    over = _convert(sb, "11000")
    assert over.status_code == 400
    assert over.json()["detail"] == "11000 amount is above the maximum 10000 USD"
    missing = sb.post(PATH, {"amount": "1", "source_asset": "USD", "target_asset": "USDP"})
    assert missing.status_code == 400 and missing.json()["meta"]["field"] == "profile_id"
    assert sb.balance("USD")["available"] == "20000"


def test_a_usd_balance_a_trade_left_below_the_cent_converts_whole(http_sandbox: Any) -> None:
    """USD to USDP (18 places) at the balance's own places; USDG keeps its 6."""
    held = usd_below_the_cent(http_sandbox)
    refused = _convert(http_sandbox, held, target="USDG")
    assert refused.status_code == 400, refused.text
    assert refused.json()["detail"] == "max precision allowed for asset USDG is 6"
    r = _convert(http_sandbox, held)
    assert r.status_code == 200, r.text
    assert r.json()["amount"] == held
    assert http_sandbox.balance("USD")["available"] == "0"


def test_directed_settlement_credits_the_recipient_profile(http_sandbox: Any) -> None:
    desk = http_sandbox.post("/v2/profiles", {"nickname": "desk"}).json()
    http_sandbox.deposit("USD", "10")
    r = _convert(http_sandbox, "10", recipient_profile_id=desk["id"])
    assert r.status_code == 200, r.text
    assert r.json()["recipient_profile_id"] == desk["id"]
    http_sandbox.advance(10)
    assert http_sandbox.balance("USDP", profile=desk["id"])["available"] == "10"
    assert http_sandbox.balance("USDP")["available"] == "0"


def test_tenancy_and_scopes(http_sandbox: Any) -> None:
    http_sandbox.deposit("USD", "10")
    mine = _convert(http_sandbox, "1").json()
    headers, _ = http_sandbox.tenant()
    assert http_sandbox.get(f"{PATH}/{mine['id']}", headers=headers).status_code == 404
    assert http_sandbox.delete(f"{PATH}/{mine['id']}", headers=headers).status_code == 404
    assert http_sandbox.get(PATH, headers=headers).json()["items"] == []
    r = _convert(http_sandbox, "1", headers=headers)
    assert r.status_code == 403  # the tenant's own default profile holds no USD
    narrow = http_sandbox.login(
        http_sandbox.client_id,
        http_sandbox.client_secret,
        scope="conversion:read_conversion_stablecoin",
    )
    assert _convert(http_sandbox, "1", headers=narrow).status_code == 403
    assert http_sandbox.get(PATH, headers=narrow).status_code == 200
    write_only = http_sandbox.login(
        http_sandbox.client_id,
        http_sandbox.client_secret,
        scope="conversion:write_conversion_stablecoin",
    )
    assert http_sandbox.get(PATH, headers=write_only).status_code == 403
    unknown = http_sandbox.get(f"{PATH}/nope").json()
    assert unknown["detail"].startswith("conversion with id nope not found for customer with id")


def test_the_list_pages_newest_first_and_filters(http_sandbox: Any) -> None:
    desk = http_sandbox.post("/v2/profiles", {"nickname": "desk"}).json()
    http_sandbox.deposit("USD", "100")
    http_sandbox.deposit("USD", "100", profile=desk["id"])
    ids = []
    for i in range(3):
        ids.append(_convert(http_sandbox, f"{i + 1}").json()["id"])
        http_sandbox.advance(60)
    theirs = http_sandbox.post(
        PATH,
        {"profile_id": desk["id"], "amount": "5", "source_asset": "USD", "target_asset": "USDG"},
    ).json()
    first = http_sandbox.get(PATH, params={"limit": 2}).json()
    assert [c["id"] for c in first["items"]] == [theirs["id"], ids[2]]
    rest = http_sandbox.get(
        PATH, params={"limit": 2, "page_cursor": first["next_page_cursor"]}
    ).json()
    assert [c["id"] for c in rest["items"]] == [ids[1], ids[0]]
    by_profile = http_sandbox.get(PATH, params={"profile_id": desk["id"]}).json()["items"]
    assert [c["id"] for c in by_profile] == [theirs["id"]]
    window = http_sandbox.get(
        PATH,
        params={
            "created_at.begin": "2024-01-01T00:01:00Z",
            "created_at.end": "2024-01-01T00:02:00Z",
            "order": "ASC",
        },
    ).json()["items"]
    assert [c["id"] for c in window] == [ids[1], ids[2]]
    bad = http_sandbox.get(PATH, params={"created_at.begin": "yesterday"})
    assert bad.status_code == 400 and bad.json()["meta"]["field"] == "created_at.begin"


def test_a_profile_with_a_conversion_in_flight_is_not_deactivated(http_sandbox: Any) -> None:
    desk = http_sandbox.post("/v2/profiles", {"nickname": "desk"}).json()
    http_sandbox.deposit("USD", "5", profile=desk["id"])
    r = http_sandbox.post(
        PATH,
        {"profile_id": desk["id"], "amount": "5", "source_asset": "USD", "target_asset": "USDP"},
    )
    assert r.status_code == 200, r.text
    refused = http_sandbox.http.put(
        f"/v2/profiles/{desk['id']}/deactivate", headers=http_sandbox.headers
    )
    assert refused.status_code == 400
    assert refused.json()["meta"]["balances"] == {"USD": "5"}


def test_conversions_survive_a_restart_and_settle_after_it(sandbox_factory: Any) -> None:
    first = sandbox_factory("restart.db")
    first.deposit("USD", "7")
    created = _convert(first, "7").json()
    first.close()
    second = sandbox_factory("restart.db")
    assert second.get(f"{PATH}/{created['id']}").json()["status"] == "CREATED"
    second.advance(10)
    assert second.get(f"{PATH}/{created['id']}").json()["status"] == "SETTLED"
    assert second.balance("USDP")["available"] == "7"


def test_a_client_recorded_before_the_conversion_scopes_holds_them_by_its_own(
    sandbox: Any,
) -> None:
    """The conversion scopes are granted with the profile scopes they extend (the
    recorded ClientCreated is unchanged): a client with only funding:read_profile reads
    conversions and cannot create one."""
    sandbox.engine.execute(
        CreateCustomer(
            client_id="reader", client_secret="reader-secret", scopes=("funding:read_profile",)
        )
    )
    token = sandbox.http.post(
        "/oauth2/token",
        data={
            "grant_type": "client_credentials",
            "client_id": "reader",
            "client_secret": "reader-secret",
        },
    ).json()
    assert set(token["scope"].split()) == {
        "funding:read_profile",
        "conversion:read_conversion_stablecoin",
        # identities and accounts extend profiles the same way (docs/identities.md)
        "identity:read_identity",
        "identity:read_account",
    }
    headers = {"Authorization": f"Bearer {token['access_token']}"}
    assert sandbox.get(PATH, headers=headers).status_code == 200
    assert _convert(sandbox, "1", headers=headers).status_code == 403
