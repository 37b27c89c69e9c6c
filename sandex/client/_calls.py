"""The operations, said once for the sync and the async client: each builds a `Call`
(method, path under the base URL, body, query, how its answer parses), which
`Client._send` and `AsyncClient._send` carry out. The paths and bodies are sandex's
(its operation table, docs/worlds.md, docs/faults.md)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from sandex.client import _models as m

T = TypeVar("T")
Amount = Decimal | str | int


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str  # under the base URL (which ends in /v2), or an absolute URL
    parse: Callable[[Any, Mapping[str, str]], T]  # (JSON body, headers) -> answer
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    # a write whose body carries a ref_id: the service refuses its repeat (409
    # already-exists), so any failure may be retried with the same body
    ref_id: str | None = None
    # where the one write of a ref_id is read when a retry finds it (`{id}` its id)
    found_at: str | None = None


def _model(cls: type[T]) -> Callable[[Any, Mapping[str, str]], T]:
    return lambda body, headers: cls.model_validate(body)  # type: ignore[attr-defined, no-any-return]


def _items(cls: type[T]) -> Callable[[Any, Mapping[str, str]], list[T]]:
    return lambda body, headers: [cls.model_validate(i) for i in body["items"]]  # type: ignore[attr-defined]


def _nothing(body: Any, headers: Mapping[str, str]) -> None:
    return None


def _raw(body: Any, headers: Mapping[str, str]) -> Any:
    return body


def amount(value: Amount) -> str:
    """An amount as the wire spells it: a decimal string. A float is refused, since it
    cannot say most decimal amounts exactly."""
    if isinstance(value, float) or not isinstance(value, Decimal | str | int):
        raise TypeError(f"an amount is a Decimal, a str or an int, not {type(value).__name__}")
    return str(value)


def seg(value: str) -> str:
    """A path parameter, escaped as one segment."""
    return quote(str(value), safe="")


def _given(**fields: Any) -> dict[str, Any]:
    """The body's fields that were given: sandex refuses a null field."""
    return {k: v for k, v in fields.items() if v is not None}


def _time(value: datetime | str) -> str:
    return value.isoformat().replace("+00:00", "Z") if isinstance(value, datetime) else value


def new_ref_id() -> str:
    """A ref_id for one logical call, the same on each of its attempts."""
    return "sandex-" + secrets.token_hex(16)


def loads(text: str) -> Any:
    """JSON with its numbers' decimals as Decimal: an amount never passes through float."""
    return json.loads(text, parse_float=Decimal)


# -- worlds (the default world's bootstrap client) ---------------------------------------


def create_world(
    *,
    name: str | None = None,
    clock: str | None = None,
    start_time: datetime | str | None = None,
    seed: int | None = None,
    settings: dict[str, Any] | None = None,
    from_world: str | None = None,
    from_snapshot: str | None = None,
    expires_after_idle_seconds: int | None = None,
) -> Call[m.WorldCreated]:
    body = _given(
        name=name,
        clock=clock,
        start_time=None if start_time is None else _time(start_time),
        seed=seed,
        settings=settings,
        from_world=from_world,
        from_snapshot=from_snapshot,
        expires_after_idle_seconds=expires_after_idle_seconds,
    )
    return Call("POST", "/sandbox/worlds", _model(m.WorldCreated), json=body)


def list_worlds(limit: int | None = None, page_cursor: str | None = None) -> Call[m.WorldPage]:
    params = _given(limit=limit, page_cursor=page_cursor)
    return Call("GET", "/sandbox/worlds", _model(m.WorldPage), params=params)


def get_world(world_id: str) -> Call[m.World]:
    return Call("GET", f"/sandbox/worlds/{seg(world_id)}", _model(m.World))


def delete_world(world_id: str) -> Call[m.WorldDeleted]:
    return Call("DELETE", f"/sandbox/worlds/{seg(world_id)}", _model(m.WorldDeleted))


# -- customers, clock, snapshots ----------------------------------------------------------


def create_customer(
    *,
    scopes: list[str] | None = None,
    self_match_prevention: bool | None = None,
    identity_labels: bool | None = None,
) -> Call[m.Customer]:
    body = _given(
        scopes=scopes, self_match_prevention=self_match_prevention, identity_labels=identity_labels
    )
    return Call("POST", "/sandbox/customers", _model(m.Customer), json=body)


def get_clock() -> Call[m.Clock]:
    return Call("GET", "/sandbox/clock", _model(m.Clock))


def advance_clock(seconds: int) -> Call[m.Clock]:
    return Call("POST", "/sandbox/clock", _model(m.Clock), json={"advance_seconds": seconds})


def set_clock(to: datetime | str) -> Call[m.Clock]:
    return Call("POST", "/sandbox/clock", _model(m.Clock), json={"set_to": _time(to)})


def take_snapshot(name: str) -> Call[m.Snapshot]:
    return Call("POST", "/sandbox/snapshots", _model(m.Snapshot), json={"name": name})


def list_snapshots() -> Call[list[m.Snapshot]]:
    return Call("GET", "/sandbox/snapshots", _items(m.Snapshot))


def restore_snapshot(name: str) -> Call[m.RestoredSnapshot]:
    path = f"/sandbox/snapshots/{seg(name)}/restore"
    return Call("POST", path, _model(m.RestoredSnapshot))


def reset() -> Call[m.Reset]:
    return Call("POST", "/sandbox/reset", _model(m.Reset))


# -- faults, pacing, releases --------------------------------------------------------------


def arm_fault(
    match: dict[str, Any],
    action: dict[str, Any],
    *,
    when: str | None = None,
    times: int | None = None,
    skip: int | None = None,
    probability: Decimal | str | None = None,
    until: datetime | str | None = None,
    ttl_seconds: int | None = None,
) -> Call[m.FaultRule]:
    body = _given(
        match=match,
        when=when,
        action=action,
        times=times,
        skip=skip,
        probability=None if probability is None else amount(probability),
        until=None if until is None else _time(until),
        ttl_seconds=ttl_seconds,
    )
    return Call("POST", "/sandbox/faults", _model(m.FaultRule), json=body)


def list_faults() -> Call[list[m.FaultRule]]:
    return Call("GET", "/sandbox/faults", _items(m.FaultRule))


def get_fault(rule_id: str) -> Call[m.FaultRule]:
    return Call("GET", f"/sandbox/faults/{seg(rule_id)}", _model(m.FaultRule))


def delete_fault(rule_id: str) -> Call[m.FaultRule]:
    return Call("DELETE", f"/sandbox/faults/{seg(rule_id)}", _model(m.FaultRule))


def arm_webhook_fault(
    action: dict[str, Any], *, match: dict[str, Any] | None = None, times: int | None = None
) -> Call[m.WebhookFault]:
    body = _given(match=match, action=action, times=times)
    return Call("POST", "/sandbox/webhook-faults", _model(m.WebhookFault), json=body)


def list_webhook_faults() -> Call[list[m.WebhookFault]]:
    return Call("GET", "/sandbox/webhook-faults", _items(m.WebhookFault))


def get_webhook_fault(rule_id: str) -> Call[m.WebhookFault]:
    return Call("GET", f"/sandbox/webhook-faults/{seg(rule_id)}", _model(m.WebhookFault))


def delete_webhook_fault(rule_id: str) -> Call[m.WebhookFault]:
    return Call("DELETE", f"/sandbox/webhook-faults/{seg(rule_id)}", _model(m.WebhookFault))


def get_pacing() -> Call[m.Pacing]:
    return Call("GET", "/sandbox/pacing", _model(m.Pacing))


def set_pacing(kinds: dict[str, dict[str, Any]]) -> Call[m.Pacing]:
    return Call("PUT", "/sandbox/pacing", _model(m.Pacing), json=kinds)


def complete_transfer(transfer_id: str) -> Call[m.Transfer]:
    path = f"/sandbox/transfers/{seg(transfer_id)}/complete"
    return Call("POST", path, _model(m.Transfer))


def fail_transfer(transfer_id: str, reason: str | None = None) -> Call[m.Transfer]:
    path = f"/sandbox/transfers/{seg(transfer_id)}/fail"
    return Call("POST", path, _model(m.Transfer), json=_given(reason=reason))


def release_order(order_id: str) -> Call[m.Order]:
    return Call("POST", f"/sandbox/orders/{seg(order_id)}/release", _model(m.Order))


# -- requests, prices, deposits, events ----------------------------------------------------


def list_requests(
    limit: int | None = None,
    page_cursor: str | None = None,
    operation: str | None = None,
    status: int | str | None = None,
) -> Call[m.RequestPage]:
    params = _given(limit=limit, page_cursor=page_cursor, operation=operation, status=status)
    return Call("GET", "/sandbox/requests", _model(m.RequestPage), params=params)


def get_price(market: str) -> Call[m.MarketPrice]:
    return Call("GET", f"/sandbox/markets/{seg(market)}/price", _model(m.MarketPrice))


def set_price(market: str, price: Amount, *, gap: bool | None = None) -> Call[m.MarketPrice]:
    body = _given(price=amount(price), gap=gap)
    return Call("POST", f"/sandbox/markets/{seg(market)}/price", _model(m.MarketPrice), json=body)


def deposit(
    asset: str,
    value: Amount,
    *,
    profile_id: str = "default",
    crypto_network: str | None = None,
    crypto_address: str | None = None,
) -> Call[m.Deposit]:
    body = _given(
        asset=asset,
        amount=amount(value),
        crypto_network=crypto_network,
        crypto_address=crypto_address,
    )
    path = f"/sandbox/profiles/{seg(profile_id)}/deposit"
    return Call("POST", path, _model(m.Deposit), json=body)


def fiat_deposit(
    value: Amount,
    asset: str,
    memo_id: str,
    fiat_network_instructions: dict[str, Any],
    *,
    fiat_account_owner: dict[str, Any] | None = None,
) -> Call[None]:
    body = _given(
        amount=amount(value),
        asset=asset,
        memo_id=memo_id,
        fiat_network_instructions=fiat_network_instructions,
        fiat_account_owner=fiat_account_owner,
    )
    return Call("POST", "/sandbox/fiat-deposits", _nothing, json=body)


def _event_page(body: Any, headers: Mapping[str, str]) -> m.EventPage:
    return m.EventPage(events=body["events"], next_page_cursor=headers.get("x-next-page-cursor"))


def list_events(
    limit: int | None = None,
    page_cursor: str | None = None,
    type: str | None = None,
    **created_at: datetime | str,
) -> Call[m.EventPage]:
    """`created_at` filters by keyword: `lt`, `lte`, `eq`, `gte`, `gt`."""
    params = _given(limit=limit, page_cursor=page_cursor, type=type)
    for op, value in created_at.items():
        if op not in ("lt", "lte", "eq", "gte", "gt"):
            raise TypeError(f"unknown created_at filter {op!r}")
        params[f"created_at.{op}"] = _time(value)
    return Call("GET", "/events", _event_page, params=params)


def raw(
    method: str,
    path: str,
    *,
    json: Any = None,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    ref_id: str | bool | None = None,
    found_at: str | None = None,
) -> Call[Any]:
    """Any operation (the escape hatch). `ref_id=True` gives the body a new ref_id (a
    str: that one), so a retry of the write is safe and finds its one write."""
    chosen: str | None = None
    if ref_id is not None and ref_id is not False:
        body = dict(json or {})
        chosen = body.get("ref_id") or (new_ref_id() if ref_id is True else str(ref_id))
        body["ref_id"] = chosen
        json = body
    elif isinstance(json, dict) and json.get("ref_id"):
        chosen = str(json["ref_id"])
    return Call(
        method.upper(),
        path,
        _raw,
        json=json,
        params=params or {},
        headers=headers or {},
        ref_id=chosen,
        found_at=found_at,
    )
