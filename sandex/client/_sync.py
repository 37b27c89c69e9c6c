"""The synchronous client (`Client`); `_async.py` is its twin, method for method."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

import httpx

from sandex.client import _calls as calls
from sandex.client import _models as m
from sandex.client._calls import Amount, Call
from sandex.client._policy import Retries, error_of, found, retried, wait
from sandex.client._token import TokenCache, token_form, world_fields

T = TypeVar("T")


class Client:
    """sandex's own operations over HTTP. `base_url` ends in `/v2` (as the worlds API
    answers it); a token is fetched from `token_url` with the client's credentials and
    fetched again when it expires or is refused (401). `timeout` (seconds, or an
    httpx.Timeout) is the client's own httpx client's; `http` is one to send through
    instead (a test's in-process one), with its own timeouts, which it does not close."""

    def __init__(
        self,
        base_url: str,
        token_url: str,
        client_id: str,
        client_secret: str,
        *,
        timeout: float | httpx.Timeout = 10.0,
        retries: Retries | None = None,
        headers: dict[str, str] | None = None,
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token_url = token_url
        self.client_id = client_id
        self._secret = client_secret
        self.timeout = timeout
        self.retries = retries or Retries()
        self.headers = dict(headers or {})
        self._owns = http is None
        self._http = http if http is not None else httpx.Client(timeout=timeout)
        self._sleep = sleep
        self._token = TokenCache()

    @classmethod
    def for_world(
        cls,
        world: m.WorldCreated | dict[str, Any],
        client_secret: str | None = None,
        **options: Any,
    ) -> Client:
        """A client of a world, from its creation's answer; a fork's answer has no secret
        (its clients are its template's): give the template's."""
        return cls(*world_fields(world, client_secret), **options)

    def with_fault(self, template: str) -> Client:
        """This client, asking sandex for the fault `template` on each of its requests
        (`Prefer: sandbox-fault=<template>`, docs/faults.md). It shares the connection
        pool and the token."""
        twin = Client.__new__(Client)
        twin.__dict__.update(self.__dict__)
        twin.headers = {**self.headers, "Prefer": f"sandbox-fault={template}"}
        twin._owns = False
        return twin

    def close(self) -> None:
        if self._owns:
            self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sending -------------------------------------------------------------------------

    def token(self) -> str:
        """A bearer token of the client, fetched when none is held or it has expired."""
        held = self._token.valid()
        if held is not None:
            return held
        r = self._http.post(self.token_url, data=token_form(self.client_id, self._secret))
        if r.status_code != 200:
            raise error_of(r)
        return self._token.keep(r.json())

    def _send(self, call: Call[T]) -> T:
        url = call.path if "://" in call.path else self.base_url + call.path
        attempt, refreshed = 0, False
        while True:
            attempt += 1
            headers = {**self.headers, **call.headers, "Authorization": f"Bearer {self.token()}"}
            try:
                r = self._http.request(
                    call.method,
                    url,
                    json=call.json,
                    params=call.params,
                    headers=headers,
                )
            except httpx.TransportError as exc:
                pause = wait(self.retries, attempt, None)
                if attempt > self.retries.max_retries or not retried(call, error=exc):
                    raise
                self._sleep(pause or 0.0)
                continue
            if r.status_code == 401 and not refreshed:
                refreshed = True  # the token expired or was revoked: once more, with a new one
                self._token.drop()
                attempt -= 1
                continue
            if r.status_code < 400:
                return call.parse(calls.loads(r.text) if r.content else None, r.headers)
            error = error_of(r)
            existing = found(call, error, attempt)
            if existing is not None:
                where = call.found_at
                if where is None:
                    return call.parse(error.meta["existing"], r.headers)
                return self._send(calls.raw("GET", where.format(id=calls.seg(existing))))  # type: ignore[no-any-return]
            pause = wait(self.retries, attempt, r.headers)
            if pause is None or attempt > self.retries.max_retries:
                raise error
            if not retried(call, status=r.status_code):
                raise error
            self._sleep(pause)

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        ref_id: str | bool | None = None,
        found_at: str | None = None,
    ) -> Any:
        """Any operation of the world, its answer's JSON (amounts as Decimal). `ref_id`
        True gives a write's body a new ref_id (a str: that one); a retry then sends the
        same one, and when it is refused as already done the client answers the one write:
        read at `found_at` (a path with `{id}`), else the problem's `meta.existing`."""
        call = calls.raw(
            method,
            path,
            json=json,
            params=params,
            headers=headers,
            ref_id=ref_id,
            found_at=found_at,
        )
        return self._send(call)

    # -- worlds ----------------------------------------------------------------------------

    def create_world(
        self,
        *,
        name: str | None = None,
        clock: str | None = None,
        start_time: datetime | str | None = None,
        seed: int | None = None,
        settings: dict[str, Any] | None = None,
        expires_after_idle_seconds: int | None = None,
    ) -> m.WorldCreated:
        return self._send(
            calls.create_world(
                name=name,
                clock=clock,
                start_time=start_time,
                seed=seed,
                settings=settings,
                expires_after_idle_seconds=expires_after_idle_seconds,
            )
        )

    def fork_world(
        self,
        from_world: str,
        from_snapshot: str,
        *,
        name: str | None = None,
        expires_after_idle_seconds: int | None = None,
    ) -> m.WorldCreated:
        """A new world: `from_world` as it was at its snapshot `from_snapshot`."""
        return self._send(
            calls.create_world(
                name=name,
                from_world=from_world,
                from_snapshot=from_snapshot,
                expires_after_idle_seconds=expires_after_idle_seconds,
            )
        )

    def list_worlds(self, limit: int | None = None, page_cursor: str | None = None) -> m.WorldPage:
        return self._send(calls.list_worlds(limit, page_cursor))

    def iter_worlds(self, limit: int | None = None) -> Iterator[m.World]:
        """Every world, oldest first, page after page."""
        cursor: str | None = None
        while True:
            page = self.list_worlds(limit, cursor)
            yield from page.items
            cursor = page.next_page_cursor
            if cursor is None:
                return

    def get_world(self, world_id: str) -> m.World:
        return self._send(calls.get_world(world_id))

    def delete_world(self, world_id: str) -> m.WorldDeleted:
        return self._send(calls.delete_world(world_id))

    # -- customers, clock, snapshots ---------------------------------------------------------

    def create_customer(
        self,
        *,
        scopes: list[str] | None = None,
        self_match_prevention: bool | None = None,
        identity_labels: bool | None = None,
    ) -> m.Customer:
        return self._send(
            calls.create_customer(
                scopes=scopes,
                self_match_prevention=self_match_prevention,
                identity_labels=identity_labels,
            )
        )

    def get_clock(self) -> m.Clock:
        return self._send(calls.get_clock())

    def advance_clock(self, seconds: int) -> m.Clock:
        return self._send(calls.advance_clock(seconds))

    def set_clock(self, to: datetime | str) -> m.Clock:
        return self._send(calls.set_clock(to))

    def take_snapshot(self, name: str) -> m.Snapshot:
        return self._send(calls.take_snapshot(name))

    def list_snapshots(self) -> list[m.Snapshot]:
        return self._send(calls.list_snapshots())

    def restore_snapshot(self, name: str) -> m.RestoredSnapshot:
        return self._send(calls.restore_snapshot(name))

    def reset(self) -> m.Reset:
        return self._send(calls.reset())

    # -- faults, pacing, releases ----------------------------------------------------------

    def arm_fault(
        self,
        match: dict[str, Any],
        action: dict[str, Any],
        *,
        when: str | None = None,
        times: int | None = None,
        skip: int | None = None,
        probability: Amount | None = None,
        until: datetime | str | None = None,
        ttl_seconds: int | None = None,
    ) -> m.FaultRule:
        """An HTTP fault rule (docs/faults.md): `match` {operation | method, path, ...},
        `action` one of problem, delay_ms, drop, reset, empty, truncate."""
        return self._send(
            calls.arm_fault(
                match,
                action,
                when=when,
                times=times,
                skip=skip,
                probability=None if probability is None else calls.amount(probability),
                until=until,
                ttl_seconds=ttl_seconds,
            )
        )

    def list_faults(self) -> list[m.FaultRule]:
        return self._send(calls.list_faults())

    def get_fault(self, rule_id: str) -> m.FaultRule:
        return self._send(calls.get_fault(rule_id))

    def delete_fault(self, rule_id: str) -> m.FaultRule:
        return self._send(calls.delete_fault(rule_id))

    def arm_webhook_fault(
        self,
        action: dict[str, Any],
        *,
        match: dict[str, Any] | None = None,
        times: int | None = None,
    ) -> m.WebhookFault:
        return self._send(calls.arm_webhook_fault(action, match=match, times=times))

    def list_webhook_faults(self) -> list[m.WebhookFault]:
        return self._send(calls.list_webhook_faults())

    def get_webhook_fault(self, rule_id: str) -> m.WebhookFault:
        return self._send(calls.get_webhook_fault(rule_id))

    def delete_webhook_fault(self, rule_id: str) -> m.WebhookFault:
        return self._send(calls.delete_webhook_fault(rule_id))

    def get_pacing(self) -> m.Pacing:
        return self._send(calls.get_pacing())

    def set_pacing(self, **kinds: dict[str, Any]) -> m.Pacing:
        """Pace the kinds named (`withdrawal={"mode": "manually"}`); the others keep theirs."""
        return self._send(calls.set_pacing(kinds))

    def complete_transfer(self, transfer_id: str) -> m.Transfer:
        return self._send(calls.complete_transfer(transfer_id))

    def fail_transfer(self, transfer_id: str, reason: str | None = None) -> m.Transfer:
        return self._send(calls.fail_transfer(transfer_id, reason))

    def release_order(self, order_id: str) -> m.Order:
        return self._send(calls.release_order(order_id))

    # -- requests, prices, deposits, events ----------------------------------------------------

    def list_requests(
        self,
        limit: int | None = None,
        page_cursor: str | None = None,
        *,
        operation: str | None = None,
        status: int | str | None = None,
    ) -> m.RequestPage:
        return self._send(calls.list_requests(limit, page_cursor, operation, status))

    def iter_requests(
        self,
        limit: int | None = None,
        *,
        operation: str | None = None,
        status: int | str | None = None,
    ) -> Iterator[m.Request]:
        """The world's recent requests, newest first, page after page."""
        cursor: str | None = None
        while True:
            page = self.list_requests(limit, cursor, operation=operation, status=status)
            yield from page.items
            cursor = page.next_page_cursor
            if cursor is None:
                return

    def get_price(self, market: str) -> m.MarketPrice:
        return self._send(calls.get_price(market))

    def set_price(self, market: str, price: Amount, *, gap: bool | None = None) -> m.MarketPrice:
        """Move `market`'s price (walking there, or jumping with `gap`)."""
        return self._send(calls.set_price(market, price, gap=gap))

    def deposit(
        self,
        asset: str,
        amount: Amount,
        *,
        profile_id: str = "default",
        crypto_network: str | None = None,
        crypto_address: str | None = None,
    ) -> m.Deposit:
        """A sandbox deposit into a profile."""
        return self._send(
            calls.deposit(
                asset,
                amount,
                profile_id=profile_id,
                crypto_network=crypto_network,
                crypto_address=crypto_address,
            )
        )

    def fiat_deposit(
        self,
        amount: Amount,
        asset: str,
        memo_id: str,
        fiat_network_instructions: dict[str, Any],
        *,
        fiat_account_owner: dict[str, Any] | None = None,
    ) -> None:
        """A sandbox wire to deposit instructions (it shows up as a WIRE_DEPOSIT transfer)."""
        self._send(
            calls.fiat_deposit(
                amount,
                asset,
                memo_id,
                fiat_network_instructions,
                fiat_account_owner=fiat_account_owner,
            )
        )

    def list_events(
        self,
        limit: int | None = None,
        page_cursor: str | None = None,
        *,
        type: str | None = None,
        **created_at: datetime | str,
    ) -> m.EventPage:
        """A page of the event feed; `created_at` filters as `lt=`, `gte=`, ..."""
        return self._send(calls.list_events(limit, page_cursor, type, **created_at))

    def iter_events(
        self, limit: int | None = None, *, type: str | None = None, **created_at: datetime | str
    ) -> Iterator[m.Event]:
        """The event feed, oldest first, page after page."""
        cursor: str | None = None
        while True:
            page = self.list_events(limit, cursor, type=type, **created_at)
            yield from page.events
            cursor = page.next_page_cursor
            if cursor is None:
                return
