"""structlog set-up: one JSON line per event in production, a readable console in development.

Every request carries a request id (the client's `X-Request-ID` or a fresh one), bound
to every log line written while it is served and echoed in the response."""

from __future__ import annotations

import logging
import random
import sys
import time
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sandex.api_adapter.writer_bridge import CAUSED
from sandex.engine.kernel.logs import get_logger

if TYPE_CHECKING:
    from sandex.api_adapter.recent_requests import RecentRequests

# The request id of the request being served: a context variable of its own, set per
# request (a task of its own), read by `_add_request_id` into every line logged meanwhile.
# structlog's bind_contextvars/unbind_contextvars did the same at several times the cost.
_REQUEST_ID: ContextVar[str] = ContextVar("sandex_request_id", default="")


def _add_request_id(logger: Any, method_name: str, event_dict: Any) -> Any:
    request_id = _REQUEST_ID.get()
    if request_id:
        event_dict.setdefault("request_id", request_id)
    return event_dict


def configure(json_lines: bool, level: str = "INFO") -> None:
    processors: list[Any] = [
        _add_request_id,
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if json_lines:
        processors += [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    else:
        # Tracebacks without local variables: they hold request headers, bearer tokens
        # and client secrets, which must never reach a log.
        formatter = structlog.dev.RichTracebackFormatter(show_locals=False)
        processors += [structlog.dev.ConsoleRenderer(exception_formatter=formatter)]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )


log = get_logger("sandex.http")

_MAX_REQUEST_ID = 128
# Request ids correlate log lines; they guard nothing, so they come from a seeded PRNG
# rather than uuid4's os.urandom, a system call that hands the GIL to the writer thread
# in the middle of every request.
_ids = random.Random()


def new_request_id() -> str:
    """32 hex digits, the shape of a uuid4's hex."""
    return f"{_ids.getrandbits(128):032x}"


class RequestLog:
    """Pure ASGI middleware: request id in, one access line out, no body buffering.
    Headers that inner layers put in the request's state as `response_headers` (the
    rate limiter's) are added to the answer, whoever renders it. With `recent` (the
    world's `recent_requests.RecentRequests`), each answered request is kept there too,
    with what its commands caused (`writer_bridge.CAUSED`)."""

    def __init__(self, app: ASGIApp, recent: RecentRequests | None = None) -> None:
        self.app = app
        self.recent = recent

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = ""
        for name, value in scope.get("headers", ()):
            if name == b"x-request-id":
                given = value.decode("latin-1")[:_MAX_REQUEST_ID]
                break
        request_id = given or new_request_id()
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        state["client_request_id"] = given
        bound = _REQUEST_ID.set(request_id)
        recent = self.recent
        if recent is not None:
            at = recent.clock.now()
            caused: list[tuple[int, int]] = []
            keeping = CAUSED.set(caused)
        started = time.perf_counter()
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", ()))
                headers.append((b"x-request-id", request_id.encode("latin-1")))
                extra = state.get("response_headers")  # e.g. the rate limit's
                if extra:
                    headers += extra
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            ms = (time.perf_counter() - started) * 1000
            log.info(
                "request",
                method=scope["method"],
                # a world's requests with their /w/{world} prefix (its dispatcher moved
                # it to root_path); the default world's have none
                path=scope.get("root_path", "") + scope["path"],
                status=status,
                ms=round(ms, 2),
                client_id=state.get("client_id"),
            )
            _REQUEST_ID.reset(bound)
            if recent is not None:
                CAUSED.reset(keeping)
                recent.record(scope, state, status, at, ms, caused)
