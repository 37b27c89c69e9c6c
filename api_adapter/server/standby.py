"""A standby `sandex serve`: while another process holds a PostgreSQL database's writer
lease, this one answers every request 503 (`/healthz` too, with `role: standby`, so a
load balancer sends the traffic to the writer) and tries the lease again every `POLL`
seconds. Once it has the lease it opens the world (its engine from the newest state
snapshot plus the log's tail, the ordinary start-up) and hands it back, to be served on
the same socket: the socket stays open throughout, so a client that connects during the
switch waits in its backlog instead of being refused."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from typing import Any

from sandex.api_adapter.responses import problem
from sandex.engine.kernel.logs import get_logger
from sandex.engine.store import LeaseHeld, StoreUnavailable

log = get_logger("sandex.standby")

# Seconds between two tries of the lease (a part of the failover time).
POLL = 0.2
# Seconds between two tries while the database server cannot be reached.
RETRY = 1.0

_WHY = "this sandex is a standby: another sandex process writes to this database"


async def standby_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Every request: 503 problem+json, `Retry-After: 1`."""
    if scope["type"] != "http":
        return
    meta = {"status": "standby", "role": "standby"}
    detail = _WHY if scope["path"] == "/healthz" else f"{_WHY}; send requests to the writer"
    response = problem(503, detail, meta=meta, headers={"Retry-After": "1"})
    await response(scope, receive, send)


def wait_as_standby(
    listener: socket.socket, open_writer: Callable[[], Any], options: dict[str, Any]
) -> Any | None:
    """Serve `standby_app` on `listener` until `open_writer()` (which raises `LeaseHeld`
    while another writer runs) returns a started world: that world. None when the
    server was stopped first (Ctrl-C, SIGTERM)."""
    import uvicorn

    taken: list[Any] = []
    stop = threading.Event()
    server = uvicorn.Server(uvicorn.Config(standby_app, lifespan="off", **options))

    def take() -> None:
        while not stop.is_set():
            try:
                world = open_writer()
            except LeaseHeld:
                stop.wait(POLL)
                continue
            except StoreUnavailable as exc:
                log.warning("standby cannot reach the database", error=str(exc))
                stop.wait(RETRY)
                continue
            except Exception as exc:  # noqa: BLE001 - a failed start-up: try again
                log.error("standby failed to take over", error=repr(exc))
                stop.wait(RETRY)
                continue
            taken.append(world)
            server.should_exit = True
            return

    thread = threading.Thread(target=take, name="sandex-standby", daemon=True)
    thread.start()
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: stop waiting
        server.run(sockets=[listener.dup()])  # uvicorn closes the socket it was given
    took_over = bool(taken)
    stop.set()
    thread.join()
    if not took_over:
        for world in taken:  # taken while the server was stopping
            world.stop()
        return None
    return taken[0]
