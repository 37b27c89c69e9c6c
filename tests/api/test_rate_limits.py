"""Rate limits as the real service states them: per endpoint family and client address,
an average over five minutes, and five minutes of 429 once over.

The limiter's clock is replaced by one the test moves, so every figure is exact."""

from __future__ import annotations

import functools
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sandex.api_adapter.cli.parser import parser
from sandex.api_adapter.cli.serve import serve_settings
from sandex.api_adapter.rate_limits import RateLimiter, address_of
from sandex.api_adapter.routes import token as token_endpoint

FORM = {"grant_type": "client_credentials", "client_id": "sandex", "client_secret": "sandex-secret"}
WRONG = {**FORM, "client_secret": "a guess"}
ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
FLOODER = ("203.0.113.66", 40000)
ELSEWHERE = ("198.51.100.7", 40000)


class FakeClock:
    def __init__(self) -> None:
        self.now = time.monotonic()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def limited(sandbox_factory: Any, clock: FakeClock) -> Any:
    sb = sandbox_factory(rate_limits_enabled=True)
    clock.now = time.monotonic()  # the start-up login's time, as near as can be
    sb.app.state.limiter.clock = clock
    return sb


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The token endpoint's secret checks, by client id; each is the real check, done
    once per distinct secret (PBKDF2 is deliberately slow, and these tests log in
    hundreds of times)."""
    checked: list[str] = []
    real = functools.cache(token_endpoint.secret_matches)

    class Counted(token_endpoint.VerifiedSecrets):
        """Every check the endpoint asks for, none remembered (a secret checked right
        once is remembered by the process's VERIFIED, which these tests count past)."""

        def matches(self, secret: str, salt: str, expected_hash: str) -> bool:
            checked.append(secret)
            return real(secret, salt, expected_hash)

    monkeypatch.setattr(token_endpoint, "VERIFIED", Counted())
    return checked


def assert_429(r: Any, what: str, retry_after: int = 300) -> None:
    assert r.status_code == 429, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.headers["retry-after"] == str(retry_after)
    assert r.headers["ratelimit-remaining"] == "0"
    body = r.json()
    assert body["status"] == 429 and body["title"] == "Too Many Requests"
    assert what in body["detail"], body["detail"]


def statuses(call: Any, n: int) -> list[int]:
    return [call().status_code for _ in range(n)]


# -- the limiter --------------------------------------------------------------------


def test_a_family_admits_its_five_minute_budget_at_once_then_throttles_for_five_minutes(
    clock: FakeClock,
) -> None:
    limiter = RateLimiter(clock=clock)
    token = limiter.family("token")
    answers = [limiter.take("a", token) for _ in range(301)]
    assert [v.retry_after for v in answers[:300]] == [0.0] * 300  # 1/s × 300 s
    assert [v.remaining for v in answers[:300]] == list(range(299, -1, -1))
    assert answers[299].reset == pytest.approx(300)  # the budget is whole in 300 s
    assert answers[300].retry_after == 300  # over: throttled for five minutes
    clock.now += 299.5  # every request of the penalty is refused, none extends it
    assert limiter.take("a", token).retry_after == pytest.approx(0.5)
    assert limiter.take("b", token).retry_after == 0  # another address
    clock.now += 0.5  # the penalty is over, and the budget has refilled meanwhile
    assert [limiter.take("a", token).retry_after for _ in range(300)] == [0.0] * 300


def test_the_long_run_average_is_the_rate(clock: FakeClock) -> None:
    limiter = RateLimiter(clock=clock)
    token = limiter.family("token")
    assert all(limiter.take("a", token).retry_after == 0 for _ in range(300))
    for _ in range(3600):  # after the burst, one a second holds for ever
        clock.now += 1
        assert limiter.take("a", token).retry_after == 0
    # 10% over the rate from a whole budget: the first request takes 1 s of the 300,
    # each later one 1 - 1/1.1 s more, so 1 + 299 × 11 are admitted
    clock.now += 300
    admitted = 0
    while limiter.take("b", token).retry_after == 0:
        admitted += 1
        clock.now += 1 / 1.1
    assert admitted == 1 + 299 * 11


def test_operations_share_their_familys_budget_and_addresses_do_not(clock: FakeClock) -> None:
    limiter = RateLimiter(clock=clock)
    families = {
        ("IssueToken", "POST"): "token",
        ("CreateOrder", "POST"): "orders",
        ("CancelOrder", "DELETE"): "orders",
        ("CreateCryptoWithdrawal", "POST"): "transfers",
        ("CreateInternalTransfer", "POST"): "transfers",
        ("GetOrderBook", "GET"): "market-data",
        ("ListRecentExecutions", "GET"): "market-data",
        ("GetTicker", "GET"): "reads",
        ("ListProfiles", "GET"): "reads",
        ("CreateProfile", "POST"): "writes",
        ("CreateSandboxDeposit", "POST"): "writes",
    }
    assert {k: limiter.family_of(*k).name for k in families} == families
    book = limiter.family_of("GetOrderBook")
    assert all(limiter.take("a", book).retry_after == 0 for _ in range(3000))  # 10/s × 300
    recent = limiter.family_of("ListRecentExecutions")
    assert limiter.take("a", recent).retry_after == 300  # the family's budget is spent
    assert limiter.take("b", recent).retry_after == 0  # per address
    assert limiter.take("a", limiter.family_of("GetTicker")).retry_after == 0  # per family
    assert limiter.take("a", limiter.family("token")).retry_after == 0


def test_the_rates_are_the_real_figures_and_configurable() -> None:
    limiter = RateLimiter()
    assert limiter.rate("ListProfiles") == 50 and limiter.rate("CreateProfile", "POST") == 50
    assert limiter.rate("CreateOrder", "POST") == 50
    assert limiter.rate("CreateCryptoWithdrawal", "POST") == 20
    assert limiter.rate("CreateInternalTransfer", "POST") == 20
    assert limiter.rate("GetOrderBook") == 10 and limiter.rate("ListRecentExecutions") == 10
    assert limiter.rate("IssueToken", "POST") == 1
    assert limiter.family("token-failures").rate == 0.1
    assert limiter.family("transfers").budget == 6000
    tuned = RateLimiter({"default": 5, "GetOrderBook": 100, "token": 2, "token-failures": 1})
    assert tuned.rate("ListProfiles") == 5 and tuned.rate("CreateOrder", "POST") == 5
    assert tuned.family_of("GetOrderBook").name == "GetOrderBook"  # a budget of its own
    assert tuned.rate("GetOrderBook") == 100 and tuned.rate("ListRecentExecutions") == 10
    assert tuned.rate("IssueToken", "POST") == 2 and tuned.family("token-failures").rate == 1
    assert tuned.rate("CreateCryptoWithdrawal", "POST") == 20


def test_many_addresses_do_not_grow_memory_without_bound(clock: FakeClock) -> None:
    limiter = RateLimiter(clock=clock, prune_at=1000)
    token, reads = limiter.family("token"), limiter.family("reads")
    throttled = "192.0.2.1"
    while limiter.take(throttled, token).retry_after == 0:
        pass
    largest = 0
    for n in range(200_000):  # 1,000 new addresses a second, each with one request
        clock.now += 0.001
        limiter.take(f"10.{n >> 16}.{n >> 8 & 255}.{n & 255}", token if n % 2 else reads)
        largest = max(largest, len(limiter))
    # live entries: the addresses of the last second (a token refills in 1 s), and the
    # throttled one; the table is pruned whenever it reaches twice that
    assert largest <= 2 * 1000 + 2
    assert len(limiter) < 2000
    # the throttled address kept its penalty through every pruning
    assert limiter.take(throttled, token).retry_after == pytest.approx(100, abs=0.01)
    clock.now += 300
    limiter.take("203.0.113.1", token)
    assert limiter.throttled(throttled, token) is None


def test_an_address_is_an_ip_and_an_ipv6_address_its_64() -> None:
    def of(host: str) -> str:
        return address_of({"client": (host, 1234)})

    assert of("203.0.113.5") == "203.0.113.5" == of("::ffff:203.0.113.5")
    assert of("2001:db8::1") == of("2001:db8::ffff:1") == "2001:db8::/64"
    assert of("2001:db8:0:1::1") != of("2001:db8::1")
    assert address_of({"client": None}) == "unknown"


# -- over HTTP ----------------------------------------------------------------------


def test_logins_back_to_back_pass_up_to_the_five_minute_budget(
    limited: Any, clock: FakeClock, hashes: list[str]
) -> None:
    """A test suite logging in several times a second passes on the real service; it
    used to meet a 429 here on the second login within a second."""
    sb = limited
    answers = [sb.http.post("/oauth2/token", data=FORM) for _ in range(299)]  # 1 at start-up
    assert [r.status_code for r in answers] == [200] * 299
    assert answers[0].headers["ratelimit-limit"] == "300"
    assert answers[0].headers["ratelimit-policy"] == "300;w=300"
    assert [int(r.headers["ratelimit-remaining"]) for r in answers[-3:]] == [2, 1, 0]
    assert_429(sb.http.post("/oauth2/token", data=FORM), "token requests average at most 1 per")
    clock.now += 120  # throttled for five minutes, whatever is sent
    assert_429(sb.http.post("/oauth2/token", data=FORM), "refused token requests", 180)
    assert sb.get("/v2/profiles").status_code == 200  # another family
    elsewhere = TestClient(sb.app, client=ELSEWHERE)
    assert elsewhere.post("/oauth2/token", data=FORM).status_code == 200  # another address
    clock.now += 180
    assert sb.http.post("/oauth2/token", data=FORM).status_code == 200
    assert len(hashes) == 301  # no secret check for a refused request


def test_wrong_secrets_naming_a_client_throttle_their_own_address_only(
    limited: Any, clock: FakeClock, hashes: list[str]
) -> None:
    """A flood of wrong secrets naming `sandex` from one address: that address gets 30
    failures (0.1/s over five minutes), then 429 for five minutes, checked before the
    slow secret check; `sandex` logging in from its own address never notices."""
    sb = limited
    flooder = TestClient(sb.app, client=FLOODER)
    flood, real = [], []
    for _ in range(50):
        clock.now += 0.5
        flood += [flooder.post("/oauth2/token", data=WRONG) for _ in range(2)]
        real.append(sb.http.post("/oauth2/token", data=FORM))
    assert [r.status_code for r in flood] == [401] * 30 + [429] * 70
    assert_429(flood[30], "failed token requests average at most 0.1 per second")
    assert_429(flood[31], "refused token requests", 300)
    assert [r.status_code for r in real] == [200] * 50
    # the real client's token budget went down by its own logins only (one at start-up),
    # and refilled for the 25 s the flood took
    assert real[-1].headers["ratelimit-remaining"] == str(300 - 51 + 25)
    assert hashes.count("a guess") == 31  # the flood's refusals cost no secret check
    # The flooding address is refused token requests, a right secret too, for five
    # minutes from its 31st failure (at 8 s), and is not charged for them; nothing else
    # of it is throttled.
    assert_429(flooder.post("/oauth2/token", data=FORM), "refused token requests", 283)
    assert flooder.get("/v2/profiles", headers=sb.headers).status_code == 200
    clock.now += 283
    assert flooder.post("/oauth2/token", data=FORM).status_code == 200
    assert hashes.count("sandex-secret") == 51


def test_logins_do_not_spend_the_failure_budget_of_their_address(
    limited: Any, hashes: list[str]
) -> None:
    sb = limited
    assert statuses(lambda: sb.http.post("/oauth2/token", data=FORM), 100) == [200] * 100
    assert statuses(lambda: sb.http.post("/oauth2/token", data=WRONG), 31) == [401] * 30 + [429]
    assert_429(sb.http.post("/oauth2/token", data=FORM), "refused token requests")


@pytest.fixture
def small(sandbox_factory: Any, clock: FakeClock) -> Any:
    """Budgets of a few requests: market data 3, transfers 6, every other family 15."""
    rates = {"market-data": 3 / 300, "transfers": 6 / 300, "default": 15 / 300}
    sb = sandbox_factory(rate_limits_enabled=True, rate_limits=rates)
    sb.app.state.limiter.clock = clock
    return sb


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("/v2/markets/BTCUSD/order-book", "/v2/markets/BTCUSD/recent-executions"),
        ("/v2/markets/BTCUSD/recent-executions", "/v2/markets/BTCUSD/order-book"),
    ],
)
def test_the_order_book_and_recent_executions_share_a_budget(
    small: Any, first: str, second: str
) -> None:
    sb = small
    answers = [sb.get(first) for _ in range(3)]
    assert [r.status_code for r in answers] == [200] * 3
    assert [r.headers["ratelimit-remaining"] for r in answers] == ["2", "1", "0"]
    assert_429(sb.get(second), "order book and recent executions requests average at most")
    assert sb.get("/v2/markets/BTCUSD/ticker").status_code == 200  # a read of another family


def test_withdrawals_and_internal_transfers_share_a_budget_through_the_fast_lane(
    small: Any, clock: FakeClock
) -> None:
    sb = small
    sb.deposit("BTC", "1")
    desk = sb.post("/v2/profiles", {"nickname": "desk"}).json()["id"]
    withdrawal = {
        "profile_id": "default",
        "asset": "BTC",
        "crypto_network": "BITCOIN",
        "destination_address": ADDRESS,
        "amount": "0.0001",
    }
    internal = {
        "from_profile_id": "default",
        "to_profile_id": desk,
        "asset": "BTC",
        "amount": "0.01",
    }
    answers = [sb.post("/v2/transfer/crypto-withdrawals", withdrawal) for _ in range(3)]
    answers += [sb.post("/v2/transfer/internal", internal) for _ in range(3)]
    assert [r.status_code for r in answers] == [200] * 6
    # the fast lane's answers carry the limit headers as the app's do
    assert [r.headers["ratelimit-remaining"] for r in answers] == ["5", "4", "3", "2", "1", "0"]
    assert_429(sb.post("/v2/transfer/crypto-withdrawals", withdrawal), "crypto withdrawals")
    assert_429(sb.post("/v2/transfer/internal", internal), "crypto withdrawals", 300)
    withdrawals = sb.get("/v2/transfer/transfers", params={"type": "CRYPTO_WITHDRAWAL"}).json()
    assert len(withdrawals["items"]) == 3  # the refused requests did nothing
    assert sb.balance("BTC", desk)["available"] == "0.03"
    clock.now += 300
    assert sb.post("/v2/transfer/crypto-withdrawals", withdrawal).status_code == 200


def test_every_answer_of_an_admitted_request_carries_its_familys_budget(small: Any) -> None:
    sb = small
    r = sb.get("/v2/profiles")
    assert r.headers["ratelimit-limit"] == "15" and r.headers["ratelimit-policy"] == "15;w=300"
    assert r.headers["ratelimit-remaining"] == "14" and r.headers["ratelimit-reset"] == "20"
    assert "retry-after" not in r.headers
    missing = sb.get("/v2/profiles/nope")  # an error answer too
    assert missing.status_code == 404 and missing.headers["ratelimit-remaining"] == "13"
    order = {"side": "BUY", "market": "BTCUSD", "type": "LIMIT", "price": "30000"}
    placed = sb.post("/v2/profiles/default/orders", {**order, "base_amount": "0.001"})
    assert placed.status_code in (200, 403) and placed.headers["ratelimit-remaining"] == "14"


def test_limits_are_configured_by_family_and_operation(
    sandbox_factory: Any, clock: FakeClock
) -> None:
    rates = {"default": 3 / 300, "GetProfile": 1 / 300}
    sb = sandbox_factory(rate_limits_enabled=True, rate_limits=rates)
    sb.app.state.limiter.clock = clock
    assert statuses(lambda: sb.get("/v2/profiles"), 4) == [200, 200, 200, 429]
    # GetProfile has a budget of its own, apart from the reads its family would share
    assert statuses(lambda: sb.get("/v2/profiles/default"), 2) == [200, 429]


def test_no_rate_limits_is_a_serve_flag_and_the_suite_default(sandbox: Any) -> None:
    assert serve_settings(parser().parse_args(["serve"])).rate_limits_enabled  # type: ignore[attr-defined]
    off = serve_settings(parser().parse_args(["serve", "--no-rate-limits"]))
    assert off.rate_limits_enabled is False  # type: ignore[attr-defined]
    assert sandbox.app.state.limiter is None
    assert set(statuses(lambda: sandbox.get("/v2/profiles"), 120)) == {200}
    assert "ratelimit-limit" not in sandbox.get("/v2/profiles").headers
