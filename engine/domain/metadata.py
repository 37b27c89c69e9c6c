"""Client metadata on orders and transfers: at most 6 pairs of strings, each at most 100 characters."""

from __future__ import annotations

from typing import Any

from sandex.engine.kernel.errors import Invalid

MAX_PAIRS = 6
MAX_LENGTH = 100


def check_metadata(metadata: Any, field: str = "metadata") -> dict[str, str] | None:
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise Invalid(f"{field} invalid: must be an object of strings", field=field)
    if len(metadata) > MAX_PAIRS:
        raise Invalid(f"{field} invalid: at most {MAX_PAIRS} key/value pairs allowed", field=field)
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise Invalid(f"{field} invalid: keys and values must be strings", field=field)
        if len(key) > MAX_LENGTH:
            raise Invalid(
                f"{field} invalid: key '{key[:20]}…' longer than {MAX_LENGTH} characters",
                field=field,
            )
        if len(value) > MAX_LENGTH:
            raise Invalid(
                f"{field} invalid: value of '{key}' longer than {MAX_LENGTH} characters",
                field=field,
            )
    return dict(metadata)
