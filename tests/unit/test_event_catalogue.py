"""The event catalogue holds the log: every event of the golden run fits its type's
entry, and the catalogue names exactly the event types the engine applies."""

from __future__ import annotations

import orjson

from sandex.engine.domain.registrations import domain_registry
from sandex.engine.kernel.credentials import EVENT_FIELDS, REDACTED, redact
from sandex.engine.kernel.event_catalogue import CATALOGUE, payload_problems
from tests.support.golden_helpers import load


def test_every_golden_event_fits_the_catalogue() -> None:
    problems: set[str] = set()
    for position, _stream, _version, type, schema, data, _meta, _at in load().events:
        problems.update(payload_problems(type, orjson.loads(data)))
        if schema != CATALOGUE[type].schema:
            problems.add(
                f"{type} at {position}: schema {schema}, catalogue {CATALOGUE[type].schema}"
            )
    assert sorted(problems) == []


def test_the_catalogue_names_the_registered_appliers_types() -> None:
    assert set(CATALOGUE) == set(domain_registry().appliers)


def test_a_payload_outside_its_entry_is_named() -> None:
    assert payload_problems("OrderOpened", {"order": 1}) == [
        "OrderOpened: order_id missing",
        "OrderOpened: order not in the catalogue",
    ]
    assert payload_problems("Unheard", {}) == ["Unheard: not in the catalogue"]


def test_the_catalogue_says_which_fields_are_credentials() -> None:
    assert {
        "ClientCreated": frozenset({"salt", "secret_hash"}),
        "WebhookRegistered": frozenset({"secret"}),
    } == EVENT_FIELDS
    shown = redact(
        "WebhookRegistered",
        {"customer_id": "c", "webhook_id": "w", "url": "https://u:p@h/x?t=1", "secret": "s"},
    )
    assert shown == {
        "customer_id": "c",
        "webhook_id": "w",
        "url": "https://***@h/x?***",
        "secret": REDACTED,
    }
