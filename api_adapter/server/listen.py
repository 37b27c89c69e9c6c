"""The listening socket of `sandex serve`: bound first, served by uvicorn.

`sandex serve` binds its address before it opens (or creates) the database and prints
the banner, so a port that is taken is one line and exit 2, with no new database and no
banner that promises a server that never runs. The socket is then handed to uvicorn as
it is, not closed and bound again, so no other program can take the port in between.
"""

from __future__ import annotations

import errno
import socket
import threading
from typing import Any

from sandex.api_adapter.cli.errors import CliError

# uvicorn's own backlog (its `--backlog` default).
BACKLOG = 2048
# uvicorn's exit status when the server did not start (uvicorn.server.STARTUP_FAILURE).
STARTUP_FAILURE = 3
# The ASGI scope key of an event set when the server begins to stop (Ctrl-C, SIGTERM, a
# lost lease): uvicorn waits for every answer under way, so an answer that lasts (the
# console's event stream) ends when it is set rather than hold the stop.
STOPPING = "sandex.stopping"


class _Stopping:
    """The served app, each request's scope carrying the server's stopping event."""

    def __init__(self, app: Any, stopping: threading.Event) -> None:
        self.app = app
        self.stopping = stopping

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        scope[STOPPING] = self.stopping
        await self.app(scope, receive, send)


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `host`:`port` and listening, or `CliError` (exit 2) saying
    why not: the port is in use, the address is not this machine's, the name is unknown.
    Port 0 takes a free port; `getsockname()` tells which."""
    if not 0 <= port <= 65535:  # getaddrinfo would take 70000 as 4464
        raise CliError(f"cannot listen on {host}:{port}: a port is 0 to 65535")
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    try:
        return socket.create_server(address, family=family, backlog=BACKLOG)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise CliError(
                f"cannot listen on {host}:{port}: the port is in use by another program"
                " (another sandex serve?); choose another with --port"
            ) from None
        why = (exc.strerror or str(exc)).split(" (while attempting")[0]
        raise CliError(f"cannot listen on {host}:{port}: {why}") from None


def serve_on(
    listener: socket.socket, app: Any, *, stop_when: threading.Event | None = None, **options: Any
) -> None:
    """`uvicorn.run(app, **options)` on the socket `listen` made; returns when the server
    stops (Ctrl-C, SIGTERM, or `stop_when` set: a writer that lost its lease). A server
    that did not start (uvicorn logged why) is `CliError` with uvicorn's own exit
    status."""
    import uvicorn

    stopping = threading.Event()

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            stopping.set()
            super().handle_exit(sig, frame)

    server = Server(uvicorn.Config(_Stopping(app, stopping), **options))
    if stop_when is not None:

        def stop() -> None:
            stop_when.wait()
            stopping.set()
            server.should_exit = True

        threading.Thread(target=stop, name="sandex-fence", daemon=True).start()
    try:
        server.run(sockets=[listener])
    except KeyboardInterrupt:  # as uvicorn.run: Ctrl-C is how a server is stopped
        pass
    finally:
        listener.close()
    if not server.started:
        raise CliError("the server did not start (see the log above)", code=STARTUP_FAILURE)
