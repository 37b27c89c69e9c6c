"""Query parameters shared by list operations: cursor paging and time ranges."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Literal

from fastapi import Query
from pydantic import BeforeValidator
from pydantic_core import PydanticKnownError

from sandex.engine.kernel.clock import parse_time
from sandex.engine.kernel.errors import Invalid
from sandex.engine.read.params import int_fault
from sandex.engine.read.queries import MAX_LIMIT, Page


def strict_int(low: int, high: int) -> BeforeValidator:
    """An integer query parameter checked as sandex.engine.read.params checks every one: ASCII
    digits within bounds (pydantic alone takes ' 5', '+5', '5.0' and '1_0'). A fault is
    reported as pydantic's own error of its kind, which sandex.api_adapter.problems words."""
    return BeforeValidator(partial(_checked_int, low=low, high=high))


def _checked_int(value: Any, low: int, high: int) -> Any:
    if isinstance(value, str):
        fault = int_fault(value, low, high)
        if fault == "digits":
            raise PydanticKnownError("int_parsing")
        if fault == "above":
            raise PydanticKnownError("less_than_equal", {"le": high})
        if fault == "below":
            raise PydanticKnownError("greater_than_equal", {"ge": low})
    return value


def page_limit(most: int) -> BeforeValidator:
    """A list's page size: 1 to `most`, and 0 the same as none (the list's default), for 0
    is the unset value of the service's wire format. Its Query() takes no ge or le, which
    pydantic would apply to that None: this checks the bounds."""

    def check(value: Any) -> Any:
        if isinstance(value, str) and value.isascii() and value.isdigit() and not value.strip("0"):
            return None
        return _checked_int(value, 1, most)

    return BeforeValidator(check)


Limit = Annotated[
    int | None,
    page_limit(MAX_LIMIT),
    Query(description=f"page size, 1 to {MAX_LIMIT}; 0 is the same as none"),
]
Order = Annotated[Literal["ASC", "DESC"] | None, Query()]


def checked_time(name: str, text: str | None) -> str | None:
    """A time parameter the engine filters under another name (`order_time.begin` is
    `created_at.gte` there), checked here so that its error names what the client sent."""
    if text is not None:
        try:
            parse_time(text)
        except ValueError as exc:
            raise Invalid(f"{name} invalid: not an RFC 3339 time", field=name) from exc
    return text


def _times(column: str, values: dict[str, str | None]) -> dict[tuple[str, str], str]:
    return {(column, op): v for op, v in values.items() if v is not None}


def created_page(
    limit: Limit = None,
    page_cursor: str | None = None,
    order: Order = None,
    created_at_lt: Annotated[str | None, Query(alias="created_at.lt")] = None,
    created_at_lte: Annotated[str | None, Query(alias="created_at.lte")] = None,
    created_at_eq: Annotated[str | None, Query(alias="created_at.eq")] = None,
    created_at_gte: Annotated[str | None, Query(alias="created_at.gte")] = None,
    created_at_gt: Annotated[str | None, Query(alias="created_at.gt")] = None,
) -> Page:
    return Page(
        limit=limit,
        page_cursor=page_cursor,
        order=order,
        times=_times(
            "created_at",
            {
                "lt": created_at_lt,
                "lte": created_at_lte,
                "eq": created_at_eq,
                "gte": created_at_gte,
                "gt": created_at_gt,
            },
        ),
    )


def updated_times(
    updated_at_lt: Annotated[str | None, Query(alias="updated_at.lt")] = None,
    updated_at_lte: Annotated[str | None, Query(alias="updated_at.lte")] = None,
    updated_at_eq: Annotated[str | None, Query(alias="updated_at.eq")] = None,
    updated_at_gte: Annotated[str | None, Query(alias="updated_at.gte")] = None,
    updated_at_gt: Annotated[str | None, Query(alias="updated_at.gt")] = None,
) -> dict[tuple[str, str], str]:
    return _times(
        "updated_at",
        {
            "lt": updated_at_lt,
            "lte": updated_at_lte,
            "eq": updated_at_eq,
            "gte": updated_at_gte,
            "gt": updated_at_gt,
        },
    )
