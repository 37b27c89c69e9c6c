"""Domain errors: a class per kind of refusal, with its detail and structured `meta`.
Each class has a stable machine `code`; an adapter maps the code to its own words (the
HTTP API's status, title and problem type: api_adapter/problems.py), so the engine
knows no protocol."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    code = "error"

    def __init__(
        self, detail: str, *, meta: dict[str, Any] | None = None, field: str | None = None
    ):
        super().__init__(detail)
        self.detail = detail
        self.meta = meta
        self.field = field

    @property
    def details(self) -> dict[str, Any] | None:
        """The structured meta: `meta`, else the field refused, else None."""
        if self.meta is not None:
            return self.meta
        return {"field": self.field} if self.field is not None else None

    def body(self) -> dict[str, Any]:
        """The error as data, for callers without a protocol of their own (a backtest's
        strategy): its code, detail and meta."""
        return {"code": self.code, "detail": self.detail, "meta": self.details}


class Invalid(DomainError):
    code = "invalid"


class NotFound(DomainError):
    code = "not-found"


class Forbidden(DomainError):
    code = "forbidden"


class Conflict(DomainError):
    code = "conflict"


class Unavailable(DomainError):
    code = "unavailable"


class LogFull(Forbidden):
    """The log holds `world_max_events` events: the world records nothing more, so that
    one sandbox cannot grow without bound; what it holds can still be read."""

    def __init__(self, limit: int, events: int):
        super().__init__(
            f"world_max_events reached: this world's log holds {events} events and may hold"
            f" {limit}; it records nothing more (reads still work): delete it, or fork it"
            " from an earlier snapshot",
            meta={"limit": "world_max_events", "world_max_events": limit, "events": events},
        )


class AlreadyExists(DomainError):
    code = "already-exists"

    def __init__(self, detail: str, existing: dict[str, Any]):
        super().__init__(detail, meta={"existing": existing})


class InsufficientFunds(DomainError):
    code = "insufficient-funds"

    def __init__(self, profile_id: str, asset: str, available: str, needed: str):
        super().__init__(
            f"insufficient {asset} funds in profile {profile_id}: {needed} needed, {available} available",
            meta={
                "profile_id": profile_id,
                "asset": asset,
                "available": available,
                "needed": needed,
            },
        )


class Expired(DomainError):
    code = "expired"

    def __init__(self, detail: str, expired_at: str):
        super().__init__(detail, meta={"expired_at": expired_at})


class Rejected(DomainError):
    code = "rejected"


class ExceedPrecision(DomainError):
    code = "exceed-precision"

    def __init__(self, asset: str, places: int, field: str | None = None):
        super().__init__(
            f"max precision allowed for asset {asset} is {places}",
            meta={"asset": asset, "max_precision": places, "field": field},
            field=field,
        )


class NotionalTooLarge(DomainError):
    code = "notional-value-too-large"


class MarketConditions(DomainError):
    """Refused for where the market is, not for what was sent alone: a taker priced
    outside the band around the mid price."""

    code = "market-conditions-prevented-execution"


class ExceedMaxWithdraw(DomainError):
    code = "exceed-max-withdraw-limit"


class BelowMinWithdraw(DomainError):
    code = "below-min-withdraw-limit"
