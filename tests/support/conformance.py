"""Every answer the test suite sees is one that sandex's own `/openapi.json` documents.

The sandbox fixture (tests/conftest.py) wraps each app it makes in `Observe`, which
keeps the status, media type and body of every answer to a documented operation (the
`http_sandbox` fixture's client keeps those a plugin world's server sends it); when
the test ends, `problems` holds them to the document: the status is one the operation
lists, the media type one it lists for that status, and the body valid against that
status's schema, with no field the schema does not name. So the statuses a route can
answer (a 404 for cancelling an unknown order, a 409, a 503) and the shapes of its
answers are documented as the suite meets them, and stay so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import httpx
import jsonschema
import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The fewest answers of one operation and status checked in one test: a test that
# makes thousands of the same call (a race, a load) has its first ones checked.
_PER_KIND = 50


@dataclass
class Answer:
    method: str
    path: str
    status: int
    media_type: str
    body: bytes


class Kept:
    """The answers a test got, at most `_PER_KIND` of each method, path and status."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self._seen: dict[tuple[str, str, int], int] = {}

    def keep(self, method: str, path: str, status: int, media_type: str, body: bytes) -> None:
        kind = (method, path, status)
        count = self._seen.get(kind, 0)
        if count >= _PER_KIND:
            return
        self._seen[kind] = count + 1
        self.answers.append(Answer(method, path, status, media_type, body))


class Observe:
    """ASGI middleware: keeps each answer (see the module's doc)."""

    def __init__(self, app: ASGIApp, answers: list[Answer]) -> None:
        self.app = app
        self.kept = Kept(answers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def keep(message: Message) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    self._keep(scope, start, b"".join(chunks))
            await send(message)

        await self.app(scope, receive, keep)

    def _keep(self, scope: Scope, start: dict[str, Any], body: bytes) -> None:
        media = ""
        for name, value in start.get("headers", []):
            if name.lower() == b"content-type":
                media = value.decode("latin-1").split(";")[0].strip()
        status = int(start.get("status", 0))
        self.kept.keep(scope["method"], scope["path"], status, media, body)


def resolve(node: Any, schemas: dict[str, Any]) -> Any:
    """A schema with every `$ref` to a component replaced by the component."""
    if isinstance(node, dict):
        if "$ref" in node:
            return resolve(schemas[node["$ref"].rsplit("/", 1)[-1]], schemas)
        return {k: resolve(v, schemas) for k, v in node.items() if k != "examples"}
    if isinstance(node, list):
        return [resolve(v, schemas) for v in node]
    return node


class Document:
    """sandex's own OpenAPI document, as the checks read it."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.schemas = doc.get("components", {}).get("schemas", {})
        routes = []
        for path in doc["paths"]:
            pattern = re.compile("^" + re.sub(r"\{[^}/]+\}", "[^/]+", path) + "$")
            routes.append((path.count("{"), path, pattern))
        self._routes = [(path, pattern) for _, path, pattern in sorted(routes)]

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]] | None:
        """The documented operation answering `method path` (fewest parameters first,
        as the router matches literal segments first), or None."""
        for template, pattern in self._routes:
            if pattern.match(path):
                op = self.doc["paths"][template].get(method.lower())
                if op is not None:
                    return template, op
        return None

    @cache  # noqa: B019 - one document per app, kept for the app's life
    def validator(self, template: str, method: str, status: str, media: str) -> Any:
        op = self.doc["paths"][template][method]
        schema = resolve(op["responses"][status]["content"][media]["schema"], self.schemas)
        return jsonschema.Draft202012Validator(schema), schema


def unknown_fields(instance: Any, schema: dict[str, Any], where: str) -> list[str]:
    """Fields of `instance` that its schema does not name (where it names any)."""
    found: list[str] = []
    if isinstance(instance, dict) and "properties" in schema:
        if schema.get("additionalProperties") not in (None, False):
            return found
        for key, value in instance.items():
            if key not in schema["properties"]:
                found.append(f"{where}.{key}")
            else:
                found += unknown_fields(value, schema["properties"][key], f"{where}.{key}")
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for i, value in enumerate(instance):
            found += unknown_fields(value, schema["items"], f"{where}[{i}]")
    return found


def problems(document: Document, answers: list[Answer]) -> list[str]:
    """One line per answer that the document does not describe."""
    found: list[str] = []
    for answer in answers:
        matched = document.operation(answer.method, answer.path)
        if matched is None:  # an unknown path or method: no operation to document it
            continue
        template, op = matched
        method = answer.method.lower()
        where = f"{answer.method} {template} ({op.get('operationId')}) answered {answer.status}"
        declared = op.get("responses", {}).get(str(answer.status))
        if declared is None:
            found.append(f"{where}, a status its document does not list")
            continue
        content = declared.get("content") or {}
        if not content:
            continue
        if answer.media_type not in content:
            found.append(f"{where} as {answer.media_type!r}, not {sorted(content)}")
            continue
        validator, schema = document.validator(
            template, method, str(answer.status), answer.media_type
        )
        body = orjson.loads(answer.body)
        errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
        if errors:
            first = errors[0]
            path = "$" + "".join(f"[{p!r}]" for p in first.absolute_path)
            found.append(f"{where}: {path}: {first.message}")
            continue
        unknown = unknown_fields(body, schema, "$")
        if unknown:
            found.append(f"{where} with fields its schema does not name: {unknown}")
    return sorted(set(found))


_DOCUMENTS: dict[Any, Document] = {}


def conformance_problems(app: Any, answers: list[Answer]) -> list[str]:
    """`problems` of the answers an app gave, against its own document (made once for
    every app with the same routes: building it costs more than most tests)."""
    if not answers:
        return []
    key = tuple(
        (getattr(r, "path", ""), *sorted(getattr(r, "methods", None) or ())) for r in app.routes
    )
    document = _DOCUMENTS.get(key)
    if document is None:
        document = _DOCUMENTS[key] = Document(app.openapi())
    return problems(document, answers)


def served_problems(url: str, answers: list[Answer]) -> list[str]:
    """`problems` of answers a running server gave, against the document it serves at
    `url` (fetched once per URL)."""
    if not answers:
        return []
    document = _DOCUMENTS.get(url)
    if document is None:
        found = httpx.get(url, timeout=60)
        assert found.status_code == 200, found.text
        document = _DOCUMENTS[url] = Document(found.json())
    return problems(document, answers)
