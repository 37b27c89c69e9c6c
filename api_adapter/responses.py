"""Responses encoded with orjson; problem details with their own media type."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from sandex.api_adapter.problem_types import problem_body


class JSONResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


async def send_json(send: Send, content: Any) -> None:
    """What `JSONResponse(content)` sends (200, the same two headers and bytes), without
    building the response object: the fast lane's answer."""
    body = orjson.dumps(content)
    headers = [(b"content-length", b"%d" % len(body)), (b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


# The ASGI state key of the type of the problem a request was answered with (the
# request log shows it without reading the answer's body).
PROBLEM_TYPE = "sandex.problem_type"


class ProblemResponse(Response):
    media_type = "application/problem+json"
    problem_type = "about:blank"

    def render(self, content: Any) -> bytes:
        if isinstance(content, dict):
            self.problem_type = content.get("type", "about:blank")
        return orjson.dumps(content)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope.setdefault("state", {})[PROBLEM_TYPE] = self.problem_type
        await super().__call__(scope, receive, send)


def problem(
    status: int,
    detail: str,
    *,
    type_uri: str = "about:blank",
    title: str | None = None,
    meta: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> ProblemResponse:
    body = problem_body(status, detail, type_uri=type_uri, title=title, meta=meta)
    return ProblemResponse(body, status_code=status, headers=headers)
