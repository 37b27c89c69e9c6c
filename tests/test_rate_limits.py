"""Rate limits per client and endpoint: 50/s by default, 20/s for crypto withdrawals and
internal transfers, 10/s for the order book and recent executions, 1/s for tokens.

The limiter's clock is replaced by one the test moves, so every figure is exact."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api_adapter.cli import _settings, parser
from api_adapter.ratelimit import RateLimiter

FORM = {"grant_type": "client_credentials", "client_id": "sandex", "client_secret": "sandex-secret"}
ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"


class FakeClock:
    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def limited(sandbox_factory: Any) -> tuple[Any, FakeClock]:
    sb = sandbox_factory(rate_limits_enabled=True)
    clock = FakeClock()
    sb.app.state.limiter.clock = clock
    return sb, clock


def assert_429(r: Any, operation: str, rate: int) -> None:
    assert r.status_code == 429, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert int(r.headers["retry-after"]) >= 1
    body = r.json()
    assert body["status"] == 429 and body["title"] == "Too Many Requests"
    assert f"at most {rate} requests per second to {operation}" in body["detail"]


def burst(call: Any, n: int) -> list[int]:
    return [call().status_code for _ in range(n)]


def test_a_bucket_holds_one_second_and_refills_continuously() -> None:
    clock = FakeClock()
    limiter = RateLimiter(clock=clock)
    assert [limiter.wait("c", "ListProfiles") for _ in range(50)] == [0.0] * 50
    assert limiter.wait("c", "ListProfiles") == pytest.approx(0.02)
    assert limiter.wait("other", "ListProfiles") == 0.0  # per client
    assert limiter.wait("c", "GetProfile") == 0.0  # per endpoint
    clock.now += 0.021
    assert limiter.wait("c", "ListProfiles") == 0.0
    assert limiter.wait("c", "ListProfiles") > 0
    clock.now += 10  # idle time does not build a burst beyond one second
    assert sum(limiter.wait("c", "ListProfiles") == 0 for _ in range(60)) == 50


def test_the_rates_are_the_reference_figures_and_configurable() -> None:
    limiter = RateLimiter()
    assert limiter.rate("ListProfiles") == 50
    assert limiter.rate("CreateCryptoWithdrawal") == 20
    assert limiter.rate("CreateInternalTransfer") == 20
    assert limiter.rate("GetOrderBook") == 10
    assert limiter.rate("ListRecentExecutions") == 10
    assert limiter.rate("IssueToken") == 1
    tuned = RateLimiter({"default": 5, "GetOrderBook": 100})
    assert tuned.rate("ListProfiles") == 5 and tuned.rate("GetOrderBook") == 100
    assert tuned.rate("CreateCryptoWithdrawal") == 20


def test_default_limit_is_50_per_client_and_endpoint(limited: Any) -> None:
    sb, clock = limited
    codes = burst(lambda: sb.get("/v2/profiles"), 51)
    assert codes[:50] == [200] * 50
    assert_429(sb.get("/v2/profiles"), "ListProfiles", 50)
    assert sb.get("/v2/profiles/default").status_code == 200  # another endpoint
    other, _ = sb.tenant()
    assert sb.get("/v2/profiles", headers=other).status_code == 200  # another client
    clock.now += 1
    assert sb.get("/v2/profiles").status_code == 200


def test_crypto_withdrawals_are_limited_to_20_per_second(limited: Any) -> None:
    sb, clock = limited
    sb.deposit("BTC", "1")
    body = {
        "profile_id": "default",
        "asset": "BTC",
        "crypto_network": "BITCOIN",
        "destination_address": ADDRESS,
        "amount": "0.0001",
    }
    codes = burst(lambda: sb.post("/v2/transfer/crypto-withdrawals", body), 20)
    assert codes == [200] * 20
    assert_429(sb.post("/v2/transfer/crypto-withdrawals", body), "CreateCryptoWithdrawal", 20)
    transfers = sb.get("/v2/transfer/transfers", params={"type": "CRYPTO_WITHDRAWAL"}).json()
    assert len(transfers["items"]) == 20  # the refused request did nothing
    clock.now += 0.06
    assert sb.post("/v2/transfer/crypto-withdrawals", body).status_code == 200


def test_internal_transfers_are_limited_to_20_per_second(limited: Any) -> None:
    sb, _ = limited
    sb.deposit("BTC", "1")
    desk = sb.post("/v2/profiles", {"nickname": "desk"}).json()["id"]
    body = {"from_profile_id": "default", "to_profile_id": desk, "asset": "BTC", "amount": "0.01"}
    assert burst(lambda: sb.post("/v2/transfer/internal", body), 20) == [200] * 20
    assert_429(sb.post("/v2/transfer/internal", body), "CreateInternalTransfer", 20)
    assert sb.balance("BTC", desk)["available"] == "0.2"


@pytest.mark.parametrize(
    ("path", "operation"),
    [
        ("/v2/markets/BTCUSD/order-book", "GetOrderBook"),
        ("/v2/markets/BTCUSD/recent-executions", "ListRecentExecutions"),
    ],
)
def test_market_data_is_limited_to_10_per_second(limited: Any, path: str, operation: str) -> None:
    sb, _ = limited
    assert burst(lambda: sb.get(path), 10) == [200] * 10
    assert_429(sb.get(path), operation, 10)
    assert sb.get("/v2/markets/BTCUSD/ticker").status_code == 200


def test_the_token_endpoint_takes_one_request_per_second_per_client(limited: Any) -> None:
    sb, clock = limited
    _, creds = sb.tenant()
    clock.now += 1
    assert sb.http.post("/oauth2/token", data=FORM).status_code == 200
    assert_429(sb.http.post("/oauth2/token", data=FORM), "IssueToken", 1)
    other = {**FORM, "client_id": creds["client_id"], "client_secret": creds["client_secret"]}
    assert sb.http.post("/oauth2/token", data=other).status_code == 200  # per client
    clock.now += 1
    assert sb.http.post("/oauth2/token", data=FORM).status_code == 200


def test_wrong_secrets_naming_a_client_are_charged_to_their_address(limited: Any) -> None:
    """Two wrong secrets a second naming `sandex` made 7 of 8 of the real client's token
    requests answer 429. Failures are now the address's: the flooder is throttled (before
    the slow secret check), the client's own requests from elsewhere all succeed."""
    sb, clock = limited
    flooder = TestClient(sb.app, client=("203.0.113.66", 40000), raise_server_exceptions=False)
    wrong = {**FORM, "client_secret": "a guess"}
    real, flood = [], []
    for _ in range(8):
        clock.now += 1
        flood += [flooder.post("/oauth2/token", data=wrong) for _ in range(2)]
        real.append(sb.http.post("/oauth2/token", data=FORM).status_code)
    assert real == [200] * 8
    assert [r.status_code for r in flood] == [401, 429] * 8
    assert_429(flood[1], "IssueToken", 1)
    assert "per address" in flood[1].json()["detail"]
    # The address is throttled whatever it sends, a right secret too, until it refills.
    assert_429(flooder.post("/oauth2/token", data=FORM), "IssueToken", 1)
    clock.now += 1
    assert flooder.post("/oauth2/token", data=FORM).status_code == 200


def test_a_forged_token_does_not_spend_the_named_clients_allowance(limited: Any) -> None:
    sb, _ = limited
    token = sb.headers["Authorization"].split()[1]
    prefix, payload, _ = token.split(".")
    forged = {"Authorization": f"Bearer {prefix}.{payload}.AAAA"}
    assert set(burst(lambda: sb.get("/v2/profiles", headers=forged), 60)) == {401, 429}
    assert sb.get("/v2/profiles").status_code == 200


def test_limits_are_configured_by_operation(sandbox_factory: Any) -> None:
    sb = sandbox_factory(rate_limits_enabled=True, rate_limits={"default": 3, "GetProfile": 1})
    sb.app.state.limiter.clock = FakeClock()
    assert burst(lambda: sb.get("/v2/profiles"), 4) == [200, 200, 200, 429]
    assert burst(lambda: sb.get("/v2/profiles/default"), 2) == [200, 429]


def test_no_rate_limits_is_a_serve_flag_and_the_suite_default(sandbox: Any) -> None:
    assert _settings(parser().parse_args(["serve"])).rate_limits_enabled  # type: ignore[attr-defined]
    off = _settings(parser().parse_args(["serve", "--no-rate-limits"]))
    assert off.rate_limits_enabled is False  # type: ignore[attr-defined]
    assert sandbox.app.state.limiter is None
    assert set(burst(lambda: sandbox.get("/v2/profiles"), 120)) == {200}
