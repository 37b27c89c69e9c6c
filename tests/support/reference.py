"""The reference documents (the real service's OpenAPI document and figures), for tests
that check sandex against them.

They live outside the project, in `../shared/reference/` beside the repository, or in the
folder that the environment variable SANDEX_REFERENCE_DIR names (a relative path is taken
from the repository's root). Every read of them goes through this module: where they are
absent (a user's clone) the test that needs them skips and says why, and the rest of the
suite runs."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
SETTING = "SANDEX_REFERENCE_DIR"
SUBSET_NAME = "v2-subset.json"
# The whole document: operations beyond the subset's 29 are checked against it.
FULL_NAME = "paxos-openapi.json"

# Known faults of the reference document (see its README): fixed here, not copied.
_FIXES = {"ListProfileBalancesResponse": {"required": ["items"]}}


def folder() -> Path:
    """Where the reference documents are looked for: $SANDEX_REFERENCE_DIR, else
    ../shared/reference beside the repository."""
    configured = os.environ.get(SETTING)
    if configured:
        path = Path(configured).expanduser()
        return path if path.is_absolute() else ROOT / path
    return ROOT.parent / "shared" / "reference"


def find(name: str) -> Path | None:
    """The reference file `name`, or None where it is absent (for scripts, not tests)."""
    path = folder() / name
    return path if path.is_file() else None


def path(name: str) -> Path:
    """The reference file `name`; where it is absent the calling test skips, saying why."""
    found = find(name)
    if found is None:
        pytest.skip(
            f"reference {name} not found in {folder()}: it lies outside the repository"
            f" (../shared/reference, or ${SETTING}), not in a user's clone"
        )
    return found


@cache
def _load(file: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(file.read_text())
    for name, patch in _FIXES.items():
        doc["components"]["schemas"][name].update(patch)
    return doc


def document() -> dict[str, Any]:
    """The reference's v2-subset.json (its known faults fixed); skips where it is absent."""
    return _load(path(SUBSET_NAME))


def full_schema(name: str) -> dict[str, Any]:
    """A component schema of the whole document (paxos-openapi.json), $refs resolved, for
    the operations the subset leaves out; skips where it is absent."""
    schemas = _load(path(FULL_NAME))["components"]["schemas"]
    return _resolve(schemas[name], schemas)  # type: ignore[no-any-return]


def component_schemas() -> dict[str, Any]:
    """The document's component schemas, as written ($refs unresolved)."""
    return document()["components"]["schemas"]  # type: ignore[no-any-return]


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


def full_response_schema(route: str, method: str, status: str = "200") -> dict[str, Any]:
    """`response_schema` from the whole document (its paths lack the /v2 prefix)."""
    doc = _load(path(FULL_NAME))
    media = doc["paths"][route][method]["responses"][status]["content"]["application/json"]
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


def request_examples() -> list[tuple[str, str, str, str, Any]]:
    """Every example request body of the whole document (paxos-openapi.json), as written:
    (operation id, method, path with the /v2 prefix, example name, body). The document
    gives them three ways: named `examples` and an `example` of the media type, and an
    `example` of the body's schema ("schema example"). Skips where the document is absent."""
    doc = json.loads(path(FULL_NAME).read_text())  # as written: _load's fixes left out
    schemas = doc["components"]["schemas"]
    found = []
    for route, ops in doc["paths"].items():
        for method, op in ops.items():
            if not isinstance(op, dict) or "requestBody" not in op:
                continue
            media = op["requestBody"]["content"].get("application/json")
            if media is None:
                continue
            schema_ = media.get("schema", {})
            if "$ref" in schema_:
                schema_ = schemas[schema_["$ref"].rsplit("/", 1)[-1]]
            named = [(name, ex["value"]) for name, ex in media.get("examples", {}).items()]
            if "example" in media:
                named.append(("media example", media["example"]))
            if "example" in schema_:
                named.append(("schema example", schema_["example"]))
            for name, body in named:
                found.append((op["operationId"], method.upper(), "/v2" + route, name, body))
    return found


def _typed_problems() -> list[dict[str, Any]]:
    """The whole document's problem examples whose type is a URI other than about:blank;
    skips where the document is absent."""
    examples = _load(path(FULL_NAME))["components"]["examples"]
    return [
        ex["value"]
        for name, ex in examples.items()
        if name.startswith("Problem_") and ex["value"]["type"] != "about:blank"
    ]


def problem_types() -> dict[str, int]:
    """The status of each typed problem in the reference's problem examples."""
    return {problem["type"]: problem["status"] for problem in _typed_problems()}


def problem_titles() -> dict[str, str]:
    """The title of each typed problem in the reference's problem examples."""
    return {problem["type"]: problem["title"] for problem in _typed_problems()}


def operation_ids() -> dict[tuple[str, str], str]:
    """The whole document's operation ids by (method, path with the /v2 prefix); skips
    where the document is absent."""
    doc = _load(path(FULL_NAME))
    return {
        (method.upper(), "/v2" + route): op["operationId"]
        for route, ops in doc["paths"].items()
        for method, op in ops.items()
        if isinstance(op, dict) and "operationId" in op
    }
