"""`sandex wait`: block until a sandex answers, for shell scripts and CI steps that start
`sandex serve` in the background (docs/ci.md).

A sandex is told by its `X-Sandex-Version` header (api_adapter/version.py): a URL whose
`/healthz` answers without it is some other program, and waiting longer will not make it
a sandex, so that is said at once. A gateway's 502/503/504 without it is a proxy whose
sandex is not up yet: waited for, like a refused connection or a standby's 503.
"""

from __future__ import annotations

import argparse
import sys
import time

# Exit statuses: 0 a sandex answered /healthz 200; 1 none did within --timeout; 2 the URL
# answers but is not a sandex (or is not a URL).
TIMED_OUT = 1
NOT_A_SANDEX = 2
_GATEWAY = frozenset({502, 503, 504})
_POLL_SECONDS = 0.1


def health_url(url: str) -> str:
    """The /healthz of a server's root or a world's (`/w/{world}`); a base URL ending in
    /v2, as the worlds API answers one, is taken as its root."""
    root = url.rstrip("/")
    root = root.removesuffix("/v2")
    return f"{root}/healthz"


def wait(args: argparse.Namespace) -> int:
    """`sandex wait`: 0 once `URL/healthz` answers 200 with X-Sandex-Version."""
    import httpx

    from sandex.api_adapter.version import VERSION_HEADER

    target = health_url(args.url)
    deadline = time.monotonic() + args.timeout
    last = "no answer"
    while True:
        left = deadline - time.monotonic()
        try:
            r = httpx.get(target, timeout=max(0.1, min(left, 2.0)))
        except httpx.UnsupportedProtocol:
            print(f"sandex: {args.url} is not an http:// or https:// URL", file=sys.stderr)
            return NOT_A_SANDEX
        except httpx.TransportError as exc:
            last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        else:
            version = r.headers.get(VERSION_HEADER)
            if version is not None and r.status_code == 200:
                print(f"sandex {version} answering at {target}")
                return 0
            if version is None and r.status_code not in _GATEWAY:
                print(
                    f"sandex: {target} answers {r.status_code} but is not a sandex"
                    f" (no {VERSION_HEADER} header)",
                    file=sys.stderr,
                )
                return NOT_A_SANDEX
            last = f"{r.status_code}" + ("" if version else f" without {VERSION_HEADER}")
        if time.monotonic() + _POLL_SECONDS >= deadline:
            print(
                f"sandex: no sandex answered {target} within {args.timeout:g} s (last: {last})",
                file=sys.stderr,
            )
            return TIMED_OUT
        time.sleep(_POLL_SECONDS)
