"""Typed problem errors: one class per problem type of sandex's problem+json, each met
through the client where sandex answers it."""

from __future__ import annotations

from typing import Any

import pytest

from sandex.api_adapter import problem_types
from sandex.client import (
    BY_STATUS,
    BY_TYPE,
    NO_RETRIES,
    AlreadyExistsError,
    BadGatewayError,
    BadRequestError,
    Client,
    ConflictError,
    ExceedMaxWithdrawLimitError,
    ExceedPrecisionError,
    ExpiredError,
    ForbiddenError,
    GatewayTimeoutError,
    InsufficientFundsError,
    InternalServerError,
    NotFoundError,
    ProblemError,
    RejectedError,
    ServiceUnavailableError,
    TooManyRequestsError,
    UnauthorizedError,
)
from tests.client.test_client_ops import withdraw


def test_the_clients_table_is_the_servers_problem_types() -> None:
    """The client cannot import the server's table: this holds its own equal to it."""
    served = {
        problem_types.PROBLEM_BASE + slug: (status, title)
        for status, slug, title in problem_types.DOMAIN_PROBLEMS.values()
        if slug
    }
    assert {t: (c.status_code, c.slug) for t, c in BY_TYPE.items()} == {
        t: (status, t.rsplit("/", 1)[1]) for t, (status, _) in served.items()
    }
    assert set(BY_STATUS) == set(problem_types._TITLES)
    for status, cls in BY_STATUS.items():
        assert cls.__name__.removesuffix("Error") in problem_types._TITLES[status].replace(" ", "")
    for cls in BY_TYPE.values():  # a typed problem is caught as its status's too
        assert issubclass(cls, BY_STATUS[cls.status_code or 0])


def test_a_refused_call_raises_its_problems_class(world: Client, front: Any) -> None:
    with pytest.raises(NotFoundError) as missing:
        world.release_order("018cc251-f400-7000-8000-000000000000")
    assert missing.value.status == 404 and missing.value.type == "about:blank"
    with pytest.raises(BadRequestError) as wrong:
        world.arm_fault({"operation": "NoSuchOperation"}, {"problem": {"status": 503}})
    assert wrong.value.meta["field"] == "match.operation"
    with pytest.raises(UnauthorizedError):
        Client(
            world.base_url, world.token_url, world.client_id, "wrong", http=front.http
        ).get_pacing()
    tenant = world.create_customer()
    with pytest.raises(ForbiddenError):  # pacing is the world's: its bootstrap client's
        Client(
            world.base_url, world.token_url, tenant.client_id, tenant.client_secret, http=front.http
        ).set_pacing(withdrawal={"mode": "manually"})

    for template, error in [
        ("conflict", ConflictError),
        ("server-error", InternalServerError),
        ("bad-gateway", BadGatewayError),
        ("unavailable", ServiceUnavailableError),
        ("timeout", GatewayTimeoutError),
        ("rate-limited", TooManyRequestsError),
    ]:
        quiet = world.with_fault(template)
        quiet.retries = NO_RETRIES
        with pytest.raises(error) as raised:
            quiet.get_clock()
        assert raised.value.meta["sandbox_fault"], raised.value.problem


def test_the_domains_problem_types_raise_theirs(world: Client) -> None:
    with pytest.raises(InsufficientFundsError) as poor:
        withdraw(world)
    assert isinstance(poor.value, ForbiddenError) and poor.value.status == 403
    world.deposit("BTC", "1", crypto_network="BITCOIN")
    with pytest.raises(ExceedMaxWithdrawLimitError):
        withdraw(world, amount="0.01")
    with pytest.raises(ExceedPrecisionError):
        withdraw(world, amount="0.0000000000001")
    withdraw(world, ref_id="mine")
    with pytest.raises(AlreadyExistsError) as again:  # the caller's own repeat: no retry hides it
        withdraw(world, ref_id="mine")
    assert again.value.meta["existing"]["id"]

    world.deposit("USD", "10000")
    (buy,) = [q for q in world.request("GET", "/quotes")["items"] if q["side"] == "BUY"][:1]
    execution = "/profiles/default/quote-executions"
    world.request("POST", execution, json={"quote_id": buy["id"], "quote_amount": "10"})
    with pytest.raises(RejectedError):
        world.request("POST", execution, json={"quote_id": buy["id"], "quote_amount": "10"})
    world.advance_clock(3600)
    with pytest.raises(ExpiredError):
        world.request("POST", execution, json={"quote_id": buy["id"], "quote_amount": "10"})


def test_an_unknown_problem_type_is_still_a_problem_error(world: Client) -> None:
    world.arm_fault(
        {"operation": "GetSandboxPacing"},
        {"problem": {"status": 418, "type": "https://example.com/teapot"}},
    )
    with pytest.raises(ProblemError) as raised:
        world.get_pacing()
    assert type(raised.value) is ProblemError
    assert (raised.value.status, raised.value.type) == (418, "https://example.com/teapot")
