"""Every line logged while a request is served names its request id, the access line too,
and no line logged after it does (api_adapter/logging.py)."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import pytest
import structlog

from sandex.api_adapter.logging import RequestLog, configure

log = structlog.get_logger("sandex.test")


async def _app(scope: Any, receive: Any, send: Any) -> None:
    log.warning("inside", n=1)
    await asyncio.sleep(0)  # another request's turn: it must not see this one's id
    log.warning("inside", n=2)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _request(request_id: str) -> dict[str, Any]:
    headers = [(b"x-request-id", request_id.encode())] if request_id else []
    return {"type": "http", "method": "GET", "path": "/x", "headers": headers}


def test_each_line_of_a_request_names_its_own_request_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written = io.StringIO()
    monkeypatch.setattr("sys.stderr", written)
    configure(json_lines=True, level="INFO")
    # no logger keeps this test's stream once it is over
    structlog.configure(cache_logger_on_first_use=False)
    app = RequestLog(_app)

    async def noop(message: Any) -> None:
        pass

    async def run() -> None:
        await asyncio.gather(
            app(_request("req-a"), noop, noop),  # type: ignore[arg-type]
            app(_request("req-b"), noop, noop),  # type: ignore[arg-type]
            app(_request(""), noop, noop),  # type: ignore[arg-type]
        )
        log.warning("after")

    try:
        asyncio.run(run())
    finally:
        structlog.reset_defaults()
    lines = [json.loads(line) for line in written.getvalue().splitlines()]
    inside = [line for line in lines if line["event"] in ("inside", "request")]
    assert len(inside) == 9
    by_id: dict[str, int] = {}
    for line in inside:
        by_id[line["request_id"]] = by_id.get(line["request_id"], 0) + 1
    assert by_id.pop("req-a") == 3 and by_id.pop("req-b") == 3
    [(fresh, count)] = by_id.items()
    assert count == 3 and len(fresh) == 32
    [after] = [line for line in lines if line["event"] == "after"]
    assert "request_id" not in after
