"""Responses encoded with orjson; problem details with their own media type."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response
from starlette.types import Send

from api_adapter.problem_types import problem_body


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


class ProblemResponse(Response):
    media_type = "application/problem+json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


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
