"""Webhook destinations: which hosts and addresses sandex may POST a customer's events to.

A sandbox reachable from a CI network must not become a way into that network: a
tenant who registers `http://127.0.0.1:6379/` or `http://10.0.0.5/` would otherwise
have the server connect there on its behalf (server-side request forgery). So by
default a destination must be a public address: globally routable unicast, neither
loopback, private, link-local, shared (CGNAT), multicast, reserved nor unspecified,
for IPv4 and IPv6 alike (an IPv4-mapped or 6to4 IPv6 address is judged by the IPv4
address inside it). The operator allows chosen hosts (`webhook_allowed_hosts`): a
name, which is then trusted whatever it resolves to, or an address or network, which
any destination resolving into it may use (a receiver on the same machine needs
`127.0.0.1`).

The check runs twice. At registration on what the URL alone says: an address literal
in any form a resolver accepts (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`) or a
`localhost` name; no I/O, so that a replay decides the same. At delivery on every
address the name resolves to, which is the enforcement: the deliverer connects only to
an address that passed (api_adapter/webhook_delivery.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from ipaddress import (
    IPv4Address,
    IPv4Network,
    IPv6Address,
    IPv6Network,
    ip_address,
    ip_network,
)
from urllib.parse import unquote

Address = IPv4Address | IPv6Address
Network = IPv4Network | IPv6Network

# RFC 6761: these names are the machine itself, whatever a resolver might say.
_LOOPBACK = (IPv4Address("127.0.0.1"), IPv6Address("::1"))
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
# A last label that a resolver would read as a number (WHATWG URL's "ends in a number").
_NUMERIC = re.compile(r"[0-9]+|0x[0-9a-f]*")
_MAX_NAME = 253


def canonical(address: Address) -> Address:
    """The address a connection really reaches: an IPv4-mapped IPv6 address is IPv4."""
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_public(address: Address) -> bool:
    """Whether `address` is globally routable unicast, by the IANA special-purpose registries."""
    address = canonical(address)
    if isinstance(address, IPv6Address):
        if address.sixtofour is not None and not is_public(address.sixtofour):
            return False
        if address.is_site_local:
            return False
    refused = (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )
    return address.is_global and not refused


def _ipv4_part(part: str) -> int | None:
    """One dotted part as inet_aton reads it: decimal, 0-led octal or 0x-led hex."""
    if part.startswith("0x"):
        return int(part[2:] or "0", 16) if re.fullmatch(r"[0-9a-f]*", part[2:]) else None
    if part.startswith("0"):
        return int(part, 8) if re.fullmatch(r"[0-7]+", part) else None
    return int(part) if part.isascii() and part.isdigit() else None


def _ipv4_literal(host: str) -> IPv4Address | None:
    """`host` read as the IPv4 address a resolver would make of it, if it is a number."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    numbers = [_ipv4_part(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    *leading, last = [n for n in numbers if n is not None]
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(parts)):
        return None
    value = last
    for i, n in enumerate(leading):
        value += n << (8 * (3 - i))
    return IPv4Address(value)


def normal_name(host: str) -> str:
    """A host name as compared: lower case, ASCII (IDNA), without the root's trailing dot."""
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    return host.encode("idna").decode("ascii") if not host.isascii() else host


def host_addresses(host: str) -> tuple[Address, ...] | None:
    """The addresses a URL's host names without asking a resolver (a literal, `localhost`),
    or None for a name only a resolver can answer. ValueError: neither a valid address
    nor a valid name."""
    if ":" in host:  # only an IPv6 literal has a colon in a URL's host
        return (ip_address(unquote(host).strip("[]")),)
    name = normal_name(host)
    literal = _ipv4_literal(name)
    if literal is not None:
        return (literal,)
    labels = name.split(".")
    if _NUMERIC.fullmatch(labels[-1]):
        raise ValueError(f"{host!r} is neither an IPv4 address nor a name")
    if len(name) > _MAX_NAME or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError(f"{host!r} is not a valid host name")
    if name == "localhost" or name.endswith(".localhost"):
        return _LOOPBACK
    return None


def parse_allowed(entry: str) -> str | Network:
    """One entry of `webhook_allowed_hosts`: an address or network, else a host name."""
    try:
        return ip_network(entry.strip().strip("[]"), strict=False)
    except ValueError:
        pass
    name = normal_name(entry.strip())
    addresses = host_addresses(name)  # ValueError: neither a name nor an address
    if addresses is not None and addresses != _LOOPBACK:
        raise ValueError(f"{entry!r}: write an address in its usual form (127.0.0.1, ::1)")
    return name


class Destinations:
    """The destination policy: public addresses, and what the operator allows."""

    def __init__(self, allowed: Iterable[str] = ()) -> None:
        names: set[str] = set()
        networks: list[Network] = []
        for entry in allowed:
            parsed = parse_allowed(entry)
            if isinstance(parsed, str):
                names.add(parsed)
            else:
                networks.append(parsed)
        self.names = frozenset(names)
        self.networks = tuple(networks)

    def allows_name(self, host: str) -> bool:
        """Whether the operator allowed this host by name (whatever it resolves to)."""
        try:
            return normal_name(host) in self.names
        except UnicodeError:
            return False

    def allows_address(self, address: Address) -> bool:
        """Whether a connection to `address` may be made."""
        address = canonical(address)
        if is_public(address):
            return True
        return any(
            address.version == net.version and address in net  # type: ignore[operator]
            for net in self.networks
        )

    def refusal(self, host: str) -> str | None:
        """Why a URL with this host is refused at registration, or None.

        A name a resolver must answer passes here: delivery checks what it resolves to."""
        if self.allows_name(host):
            return None
        try:
            addresses = host_addresses(host)
        except (ValueError, UnicodeError):
            return "the host is neither a valid name nor a valid address"
        if addresses is None or any(self.allows_address(a) for a in addresses):
            return None
        return (
            "the host is a loopback, private, link-local or otherwise non-public address;"
            " the operator may allow it (webhook_allowed_hosts)"
        )
