"""The plugin's guard rails around a sandbox it is given (`--sandex-url`, `SANDEX_URL`):
a suite must never reach the real service by mistake, so a URL outside loopback is
refused before any connection unless remote URLs are allowed; and a URL whose answers
do not say they are a sandex (`X-Sandex-Version`), or a sandex older than the plugin
supports, stops the session in one line rather than failing every test."""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

import httpx

from sandex.api_adapter.version import VERSION_HEADER

# The oldest sandex whose answers this plugin understands.
OLDEST_SUPPORTED = "0.1.0"

_RELEASE = re.compile(r"\s*v?(\d+(?:\.\d+)*)(.*)")
# How long the check waits for the URL's first answer.
CHECK_TIMEOUT = 10.0


class Refused(Exception):
    """Why the plugin will not use a URL, in one line."""


def _loopback_address(host: str) -> bool:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def is_loopback(url: str) -> bool:
    """Whether `url`'s host is on this machine's loopback: an address in 127.0.0.0/8 or
    ::1, or `localhost` when every address it resolves to is one. No other name is
    resolved: a name that happens to resolve to loopback today is not trusted."""
    host = urlsplit(url).hostname or ""
    if _loopback_address(host):
        return True
    if host.rstrip(".") != "localhost":
        return False
    try:
        found = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(found) and all(_loopback_address(str(info[4][0])) for info in found)


def check_host(url: str, allow_remote: bool) -> None:
    """Refuse `url` (without connecting) unless it is an http(s) URL on loopback, or
    remote URLs are allowed."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused(f"sandex: --sandex-url {url} is not an http:// or https:// URL")
    if not allow_remote and not is_loopback(url):
        raise Refused(
            f"sandex: refusing --sandex-url {url}: not a loopback address"
            " (a suite must not reach a real service by mistake);"
            " give --sandex-allow-remote if it is a sandex you mean to use"
        )


def version_key(version: str) -> tuple[tuple[int, ...], int] | None:
    """A version's order: its release numbers (trailing zeros dropped, so 1.0 == 1.0.0),
    then a pre-release or dev suffix before the release itself (1.0rc1 < 1.0); None when
    it has no release number (a sandex run from a source tree never installed)."""
    found = _RELEASE.fullmatch(version)
    if found is None:
        return None
    release = [int(part) for part in found.group(1).split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    suffix = found.group(2).strip().lstrip(".-_").lower()
    final = not suffix or suffix.startswith(("post", "+"))
    return tuple(release), 1 if final else 0


def older(version: str, than: str) -> bool:
    mine, theirs = version_key(version), version_key(than)
    return mine is not None and theirs is not None and mine < theirs


def check_sandex(root: str, http: httpx.Client) -> str:
    """The version of the sandex answering at `root` (its `/healthz`), or Refused: no
    answer, an answer without `X-Sandex-Version`, or a version older than supported."""
    target = f"{root}/healthz"
    try:
        answer = http.get(target, timeout=CHECK_TIMEOUT)
    except httpx.HTTPError as exc:
        raise Refused(f"sandex: no answer from {target} ({type(exc).__name__}: {exc})") from None
    version = answer.headers.get(VERSION_HEADER)
    if version is None:
        raise Refused(
            f"sandex: {root} is not a sandex (its answer, {answer.status_code}, has no"
            f" {VERSION_HEADER} header)"
        )
    if older(version, OLDEST_SUPPORTED):
        raise Refused(
            f"sandex: {root} is sandex {version}, older than this plugin supports"
            f" ({OLDEST_SUPPORTED} or later)"
        )
    return version
