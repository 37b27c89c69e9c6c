"""Webhook registrations: where a customer wants its feed events POSTed.

A registration is an event (the log stays the truth about configuration too); delivery
is not: whether a receiver answered is the outside world's business and varies from run
to run, so the deliverer (`sandex.api_adapter.webhook_delivery`) keeps its progress outside the log.
Delivery starts with the first feed event after the registration (`since`).

The secret a receiver checks signatures with is drawn from the OS and answered once, at
registration; the event and the `webhooks` table hold it sealed under the database's
sealing key (engine/kernel/credentials.py, engine/runtime/key_file.py), which the deliverer opens to sign.
A registration written by an older sandex holds its secret in clear, and still works.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sandex.engine.config.destinations import Destinations
from sandex.engine.kernel.commands import Command
from sandex.engine.kernel.credentials import redact_url
from sandex.engine.kernel.errors import Invalid, NotFound
from sandex.engine.kernel.events import Event
from sandex.engine.kernel.read_model_spec import ReadModelTable
from sandex.engine.kernel.registry import Registration
from sandex.engine.kernel.state import Ctx, State

KEY = "webhooks"
MAX_URL = 2048
# A URL's host and port: a name or IPv4 address, or an IPv6 address in brackets (which
# holds a colon: `[v1.x]`, IPvFuture, is nothing a client connects to).
_BRACKETS = re.compile(r"(?:\[[^\[\]]*:[^\[\]]*\]|[^\[\]:]*)(?::[0-9]*)?")


@dataclass(frozen=True, slots=True)
class RegisterWebhook(Command):
    url: str = ""


@dataclass(frozen=True, slots=True)
class RemoveWebhook(Command):
    pass


def registrations(state: State) -> dict[str, dict[str, Any]]:
    return state.ext.setdefault(KEY, {})  # type: ignore[no-any-return]


def webhook_view(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": record["id"],
        "url": redact_url(record["url"]),
        "created_at": record["created_at"],
    }


def check_url(url: str, destinations: Destinations) -> None:
    """Refuse a URL that is malformed or names a destination the policy refuses."""
    if len(url) > MAX_URL:
        raise Invalid(f"url invalid: at most {MAX_URL} characters", field="url")
    if any(c.isspace() or not c.isprintable() or c == "\\" for c in url):
        raise Invalid("url invalid: no spaces, control characters or backslashes", field="url")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # an unclosed or misplaced [
        host = None
    if host is None or parts.scheme not in ("http", "https"):
        raise Invalid("url invalid: an absolute http or https URL", field="url")
    if not _BRACKETS.fullmatch(parts.netloc.rpartition("@")[2]) or not host:
        raise Invalid("url invalid: a host, then at most a port", field="url")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise Invalid("url invalid: the port is a number from 1 to 65535", field="url")
    refusal = destinations.refusal(host)
    if refusal is not None:
        raise Invalid(f"url invalid: {refusal}", field="url")


def register_webhook(ctx: Ctx, cmd: RegisterWebhook) -> dict[str, Any]:
    check_url(cmd.url, Destinations(ctx.settings.webhook_allowed_hosts))
    customer_id = cmd.actor.customer_id
    webhook_id = ctx.ids.uuid()
    # Shown once, in this answer; the log and the table hold it sealed (credentials.py).
    secret = ctx.secrets.token(32)
    ctx.emit(
        "WebhookRegistered",
        f"webhook-{customer_id}",
        {
            "customer_id": customer_id,
            "webhook_id": webhook_id,
            "url": cmd.url,
            "secret": ctx.secrets.seal(secret, webhook_id),
        },
    )
    return {**webhook_view(registrations(ctx.state)[customer_id]), "secret": secret}


def remove_webhook(ctx: Ctx, cmd: RemoveWebhook) -> dict[str, Any]:
    customer_id = cmd.actor.customer_id
    record = registrations(ctx.state).get(customer_id)
    if record is None:
        raise NotFound("no webhook is registered")
    ctx.emit("WebhookRemoved", f"webhook-{customer_id}", {"customer_id": customer_id})
    return webhook_view(record)


def _registered(state: State, e: Event) -> None:
    d = e.data
    registrations(state)[d["customer_id"]] = {
        "id": d["webhook_id"],
        "customer_id": d["customer_id"],
        "url": d["url"],
        "secret": d["secret"],
        "created_at": e.occurred_at,
        # feed items with a larger seq are delivered (see engine.feed for seq)
        "since": e.position * 2,
    }
    state.mark("webhook", d["customer_id"])


def _removed(state: State, e: Event) -> None:
    registrations(state).pop(e.data["customer_id"], None)
    state.mark("webhook", e.data["customer_id"])


DECIDERS = {RegisterWebhook: register_webhook, RemoveWebhook: remove_webhook}
APPLIERS = {"WebhookRegistered": _registered, "WebhookRemoved": _removed}


def _row(state: State, key: str) -> dict[str, Any] | None:
    r = registrations(state).get(key)
    if r is None:
        return None
    return {
        "customer_id": r["customer_id"],
        "id": r["id"],
        "url": r["url"],
        "secret": r["secret"],
        "since": r["since"],
        "created_at": r["created_at"],
    }


TABLE = ReadModelTable(
    "webhooks",
    {
        "customer_id": str,
        "id": str,
        "url": str,
        "secret": str,
        "since": int,
        "created_at": str,
    },
    pk=("customer_id",),
    kind="webhook",
    row=_row,
    key_columns=("customer_id",),
    keys=lambda s: registrations(s).keys(),
)
REGISTRATION = Registration(DECIDERS, APPLIERS, tables=(TABLE,))
