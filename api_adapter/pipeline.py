"""The request pipeline: the gates a request of an operation passes before its work, run
once per request, by the fast lane or by the operation's FastAPI route, whichever serves
it first.

Each gate reads the operation's row (api_adapter/operations.py) and refuses by raising
what `problems.render` answers: the rate limit (a 429 with `Retry-After`), then the
bearer token (401) and its scope (403). The request's `Passage` (its operation and
caller) is kept in its ASGI state, so a request the lane hands on to the app (a body
its model refuses, an answer only the route shapes) is neither charged nor checked
twice; the route's `Caller` dependency reads the caller from it, and the request log
(`recent_requests`) its operation and caller. The gates that come after the caller is
known are the app's `state.gates`, each called with the request's scope and passage:
the fault gate (sandex.api_adapter.faults) by default.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Request, Security

from sandex.api_adapter.auth import Principal, oauth2_scheme, principal_of
from sandex.api_adapter.operations import Operation, operation
from sandex.api_adapter.problems import AuthError
from sandex.api_adapter.response_shapes import ok

# The ASGI state key of a request's Passage.
PASSED = "sandex.passage"
# The ASGI state key of what the fault gate fired on a request (sandex.api_adapter.faults), which
# the request log shows: {"rule_id", "template", "when", "action"}.
FIRED = "sandex.fault"
# The ASGI state key of a request's operation, known before any gate may refuse it (the
# request log names the operation of a refused request too).
OPERATION = "sandex.operation"


@dataclass(frozen=True, slots=True)
class Passage:
    """What the gates learnt of a request: its operation and its caller (None when the
    operation asks for no token)."""

    operation: Operation
    principal: Principal | None


# A gate after the caller is known: it refuses a request by raising (problems.REFUSALS),
# and answers None, or what to await first when it has work to wait for (the fault
# gate's decision): a gate with nothing to do costs no coroutine.
Gate = Callable[[MutableMapping[str, Any], Passage], Awaitable[None] | None]


def rate_limit(app_state: Any, scope: MutableMapping[str, Any], op: Operation) -> None:
    """Charge the request to its address's budget for the operation's family."""
    limiter = app_state.limiter
    if limiter is not None:
        limiter.admit(scope, op.id, op.method)


def bearer(
    app_state: Any, scope: MutableMapping[str, Any], op: Operation, authorization: str | None
) -> Principal | None:
    """The caller of an operation that asks for a token holding its scope."""
    if op.scope is None:
        return None
    principal = principal_of(app_state.tokens, app_state.clients, authorization)
    if op.scope not in principal.scopes:
        raise AuthError(
            403,
            f"insufficient scope: this operation requires {op.scope}",
            meta={"required_scope": op.scope},
        )
    scope["state"]["client_id"] = principal.client_id
    return principal


async def run_gates(
    app_state: Any, scope: MutableMapping[str, Any], op: Operation, authorization: str | None
) -> Passage:
    """The request's passage through the gates, or the refusal of the first that refuses
    it. A request that passed already is not charged or checked again."""
    state = scope.setdefault("state", {})
    passed: Passage | None = state.get(PASSED)
    if passed is not None:
        return passed
    state[OPERATION] = op
    rate_limit(app_state, scope, op)
    passage = state[PASSED] = Passage(op, bearer(app_state, scope, op, authorization))
    for gate in app_state.gates:
        waiting = gate(scope, passage)
        if waiting is not None:
            await waiting
    return passage


def authorization_of(scope: MutableMapping[str, Any]) -> str | None:
    """The request's Authorization header, as the route's OAuth2 scheme reads it."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            return str(value.decode("latin-1"))
    return None


def _gate(op: Operation) -> Callable[..., Any]:
    """The route's dependency that runs the gates; an operation with a scope declares it
    through the OAuth2 scheme, which is what the OpenAPI document states."""
    if op.scope is None:

        async def open_gate(request: Request) -> None:
            await run_gates(request.app.state, request.scope, op, None)

        return open_gate

    async def gate(
        request: Request,
        authorization: str | None = Security(oauth2_scheme, scopes=[op.scope]),
    ) -> None:
        await run_gates(request.app.state, request.scope, op, authorization)

    return gate


async def caller(request: Request) -> Principal:
    """The caller the gates admitted (a route's `Caller` parameter)."""
    principal = passage_of(request).principal
    if principal is None:  # a route that asks for a caller its row does not check
        raise AssertionError(f"{request.scope['route'].operation_id} has no scope in its row")
    return principal


def passage_of(request: Request) -> Passage:
    passage: Passage = request.scope["state"][PASSED]
    return passage


Caller = Annotated[Principal, Depends(caller)]

Handler = TypeVar("Handler", bound=Callable[..., Any])


# Each operation's documented answers' models, by operation id and status: kept out of
# FastAPI's `responses` so that no route builds their schemas when the app is assembled
# (every world's app, at every start); `openapi.install` hands them to the routes when
# the document is first asked for.
ANSWER_MODELS: dict[tuple[str, int | str], type[Any]] = {}


def route(router: APIRouter, operation_id: str, **options: Any) -> Callable[[Handler], Handler]:
    """The decorator of an operation's handler: its method, path, operation id and answer
    from its row, and the gates first. `options` go to FastAPI (tags, summary, responses
    besides the answer's)."""
    op = operation(operation_id)
    responses: dict[int | str, dict[str, Any]] = ok(op.answer) if op.answer is not None else {}
    for status, described in options.pop("responses", {}).items():
        responses[status] = {**responses.get(status, {}), **described}
    for status, described in responses.items():
        if "model" in described:
            ANSWER_MODELS[op.id, status] = described.pop("model")
    decorate: Callable[[Handler], Handler] = router.api_route(
        op.under(router.prefix),
        methods=[op.method],
        operation_id=op.id,
        responses=responses or None,
        dependencies=[Depends(_gate(op))],
        **options,
    )
    return decorate
