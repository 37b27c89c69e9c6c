"""The bootstrap client of a world: created when its database is new, and what is known
of its secret afterwards (the banner of `sandex serve` shows it)."""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# The bootstrap client's secret on a loopback host when SANDEX_CLIENT_SECRET is unset.
DEFAULT_SECRET = "sandex-secret"


@dataclass(frozen=True)
class Credentials:
    """A world's bootstrap client: its id, its secret where it is known now (None where
    only its salted hash is kept), and what a banner may show of the secret."""

    client_id: str
    client_secret: str | None
    shown: str


# How a world gets its bootstrap client: called once its engine is started.
Bootstrap = Callable[[Any], Credentials]


def fixed(client_id: str, client_secret: str) -> Bootstrap:
    """A bootstrap client with these credentials, created on a database with no customer
    (a test's sandbox, a scenario's replay)."""
    from sandex.engine.kernel.commands import CreateCustomer

    def made(engine: Any) -> Credentials:
        if not engine.state.customers:
            engine.execute(
                CreateCustomer(client_id=client_id, client_secret=client_secret, bootstrap=True)
            )
        return Credentials(client_id, client_secret, client_secret)

    return made


def served_on(host: str) -> Bootstrap:
    """The bootstrap client of `sandex serve` on `host` (`bootstrap`)."""
    return lambda engine: bootstrap(engine, host)


def bootstrap(engine: Any, host: str) -> Credentials:
    """Create the bootstrap client of a new database; answer its id and what the banner
    shows for its secret. The secret is `SANDEX_CLIENT_SECRET` when set, and then never
    shown. Otherwise it is the documented default on a loopback host (a sandbox on
    127.0.0.1 needs no configuration) and a new random one on any other (shown once: it
    is kept only as a salted hash). On a restart the secret is shown only when it is
    still the default."""
    from sandex.engine.domain.customers import secret_matches
    from sandex.engine.kernel.commands import CreateCustomer

    given = os.environ.get("SANDEX_CLIENT_SECRET")
    if not engine.state.customers:
        client_id = os.environ.get("SANDEX_CLIENT_ID", "sandex")
        if given:
            secret, shown = given, "(from SANDEX_CLIENT_SECRET)"
        elif is_loopback(host):
            secret = shown = DEFAULT_SECRET
        else:
            secret = secrets.token_urlsafe(30)
            shown = f"{secret}\n    (generated; shown this once, it cannot be shown again)"
        engine.execute(CreateCustomer(client_id=client_id, client_secret=secret, bootstrap=True))
        return Credentials(client_id, secret, shown)
    client = _bootstrap_client(engine)
    if client is None:
        return Credentials(os.environ.get("SANDEX_CLIENT_ID", "sandex"), None, "(not shown)")
    known: str | None = None
    if secret_matches(DEFAULT_SECRET, client["salt"], client["secret_hash"]):
        known = shown = DEFAULT_SECRET
        if not is_loopback(host):
            shown += "\n    (the default: anyone who reaches this host is admin; set a secret)"
    elif given and secret_matches(given, client["salt"], client["secret_hash"]):
        known, shown = given, "(from SANDEX_CLIENT_SECRET)"
    else:
        shown = "(set when the database was created; not shown)"
    return Credentials(str(client["client_id"]), known, shown)


def _bootstrap_client(engine: Any) -> dict[str, Any] | None:
    state = engine.state
    for client in state.clients.values():
        customer = state.customers.get(client["customer_id"])
        if customer and customer.get("bootstrap") and not client["revoked"]:
            return client  # type: ignore[no-any-return]
    return None


def is_loopback(host: str) -> bool:
    """Whether a server bound to `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything
