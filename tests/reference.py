"""The reference OpenAPI document, for tests that check sandex's shapes against it.

It lives outside the project (`../shared/reference/`); where it is absent (a user's
clone) the tests that need it skip and say why."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema
import pytest

from tests.conftest import REFERENCE

SUBSET = REFERENCE / "v2-subset.json"

# Known faults of the reference document (see its README): fixed here, not copied.
_FIXES = {"ListProfileBalancesResponse": {"required": ["items"]}}


@cache
def document() -> dict[str, Any]:
    if not SUBSET.exists():
        pytest.skip(
            f"the reference document is not here ({SUBSET}); it is not part of a user's clone"
        )
    doc: dict[str, Any] = json.loads(SUBSET.read_text())
    for name, patch in _FIXES.items():
        doc["components"]["schemas"][name].update(patch)
    return doc


def _resolve(node: Any, schemas: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _resolve(schemas[node["$ref"].rsplit("/", 1)[-1]], schemas)
        return {
            k: _resolve(v, schemas) for k, v in node.items() if k not in ("example", "examples")
        }
    if isinstance(node, list):
        return [_resolve(v, schemas) for v in node]
    return node


def schema(name: str) -> dict[str, Any]:
    schemas = document()["components"]["schemas"]
    return _resolve(schemas[name], schemas)  # type: ignore[no-any-return]


def response_schema(path: str, method: str, status: str = "200") -> dict[str, Any]:
    doc = document()
    op = doc["paths"][path][method]
    content = op["responses"][status]["content"]
    media = content.get("application/json") or content.get("application/problem+json")
    return _resolve(media["schema"], doc["components"]["schemas"])  # type: ignore[no-any-return]


def assert_matches(instance: Any, schema_: dict[str, Any]) -> None:
    """Valid against the schema, and no field the schema does not know."""
    jsonschema.Draft4Validator(schema_).validate(instance)  # OpenAPI 3.0 schemas are draft-4 style
    _no_unknown_fields(instance, schema_, "$")


def _no_unknown_fields(instance: Any, schema_: dict[str, Any], where: str) -> None:
    if isinstance(instance, dict) and "properties" in schema_:
        unknown = set(instance) - set(schema_["properties"])
        assert not unknown, f"{where}: fields not in the reference: {sorted(unknown)}"
        for key, value in instance.items():
            _no_unknown_fields(value, schema_["properties"][key], f"{where}.{key}")
    elif isinstance(instance, list) and "items" in schema_:
        for i, value in enumerate(instance):
            _no_unknown_fields(value, schema_["items"], f"{where}[{i}]")
