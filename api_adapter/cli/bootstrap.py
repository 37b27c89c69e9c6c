"""The bootstrap client of a served database: created on first start, and what the
banner of `sandex serve` shows of its secret."""

from __future__ import annotations

import ipaddress
import os
import secrets
from typing import Any

# The bootstrap client's secret on a loopback host when SANDEX_CLIENT_SECRET is unset.
DEFAULT_SECRET = "sandex-secret"


def bootstrap(engine: Any, host: str) -> tuple[str, str]:
    """Create the bootstrap client of a new database; answer its id and what the banner
    shows for its secret. The secret is `SANDEX_CLIENT_SECRET` when set, and then never
    shown. Otherwise it is the documented default on a loopback host (a sandbox on
    127.0.0.1 needs no configuration) and a new random one on any other (shown once: it
    is kept only as a salted hash). On a restart the secret is shown only when it is
    still the default."""
    from engine.domain.customers import secret_matches
    from engine.kernel.commands import CreateCustomer

    given = os.environ.get("SANDEX_CLIENT_SECRET")
    if not engine.state.customers:
        client_id = os.environ.get("SANDEX_CLIENT_ID", "sandex")
        if given:
            secret, shown = given, "(from SANDEX_CLIENT_SECRET)"
        elif _is_loopback(host):
            secret = shown = DEFAULT_SECRET
        else:
            secret = secrets.token_urlsafe(30)
            shown = f"{secret}\n    (generated; shown this once, it cannot be shown again)"
        engine.execute(CreateCustomer(client_id=client_id, client_secret=secret, bootstrap=True))
        return client_id, shown
    client = _bootstrap_client(engine)
    if client is None:
        return os.environ.get("SANDEX_CLIENT_ID", "sandex"), "(not shown)"
    if secret_matches(DEFAULT_SECRET, client["salt"], client["secret_hash"]):
        shown = DEFAULT_SECRET
        if not _is_loopback(host):
            shown += "\n    (the default: anyone who reaches this host is admin; set a secret)"
    elif given and secret_matches(given, client["salt"], client["secret_hash"]):
        shown = "(from SANDEX_CLIENT_SECRET)"
    else:
        shown = "(set when the database was created; not shown)"
    return str(client["client_id"]), shown


def _bootstrap_client(engine: Any) -> dict[str, Any] | None:
    state = engine.state
    for client in state.clients.values():
        customer = state.customers.get(client["customer_id"])
        if customer and customer.get("bootstrap") and not client["revoked"]:
            return client  # type: ignore[no-any-return]
    return None


def _is_loopback(host: str) -> bool:
    """Whether a server bound to `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything
