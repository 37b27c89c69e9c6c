"""The golden run: one seeded, deterministic session that uses every kind of command
sandex has, driven through the HTTP app, and what it leaves behind.

`play` runs it on a fresh database and captures the log (its hash, and every event with
the credential fields masked) and every read-model table, at the restart halfway and at
the end; tests/api/test_golden_log.py compares that with tests/fixtures/golden/. The run
names nothing inside the engine but `RevokeClient`, the one command that HTTP does not
offer (`sandex clients revoke` sends it): moving engine modules about leaves the run as
it is, and only a change of behaviour changes what it leaves.
"""

from __future__ import annotations

import difflib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sandex.engine.kernel.commands import RevokeClient
from sandex.engine.store import is_server_url
from sandex.engine.tools.time_travel import log_hash
from tests.support.log_helpers import masked_log

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
UPDATE_ENV = "SANDEX_GOLDEN_UPDATE"
DB_NAME = "golden.db"

# A fixed seed and seeded execution ids (the default draws their key from the OS); fees,
# so that trades post commissions. The price path moves (the default volatility): the
# house's ladder moves under resting orders and its watch fills them. The bootstrap
# customer's identity ids are labels: its held deposits name "ident-1", which is not an
# identity (the run creates none).
SETTINGS: dict[str, Any] = {
    "seed": 16,
    "execution_ids": "seeded",
    "maker_fee_rate": "0.001",
    "taker_fee_rate": "0.002",
    "bootstrap_identity_labels": True,
}
# The second half is served by a restarted engine, its state loaded from the log, whose
# orders wait this long before they reach the market.
LATENCY_MS = 250

# The store's own tables: the log (compared event by event) and its bookkeeping. Every
# other table of the database is a read model, compared row by row.
STORE_TABLES = frozenset({"events", "sandex_meta", "checkpoint", "state_snapshots"})
# Columns drawn from the OS CSPRNG (engine/credentials.py): a client's salt and secret
# hash, a webhook's sealed secret. They differ on every run by design, so they are
# masked here, as the log hash masks them in the log. Nothing else is masked or dropped.
RANDOM_COLUMNS = {"clients": ("salt", "secret_hash"), "webhooks": ("secret",)}
MASK = "<random>"

PROFILES = "/v2/profiles"
FEES = "/v2/transfer/fees/crypto-withdrawal"
WITHDRAWALS = "/v2/transfer/crypto-withdrawals"
INTERNAL = "/v2/transfer/internal"
WIRES = "/v2/sandbox/fiat-deposits"
ADDRESSES = "/v2/transfer/deposit-addresses"
CRYPTO_DEPOSITS = "/v2/sandbox/crypto-deposits"
WIRE = {
    "account_number": "12345678",
    "fiat_account_owner_address": {"country": "US", "city": "Austin"},
    "routing_details": {
        "routing_number_type": "ABA",
        "routing_number": "021000021",
        "bank_name": "Example Bank",
        "bank_address": {"country": "US"},
    },
}
BTC = {
    "asset": "BTC",
    "crypto_network": "BITCOIN",
    "destination_address": "1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2",
}
ETH = {
    "asset": "ETH",
    "crypto_network": "ETHEREUM",
    "destination_address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
}
USDC = {
    "asset": "USDC",
    "crypto_network": "SOLANA",
    "destination_address": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
}
LTC = {
    "asset": "LTC",
    "crypto_network": "LITECOIN",
    "destination_address": "LUd28DgwFmae8thFhaPYHGVmps4XockqfQ",
}

Tables = dict[str, list[dict[str, Any]]]
# When the read models are captured: with the first engine stopped, and at the end.
MOMENTS = ("restart", "end")


@dataclass(frozen=True)
class Golden:
    log_hash: str
    events: list[list[Any]]  # masked_log rows: position, stream, ..., occurred_at
    tables: dict[str, Tables]  # moment (MOMENTS) -> table -> sorted rows


def play(open_sandbox: Callable[..., Any]) -> Golden:
    """Run the golden session on a fresh database (`open_sandbox` is conftest's
    `sandbox_factory`) and capture what it leaves."""
    sb = open_sandbox(DB_NAME, **SETTINGS)
    db: Path | str = sb.db
    ids = _first_half(Session(sb))
    sb.close()
    at_restart = read_models(db)
    sb = open_sandbox(DB_NAME, **SETTINGS, order_submission_latency_ms=LATENCY_MS)
    _second_half(Session(sb), ids)
    sb.close()
    events = [list(row) for row in masked_log(db)]
    return Golden(log_hash(db), events, {"restart": at_restart, "end": read_models(db)})


class Session:
    """The run's calls, each held to the status it must answer. `who` is the caller's
    auth headers (the bootstrap client's when left out)."""

    def __init__(self, sb: Any) -> None:
        self.sb = sb

    def call(self, method: str, path: str, body: Any = None, status: int = 200, **kw: Any) -> Any:
        if body is not None:
            kw["json"] = body
        r = self.sb.http.request(method, path, **kw)
        assert r.status_code == status, f"{method} {path}: {r.status_code} {r.text}"
        return r.json()

    def post(self, path: str, body: Any = None, status: int = 200, who: Any = None) -> Any:
        return self.call("POST", path, body, status, headers=who or self.sb.headers)

    def get(self, path: str, status: int = 200, who: Any = None) -> Any:
        return self.call("GET", path, None, status, headers=who or self.sb.headers)

    def delete(self, path: str, status: int = 200, who: Any = None) -> Any:
        return self.call("DELETE", path, None, status, headers=who or self.sb.headers)

    def login(self, creds: dict[str, Any], status: int = 200) -> dict[str, str]:
        form = {
            "grant_type": "client_credentials",
            "client_id": creds["client_id"],
            "client_secret": creds["client_secret"],
        }
        token = self.call("POST", "/oauth2/token", status=status, data=form)
        return {"Authorization": f"Bearer {token.get('access_token')}"}

    def advance(self, seconds: int) -> Any:
        return self.post("/v2/sandbox/clock", {"advance_seconds": seconds})

    def now_millis(self) -> int:
        now = datetime.fromisoformat(self.get("/v2/sandbox/clock")["now"])
        return int(now.timestamp() * 1000)

    def deposit(self, asset: str, amount: str, who: Any = None, **kw: Any) -> Any:
        body = {"asset": asset, "amount": amount, **kw}
        return self.post("/v2/sandbox/profiles/default/deposit", body, who=who)

    def order(self, status: int = 200, who: Any = None, **body: Any) -> Any:
        body.setdefault("market", "BTCUSD")
        return self.post(f"{PROFILES}/default/orders", body, status, who)

    def read(self, order: dict[str, Any], who: Any = None) -> Any:
        return self.get(f"{PROFILES}/{order['profile_id']}/orders/{order['id']}", who=who)

    def cancel(self, order: dict[str, Any], status: int = 200, who: Any = None) -> Any:
        path = f"{PROFILES}/{order['profile_id']}/orders/{order['id']}"
        return self.delete(path, status, who)


def limit(side: str, price: str, amount: str, **kw: Any) -> dict[str, Any]:
    return {"side": side, "type": "LIMIT", "price": price, "base_amount": amount, **kw}


def _first_half(s: Session) -> dict[str, Any]:
    """On a live engine: tenants, funding, webhooks, every order type and time in force,
    stops, fees, withdrawals, transfers, snapshots and a revoked client."""
    ids = _tenants_and_funding(s)
    s.post("/v2/sandbox/snapshots", {"name": "funded"})
    _trading(s, ids)
    _withdrawals_and_transfers(s, ids)
    s.post("/v2/sandbox/snapshots", {"name": "traded"})
    s.post("/v2/sandbox/snapshots", {"name": "traded"})  # the same name again: replaced
    # Left pending for the restarted engine: a withdrawal, a wire and a GTT order.
    s.post(WITHDRAWALS, {**LTC, "profile_id": "default", "amount": "0.05"}, who=ids["b"])
    wire = {"asset": "USD", "fiat_network_instructions": {"wire": WIRE}}
    s.post(WIRES, {**wire, "amount": "500", "memo_id": ids["memo"]})
    expiry = str(s.now_millis() + 90_000)
    ids["gtt"] = s.order(
        market="ETHUSD",
        **limit("BUY", "2000.00", "1", time_in_force="GTT", expiration_date=expiry),
    )
    s.sb.engine.execute(RevokeClient(client_id=ids["c_creds"]["client_id"]))
    s.get(PROFILES, status=401, who=ids["c"])
    return ids


def _tenants_and_funding(s: Session) -> dict[str, Any]:
    # Who: the bootstrap customer (with a second profile), a tenant with two profiles
    # whose identity ids are labels (its order names id-b/acct-b, which do not exist), a
    # tenant that may prevent self-matches, and one with only some scopes.
    desk = s.post(PROFILES, {"nickname": "desk", "description": "the second profile"})
    b_creds = s.post("/v2/sandbox/customers", {"identity_labels": True})
    b = s.login(b_creds)
    c_creds = s.post("/v2/sandbox/customers", {"self_match_prevention": True})
    c = s.login(c_creds)
    s.post("/v2/sandbox/customers", {"scopes": ["funding:read_profile", "exchange:read_order"]})
    b_spare = s.post(PROFILES, {"nickname": "b-spare"}, who=b)

    # Sandbox deposits, crypto (with and without an address) and plain.
    s.deposit("USD", "2000000")
    s.deposit("BTC", "10", crypto_network="BITCOIN", crypto_address=BTC["destination_address"])
    s.deposit("ETH", "40", crypto_network="ETHEREUM")
    s.deposit("USDC", "5000", crypto_network="SOLANA")
    for asset, amount in (("LTC", "30"), ("BTC", "5"), ("USD", "600000"), ("ETH", "10")):
        s.deposit(asset, amount, who=b)
    s.deposit("BTC", "2", who=c)
    s.deposit("USD", "300000", who=c)
    # Wires: instructions (ABA and SWIFT), three wires, one too small for the wire fee;
    # they arrive a minute later.
    memo = s.post(
        "/v2/transfer/fiat-deposit-instructions",
        {"profile_id": desk["id"], "fiat_network": "WIRE", "ref_id": "wire-1"}
        | {"metadata": {"k": "v"}},
    )["memo_id"]
    swift = s.post(
        "/v2/transfer/fiat-deposit-instructions",
        {"profile_id": "default", "fiat_network": "WIRE", "routing_number_type": "SWIFT"},
        who=b,
    )
    wire = {"asset": "USD", "fiat_network_instructions": {"wire": WIRE}}
    s.post(WIRES, {**wire, "amount": "150.33", "memo_id": memo})
    s.post(WIRES, {**wire, "amount": "12.50", "memo_id": memo})
    owner = {"person_details": {"first_name": "Bea", "last_name": "Lee"}}
    s.post(
        WIRES,
        {**wire, "amount": "1000", "memo_id": swift["memo_id"], "fiat_account_owner": owner},
        who=b,
    )
    s.advance(30)
    s.post("/v2/sandbox/webhooks", {"url": "https://hooks.example.com/b"}, who=b)
    s.post("/v2/sandbox/webhooks", {"url": "https://hooks.example.com/admin"})
    s.advance(31)  # the wires arrive
    s.delete("/v2/sandbox/webhooks")
    return {
        "desk": desk["id"],
        "b_spare": b_spare["id"],
        "memo": memo,
        "b": b,
        "c": c,
        "b_creds": b_creds,
        "c_creds": c_creds,
    }


def _trading(s: Session, ids: dict[str, Any]) -> None:
    """At 00:01:01 the house bids 42624.25 and asks 42667.25 for BTC (tick 0.25)."""
    b, c = ids["b"], ids["c"]
    # Against another customer's resting order, then through it into the house's ladder.
    b_ask = s.order(
        who=b,
        **limit("SELL", "42650.00", "0.5", ref_id="b-ask-1", metadata={"book": "b"}),
        identity_id="id-b",
        identity_account_id="acct-b",
    )
    assert b_ask["status"] == "OPEN", b_ask
    assert s.order(**limit("BUY", "42660.00", "0.3"))["status"] == "FILLED"
    swept = s.order(side="BUY", type="MARKET", quote_amount="15000")
    assert swept["status"] == "FILLED" and s.read(b_ask, who=b)["status"] == "FILLED"
    s.order(side="SELL", type="MARKET", base_amount="0.1", ref_id="mkt-sell")
    # Immediate or cancel: a remainder, then nothing; fill or kill: killed, then filled.
    ioc = s.order(**limit("BUY", "42700.00", "3", time_in_force="IOC"))
    assert ioc["status"] == "CANCELLED" and ioc["amount_filled"] != "0.00000000", ioc
    s.order(**limit("BUY", "42500.00", "0.1", time_in_force="IOC"))
    assert s.order(**limit("BUY", "42680.00", "5", time_in_force="FOK"))["status"] == "CANCELLED"
    assert s.order(**limit("SELL", "42600.00", "0.5", time_in_force="FOK"))["status"] == "FILLED"
    # Post-only: one rests, one would take (rejected), one IOC cannot rest.
    post_only: dict[str, Any] = {"type": "POST_ONLY_LIMIT", "base_amount": "0.2"}
    resting = s.order(side="BUY", price="42640.00", **post_only)
    assert resting["status"] == "OPEN", resting
    taking = s.order(who=b, side="SELL", price="42630.00", **post_only)
    assert taking["status"] == "REJECTED", taking
    s.order(side="BUY", price="42500.00", time_in_force="IOC", **post_only)
    # Self-match prevention: the resting order of the same id is cancelled, the taker
    # rests, and is cancelled by its owner (twice: the second is refused).
    smp: dict[str, Any] = {"self_match_prevention_id": "c-desk"}
    c_ask = s.order(who=c, **limit("SELL", "42655.00", "0.1", **smp))
    c_bid = s.order(who=c, **limit("BUY", "42660.00", "0.1", **smp))
    assert s.read(c_ask, who=c)["status"] == "CANCELLED" and c_bid["status"] == "OPEN"
    s.cancel(c_bid, who=c)
    s.cancel(c_bid, status=403, who=c)
    # Refused before anything is decided: no event.
    s.order(status=403, who=c, **limit("BUY", "42000.00", "100"))  # notional too large
    s.order(status=403, who=c, **limit("BUY", "42000.00", "10"))  # insufficient funds
    s.order(status=400, **limit("BUY", "42000.00", "1", time_in_force="GTT"))  # no expiry
    # GTT on a limit; stops of both types, GTC and GTT.
    now = s.now_millis()
    gtt = s.order(
        **limit("BUY", "42000.00", "0.1", time_in_force="GTT", expiration_date=str(now + 120_000))
    )
    sell: dict[str, Any] = {"side": "SELL"}
    stop_market = s.order(type="STOP_MARKET", stop_price="42300.00", base_amount="0.2", **sell)
    stop_limit = s.order(
        type="STOP_LIMIT",
        stop_price="42250.00",
        price="42200.00",
        base_amount="0.3",
        time_in_force="GTT",
        expiration_date=str(now + 86_400_000),
        **sell,
    )
    far_stop = s.order(
        who=b, type="STOP_LIMIT", stop_price="41000.00", price="40900.00", base_amount="0.4", **sell
    )
    expiring_stop = s.order(
        type="STOP_MARKET",
        stop_price="40000.00",
        base_amount="0.1",
        time_in_force="GTT",
        expiration_date=str(now + 1_800_000),
        **sell,
    )
    waiting = (gtt, stop_market, stop_limit, far_stop, expiring_stop)
    assert {o["status"] for o in waiting} == {"OPEN"}, waiting
    # ETH: bought into another profile of the same customer (a request id the client
    # sent enters the log), a tenant's resting sell, a buy the house fills.
    s.call(
        "POST",
        f"{PROFILES}/default/orders",
        {"market": "ETHUSD", "side": "BUY", "type": "MARKET", "quote_amount": "4600.50"}
        | {"recipient_profile_id": ids["desk"]},
        headers={**s.sb.headers, "X-Request-ID": "eth-1"},
    )
    s.order(who=b, market="ETHUSD", **limit("SELL", "2290.00", "2"))
    s.order(market="ETHUSD", **limit("BUY", "2291.00", "1.5"))
    for path in ("/markets/BTCUSD/order-book", "/markets/BTCUSD/ticker", "/all-markets/ticker"):
        s.get("/v2" + path)  # read by the writer: nothing logged
    # The price is set lower: the house takes the bid its ladder now crosses, both stops
    # trigger, the stop-market sells, the stop-limit rests at its limit.
    s.post("/v2/sandbox/markets/BTCUSD/price", {"price": "42200.00"})
    assert [s.read(o)["status"] for o in (resting, stop_market, stop_limit)] == [
        "FILLED",
        "FILLED",
        "OPEN",
    ]
    s.advance(130)  # the GTT limit expires; the path moves on and fills the ETH sell
    assert s.read(gtt)["status"] == "CANCELLED"
    s.order(who=b, **limit("BUY", "42100.00", "0.2"))
    s.advance(600)  # the falling path fills it
    s.cancel(far_stop, who=b)
    s.advance(1200)  # the GTT stop expires
    assert s.read(expiring_stop)["status"] == "CANCELLED"
    s.get("/v2/markets/BTCUSD/recent-executions")


def _withdrawals_and_transfers(s: Session, ids: dict[str, Any]) -> None:
    b = ids["b"]
    mine = {"profile_id": "default"}
    # A guaranteed fee used; one left to expire, then refused; a quote above the cap.
    quote = s.post(FEES, {**BTC, "amount": "0.0015"})
    s.post(FEES, {**BTC, "amount": "0.5"}, status=400)
    stale = s.post(FEES, {**ETH, "total": "0.04"})
    s.post(
        WITHDRAWALS,
        {**BTC, **mine, "amount": "0.0015", "fee_id": quote["id"], "ref_id": "w-1"}
        | {"metadata": {"why": "cold storage"}},
    )
    # Scheduled fees: to an institution; one that fails (its memo says so); USDC paid
    # from USD; a tenant's sized by its total.
    beneficiary = {"institution_details": {"name": "Cold Ltd"}}
    s.post(WITHDRAWALS, {**ETH, **mine, "amount": "0.03", "beneficiary": beneficiary})
    s.post(WITHDRAWALS, {**BTC, **mine, "amount": "0.001", "memo": "sandbox:fail"})
    s.post(WITHDRAWALS, {**USDC, **mine, "total": "100", "balance_asset": "USD"})
    s.post(WITHDRAWALS, {**BTC, **mine, "total": "0.002"}, who=b)
    s.advance(61)  # every withdrawal confirmed or failed; both quotes expired
    s.post(WITHDRAWALS, {**ETH, **mine, "total": "0.04", "fee_id": stale["id"]}, status=403)
    # Internal transfers between profiles of one customer, both ways, and a tenant's.
    s.post(
        INTERNAL,
        {"from_profile_id": "default", "to_profile_id": ids["desk"], "asset": "BTC"}
        | {"amount": "0.5", "ref_id": "move-1", "metadata": {"a": "1"}}
        | {"recipient_metadata": {"b": "2"}},
    )
    s.post(
        INTERNAL,
        {"from_profile_id": ids["desk"], "to_profile_id": "default", "asset": "USD"}
        | {"amount": "50.25"},
    )
    s.post(
        INTERNAL,
        {"from_profile_id": "default", "to_profile_id": ids["b_spare"], "asset": "BTC"}
        | {"amount": "1"},
        who=b,
    )


def _second_half(s: Session, ids: dict[str, Any]) -> None:
    """On the restarted engine, its state loaded from the log: what the first half left
    pending completes; orders wait LATENCY_MS before they reach the market; snapshots
    are restored and the sandbox is reset."""
    b = s.login(ids["b_creds"])
    s.login(ids["c_creds"], status=401)  # revoked before the restart
    s.advance(5)  # the LTC withdrawal confirms
    # Orders wait PENDING_SUBMISSION; one is cancelled before it is submitted, the others
    # reach the market together when the clock passes their time.
    first = s.order(**limit("BUY", "42000.00", "0.1", ref_id="late-1"))
    assert first["status"] == "PENDING_SUBMISSION", first
    s.order(who=b, side="SELL", type="MARKET", base_amount="0.05")
    s.order(who=b, market="ETHUSD", side="BUY", type="MARKET", quote_amount="1000")
    s.cancel(s.order(**limit("SELL", "45000.00", "0.1")))
    s.advance(1)
    assert s.read(first)["status"] == "FILLED"
    s.advance(90)  # the GTT order placed before the restart expires; the wire arrives
    assert s.read(ids["gtt"])["status"] == "CANCELLED"
    # Back to the funded sandbox and a trade there; then back to after the first half's
    # trading, its resting stop-limit and timers with it, which the path then fills.
    s.post("/v2/sandbox/snapshots/funded/restore")
    s.order(who=b, side="BUY", type="MARKET", quote_amount="2500")
    s.advance(1)
    s.post("/v2/sandbox/snapshots/traded/restore")
    s.post("/v2/sandbox/snapshots/nothing/restore", status=404)
    s.post("/v2/sandbox/clock", {"set_to": "2024-01-01T02:00:00Z"})
    s.get("/v2/sandbox/snapshots")
    # Reset: money and trading start again from nothing, who may call stays; then the
    # first half's world once more, so that the tables end full.
    s.post("/v2/sandbox/reset")
    s.deposit("USD", "1000", who=b)
    s.order(who=b, **limit("BUY", "30000.00", "0.01"))
    s.advance(1)
    s.post("/v2/sandbox/snapshots/traded/restore")
    s.order(who=b, **limit("SELL", "43000.00", "0.1"))
    s.advance(1)
    _quotes(s, b)
    _deposit_addresses(s)


def _quotes(s: Session, b: dict[str, str]) -> None:
    """Held-rate quotes, after every earlier operation so that the log before them stays
    as recorded: one executed, then the batch expires."""
    items = s.get("/v2/quotes?markets=BTCUSD&markets=ETHUSD", who=b)["items"]
    buy = next(q for q in items if q["market"] == "BTCUSD" and q["side"] == "BUY")
    body = {"quote_id": buy["id"], "quote_amount": "50", "ref_id": "held-1"}
    s.post(f"{PROFILES}/default/quote-executions", body, who=b)
    s.post(f"{PROFILES}/default/quote-executions", body, status=409, who=b)
    s.advance(30)


def _deposit_addresses(s: Session) -> None:
    """Added after the earlier operations, which it leaves as they were: a deposit
    address (its ref_id reused: 409), a deposit that confirms, and two held for the
    travel rule, one updated and one rejected."""
    address = s.post(
        ADDRESSES, {"profile_id": "default", "crypto_network": "BITCOIN", "ref_id": "d-1"}
    )
    s.post(
        ADDRESSES,
        {"profile_id": "default", "crypto_network": "SOLANA", "ref_id": "d-1"},
        status=409,
    )
    send = {"address": address["address"], "asset": "BTC"}
    s.post(CRYPTO_DEPOSITS, {**send, "amount": "0.01"})
    updated = s.post(CRYPTO_DEPOSITS, {**send, "amount": "1"})
    rejected = s.post(CRYPTO_DEPOSITS, {**send, "amount": "2"})
    s.advance(6)  # the small one confirms; the held ones wait
    person = {"individual_info": {"first_name": "Ada", "last_name": "Lovelace"}}
    s.post(
        f"/v2/transfer/crypto-deposits/{updated['id']}/update",
        {"identity_id": "ident-1", "originator_address_info": person},
    )
    s.post(f"/v2/transfer/crypto-deposits/{rejected['id']}/reject", {"identity_id": "ident-1"})


# -- what a run leaves ------------------------------------------------------------------


def read_models(db: Path | str) -> Tables:
    """Every read-model table of `db` (a file or a PostgreSQL URL), rows sorted,
    OS-random columns masked."""
    if is_server_url(db):
        return _server_read_models(str(db))
    conn = sqlite3.connect(db)
    try:
        names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        return {n: _rows(conn, n) for (n,) in names.fetchall() if n not in STORE_TABLES}
    finally:
        conn.close()


def _server_read_models(url: str) -> Tables:
    import psycopg

    with psycopg.connect(url) as conn:
        names = conn.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() ORDER BY table_name"
        ).fetchall()
        skip = STORE_TABLES | {"log_head"}
        return {n: _rows(conn, n) for (n,) in names if n not in skip}


def _rows(conn: Any, table: str) -> list[dict[str, Any]]:
    cursor = conn.execute(f"SELECT * FROM {table}")
    columns = [c[0] for c in cursor.description]
    masked = RANDOM_COLUMNS.get(table, ())
    rows = []
    for values in cursor:
        row = dict(zip(columns, values, strict=True))
        for name in masked:
            if row[name] is not None:
                row[name] = MASK
        rows.append(row)
    return sorted(rows, key=lambda r: json.dumps(list(r.values())))


def write(golden: Golden, where: Path = FIXTURES) -> None:
    where.mkdir(parents=True, exist_ok=True)
    (where / "log_hash.txt").write_text(golden.log_hash + "\n")
    lines = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in golden.events)
    (where / "events.jsonl").write_text(lines)
    tables = json.dumps(golden.tables, indent=1, ensure_ascii=False, sort_keys=True)
    (where / "tables.json").write_text(tables + "\n")


def load(where: Path = FIXTURES) -> Golden:
    lines = (where / "events.jsonl").read_text().splitlines()
    tables = json.loads((where / "tables.json").read_text())
    return Golden(
        (where / "log_hash.txt").read_text().strip(), [json.loads(x) for x in lines], tables
    )


def differences(expected: Golden, actual: Golden, most: int = 3) -> list[str]:
    """What differs, readably: the hash, the first `most` events that differ (their data
    and meta decoded), then the rows of each table that differ."""
    found: list[str] = []
    if expected.log_hash != actual.log_hash:
        found.append(f"log hash {actual.log_hash}, expected {expected.log_hash}")
    if len(expected.events) != len(actual.events):
        found.append(f"{len(actual.events)} events, expected {len(expected.events)}")
    differing = [
        i
        for i in range(max(len(expected.events), len(actual.events)))
        if _event(expected, i) != _event(actual, i)
    ]
    for i in differing[:most]:
        want, got = _readable(_event(expected, i)), _readable(_event(actual, i))
        found.append(f"event {i + 1}:\n" + _diff(want, got))
    if len(differing) > most:
        found.append(f"... and {len(differing) - most} more events differ")
    moments = [*expected.tables, *(m for m in actual.tables if m not in expected.tables)]
    for moment in sorted(moments, key=lambda m: MOMENTS.index(m) if m in MOMENTS else 99):
        want_tables = expected.tables.get(moment, {})
        got_tables = actual.tables.get(moment, {})
        for table in sorted(set(want_tables) | set(got_tables)):
            want_rows, got_rows = want_tables.get(table), got_tables.get(table)
            if want_rows is None or got_rows is None:
                side = "run" if want_rows is None else "fixture"
                found.append(f"{moment}: table {table} only in the {side}")
            elif want_rows != got_rows:
                found.append(f"{moment}: table {table}:\n" + _rows_diff(want_rows, got_rows))
    return found


def _event(golden: Golden, index: int) -> list[Any] | None:
    return golden.events[index] if index < len(golden.events) else None


def _readable(event: list[Any] | None) -> Any:
    if event is None:
        return None
    names = ("position", "stream", "version", "type", "schema", "data", "meta", "occurred_at")
    shown = dict(zip(names, event, strict=True))
    for name in ("data", "meta"):
        if isinstance(shown[name], str):
            shown[name] = json.loads(shown[name])
    return shown


def _rows_diff(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> str:
    """The rows only one side has, bodies decoded; rows both have are left out."""
    key = json.dumps
    want_keys = {key(r) for r in want}
    got_keys = {key(r) for r in got}
    missing = [r for r in want if key(r) not in got_keys]
    extra = [r for r in got if key(r) not in want_keys]
    return _diff([_decoded(r) for r in missing], [_decoded(r) for r in extra])


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    if isinstance(out.get("body"), str):
        out["body"] = json.loads(out["body"])
    return out


def _diff(want: Any, got: Any, most: int = 80) -> str:
    a = json.dumps(want, indent=1, sort_keys=True).splitlines()
    b = json.dumps(got, indent=1, sort_keys=True).splitlines()
    lines = list(difflib.unified_diff(a, b, "fixture", "run", lineterm="", n=2))
    return "\n".join(lines[:most] + (["..."] if len(lines) > most else []))
