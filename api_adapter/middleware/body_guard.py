"""Hostile-input guard: a pure ASGI middleware in front of the routes.

It reads a request body once, bounded by a size limit (413), and for `/v2` operations
checks what pydantic cannot see or reports badly: the media type (415), bytes that are
not UTF-8, JSON that is malformed, nested deeper than any request shape, carries
duplicate keys (which parsers resolve silently and differently), NaN or Infinity (not
JSON), numbers longer than any field takes, or a NUL character in a string, path or query
(PostgreSQL's text cannot hold one, so no store may be handed one) (400). Each answer is a problem with a
detail that names the fault. The checked body is replayed to the app unchanged, with
the server's `strict_fields` setting (STRICT_FIELDS) in force while the app serves it.
"""

from __future__ import annotations

import functools
import json
import operator
import re
from itertools import accumulate, count
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sandex.api_adapter.request_bodies import STRICT_FIELDS
from sandex.api_adapter.responses import problem

DEFAULT_MAX_BODY_BYTES = 64 * 1024
MAX_DEPTH = 32
MAX_NUMBER_DIGITS = 100
_WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# A JSON string, or an unterminated one up to the end of the body. The possessive `*+`
# and the optional closing quote make the match never backtrack: linear in the body
# (the former pattern, which had to fail on an unterminated string of escaped quotes
# from every quote on, took 15 s on one 64 KB body).
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*+"?', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OPEN_TWO_CLOSE_ZERO = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")
_JSON_HEADER = (b"content-type", b"application/json")


class _Refused(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f"request body invalid: duplicate key {key!r}")
            seen.add(key)
    return result


def _no_constant(name: str) -> Any:
    raise _Refused(f"request body invalid: {name} is not a JSON number")


def _number(text: str) -> int:
    if len(text) > MAX_NUMBER_DIGITS:
        raise _Refused(
            f"request body invalid: a number of {len(text)} characters (at most {MAX_NUMBER_DIGITS})"
        )
    return 0


_DECODER = json.JSONDecoder(
    object_pairs_hook=_no_duplicates,
    parse_constant=_no_constant,
    parse_int=_number,
    parse_float=_number,
)


def _depth(body: bytes) -> int:
    """Deepest nesting of arrays and objects, brackets inside strings not counted.

    Linear and without a Python-level loop (a loop over 64 KB of brackets took 20 ms
    of the event loop): the brackets outside strings become 2 (open) or 0 (close), and
    the depth after the k-th bracket is their running sum minus k."""
    brackets = _STRINGS.sub(b"", body).translate(None, _NOT_BRACKETS)
    steps = brackets.translate(_OPEN_TWO_CLOSE_ZERO)
    return max(map(operator.sub, accumulate(steps), count(1)), default=0)


# Where the guard leaves a `/v2` body it accepted, in the request's state: (the body, its
# value, or _UNPARSED until `body_value` is first asked for it). The fast lane validates
# that value instead of reading and parsing the body again.
PARSED_BODY = "sandex.parsed_body"
_UNPARSED = object()
_SCALARS = (str, bool, type(None))


def flat_object(body: bytes) -> dict[str, Any] | None:
    """`body`'s value when it is a JSON object of texts, booleans and nulls that
    `json_fault` accepts (the shape of most request bodies), found by orjson at a
    fraction of `json_fault`'s cost; None when it is anything else, for `json_fault` to
    judge. Without a backslash no string holds an escape (so no NUL and no lone
    surrogate); orjson refuses what json_fault refuses (bytes that are not UTF-8, control
    characters in strings, NaN, trailing data, a BOM); an object that is flat has no
    depth and no number; and with every quote a string's, the quotes counted show each
    key once: a key sent twice leaves more quotes than the object's keys and texts."""
    if b"\\" in body:
        return None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(value) is not dict:
        return None
    quotes = 2 * len(value)
    for item in value.values():
        if type(item) is str:
            quotes += 2
        elif not isinstance(item, _SCALARS):
            return None
    return value if body.count(b'"') == quotes else None


def json_fault(body: bytes) -> str | None:
    """Why `body` is not acceptable JSON for a request, or None when it is."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"request body is not valid UTF-8 (byte {exc.start})"
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and _depth(body) > MAX_DEPTH:
        return f"request body is nested too deeply (at most {MAX_DEPTH} levels)"
    try:
        value = _DECODER.decode(text)
    except _Refused as exc:
        return str(exc)
    except json.JSONDecodeError as exc:
        return f"request body is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    if "\\u0000" in text and _holds_nul(value):
        return "request body invalid: a string holds a NUL character (U+0000)"
    if "\\u" in text:
        try:  # a lone surrogate escape ("\ud800") decodes to text no encoder can write
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return "request body invalid: a string holds a lone UTF-16 surrogate"
    return None


def _holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_nul(v) for v in value)
    return False


def nul_in_target(scope: Scope) -> bool:
    """A `/v2` request whose path or query holds a NUL character."""
    if not scope["path"].startswith("/v2"):
        return False
    query = scope.get("query_string", b"")
    return "\x00" in scope["path"] or b"%00" in query or b"\x00" in query


def _media_type(scope: Scope) -> tuple[str, str] | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-type":
            return _parsed_media_type(value)
    return None


@functools.lru_cache(maxsize=256)
def _parsed_media_type(value: bytes) -> tuple[str, str]:
    """A Content-Type value's media type and charset. Cached: clients send a handful of
    distinct values, and splitting one cost more than the rest of the header scan."""
    media, _, params = value.decode("latin-1").partition(";")
    charset = ""
    for param in params.split(";"):
        key, _, val = param.strip().partition("=")
        if key.lower() == "charset":
            charset = val.strip().strip('"').lower()
    return media.strip().lower(), charset


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def body_value(scope: Scope) -> Any | None:
    """The JSON value of the body the guard accepted for this request, parsed once
    whoever asks first; None when it holds none (no body, not a `/v2` operation) or the
    value is one orjson cannot hold (an integer beyond 64 bits): the app's own parse
    judges those."""
    held = scope.get("state", {}).get(PARSED_BODY)
    if held is None:
        return None
    body, value = held
    if value is _UNPARSED:
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        scope["state"][PARSED_BODY] = body, value
    return value


async def _problem(scope: Scope, send: Send, status: int, detail: str, close: bool = False) -> None:
    headers = {"Connection": "close"} if close else None
    await problem(status, detail, headers=headers)(scope, _no_body, send)


async def _no_body() -> Message:
    return {"type": "http.disconnect"}


class BodyGuard:
    def __init__(
        self,
        app: ASGIApp,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        strict_fields: bool = False,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.strict_fields = strict_fields

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if nul_in_target(scope):
            await _problem(scope, send, 400, "a path or query holds a NUL character (U+0000)")
            return
        limit = self.max_body_bytes
        declared = _declared_length(scope)
        too_large = f"request body too large: at most {limit} bytes"
        if declared is not None and declared > limit:
            await _problem(scope, send, 413, too_large, close=True)
            return
        if scope["method"] not in _WITH_BODY:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _problem(scope, send, 413, too_large, close=True)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if body and scope["path"].startswith("/v2"):
            media = _media_type(scope)
            fault = self._media_fault(media)
            if fault is None:
                value: Any = flat_object(body)
                if value is None and (why := json_fault(body)) is not None:
                    fault = 400, why
                elif value is None:
                    value = _UNPARSED
                scope.setdefault("state", {})[PARSED_BODY] = body, value
            if fault is not None:
                await _problem(scope, send, *fault)
                return
            if media is None:  # JSON sent bare is taken as JSON
                scope = {**scope, "headers": [*scope["headers"], _JSON_HEADER]}
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        if not self.strict_fields:
            await self.app(scope, replay, send)
            return
        strict = STRICT_FIELDS.set(True)
        try:
            await self.app(scope, replay, send)
        finally:
            STRICT_FIELDS.reset(strict)

    @staticmethod
    def _media_fault(media: tuple[str, str] | None) -> tuple[int, str] | None:
        if media is not None:
            kind, charset = media
            if kind != "application/json" and not (
                kind.startswith("application/") and kind.endswith("+json")
            ):
                return 415, f"unsupported media type {kind or '(empty)'}: send application/json"
            if charset not in ("", "utf-8", "utf8"):
                return 415, f"unsupported charset {charset}: send UTF-8"
        return None
