"""uvicorn's httptools protocol, sending each response's head and body in one write.

uvicorn writes a response's status line and headers when the app sends
`http.response.start` and its body at `http.response.body`: two writes, so two `send`
system calls and two TCP segments for every answer that fits in one. On loopback the
sender's `send` runs the receiver's side of TCP too, with the GIL held, and the two of
them were the largest single cost of a request on the event loop (about a third of its
time holding the GIL, profiled under 32 connections). Here the head waits for the
first body write and goes out with it. Everything else is uvicorn's own code.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle


class _OneWrite:
    """A cycle's transport that holds back the head of the response (the first write
    after the cycle started its response) until the next write or close, and joins them.
    Anything else passes through to the real transport."""

    __slots__ = ("_transport", "_cycle", "_head", "_done")

    def __init__(self, transport: asyncio.Transport, cycle: RequestResponseCycle) -> None:
        self._transport = transport
        self._cycle = cycle
        self._head: bytes | None = None
        self._done = False

    def write(self, data: bytes) -> None:
        head = self._head
        if head is not None:
            self._head = None
            self._done = True
            self._transport.write(head + data)
        elif not self._done and self._cycle.response_started:
            self._head = data  # the head: it goes out with the body
        else:
            self._transport.write(data)  # "100 Continue", or a later chunk

    def close(self) -> None:
        if self._head is not None:
            self._transport.write(self._head)
            self._head = None
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class OneWriteProtocol(HttpToolsProtocol):
    """`uvicorn.run(app, http=OneWriteProtocol)`: answers in one write each."""

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        cycle = self.cycle
        # A HEAD answer writes no body to carry its head, so it is left as uvicorn sends
        # it; so is a cycle that this call did not create (an upgrade returns early).
        if (
            cycle is not None
            and cycle.transport is self.transport
            and not cycle.response_started
            and cycle.scope["method"] != "HEAD"
        ):
            cycle.transport = _OneWrite(self.transport, cycle)  # type: ignore[assignment]
