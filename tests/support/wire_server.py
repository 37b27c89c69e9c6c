"""A uvicorn with `sandex serve`'s connection protocol (`uvicorn_options`) on a loopback
port, serving a test-only app whose `/wire/{kind}` arms that wire fault and answers
(tests/system/test_wire_faults.py). The app is the request log around a handler, behind
sandex's worlds dispatcher: `/w/one/...` reaches the same handler as a world's app, with
the dispatcher's copy of the scope. JSON log lines go to stderr.

Run: `python -m tests.support.wire_server PORT LOOP` (LOOP: uvicorn's `auto`, as `sandex
serve` runs, or `asyncio`)."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs

import orjson
import uvicorn

from sandex.api_adapter.logging import RequestLog, configure
from sandex.api_adapter.server.connections import uvicorn_options
from sandex.api_adapter.wire_faults import KINDS, WireFaults, arm
from sandex.api_adapter.worlds.dispatch import WorldDispatch
from sandex.engine.config.settings import Settings

WORLD = "one"
PAD = 1000  # the answer's body is longer than this


async def handler(scope: Any, receive: Any, send: Any) -> None:
    """`/wire/{kind}?status=N&stream=1`: arm `kind` (anything else: an ordinary answer),
    read a POST's body, then answer `status` (200) with a JSON body, streamed in two chunks with `stream`."""
    kind = scope["path"].rpartition("/")[2]
    query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
    if kind in KINDS:
        arm(scope, kind)
    if scope["method"] == "POST":  # read after arming: a `100 Continue` is still sent
        while (await receive()).get("more_body"):
            pass
    body = orjson.dumps({"kind": kind, "pad": "x" * PAD})
    status = int(query.get("status", 200))
    if query.get("stream"):
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        half = len(body) // 2
        await send({"type": "http.response.body", "body": body[:half], "more_body": True})
        await send({"type": "http.response.body", "body": body[half:]})
        return
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _Worlds:
    """The one other world the dispatcher knows, served by the same handler."""

    def __init__(self, app: Any) -> None:
        self.world = SimpleNamespace(app=app)

    def enter(self, world_id: str, *, feed: bool) -> Any:
        return self.world if world_id == WORLD else None

    def leave(self, world_id: str, served: Any, *, feed: bool) -> None:
        pass

    def is_current(self, world_id: str, served: Any) -> bool:
        return True


class _Default:
    """The default world's app, as WorldDispatch finds it (`state.worlds`)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.state = SimpleNamespace(worlds=_Worlds(app))

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


def main(port: int, loop: str) -> None:
    configure(json_lines=True, level="INFO")
    app = WorldDispatch(_Default(WireFaults(RequestLog(handler))))
    options = {"log_config": None, "access_log": False, **uvicorn_options(Settings())}
    config = uvicorn.Config(app, host="127.0.0.1", port=port, loop=loop, lifespan="off", **options)
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
