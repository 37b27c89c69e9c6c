"""A `curl` that is a generated client: each call of the README's curl blocks is made
through the client that openapi-python-client generated from sandex's own document.

tests/system/test_generated_client.py puts it first on PATH as `curl` and runs the README's
blocks as written. Each call becomes the generated function of its operation (found by
method and path in the document), with its path and query parameters and its body as
the client's own models; the raw answer goes to stdout as curl -s prints it, for the
block's pipes (with -f an error answer fails the call as curl's does). One JSON line
per call goes to $SANDEX_CLIENT_LOG: the operation, the status, the class the client
parsed the answer into, the required fields it left unset, and whether the parsed
answer turns back into the JSON that was sent.

Environment: SANDEX_CLIENT_PACKAGE (the generated package's name, importable),
SANDEX_OPENAPI (the document's file), SANDEX_CLIENT_LOG.
"""

from __future__ import annotations

import enum
import importlib
import json
import os
import re
import sys
import typing
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from openapi_python_client.strings import snake_case

from tests.support.conformance import Document

_VALUE_FLAGS = {"-X", "--request", "-H", "--header", "-d", "--data", "--data-raw"}
_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
_PLAIN_FLAGS = {"-s", "-S", "-sS", "-Ss", "--silent", "--show-error"}
_FAIL_FLAGS = {"-f", "--fail", "-sSf", "-fsS"}


def _parse(argv: Sequence[str]) -> tuple[str, str, dict[str, str], list[str], bool]:
    method, url, headers, data = "", "", {}, []
    fail = False
    args = iter(argv)
    for arg in args:
        if arg in _VALUE_FLAGS:
            value = next(args)
            if arg in ("-X", "--request"):
                method = value
            elif arg in ("-H", "--header"):
                name, _, text = value.partition(":")
                headers[name.strip().lower()] = text.strip()
            else:
                data.append(value)
        elif arg in _PLAIN_FLAGS:
            continue
        elif arg in _FAIL_FLAGS:
            fail = True
        elif arg.startswith("-"):
            raise SystemExit(f"client_curl: unsupported curl option {arg}")
        else:
            url = arg
    return method or ("POST" if data else "GET"), url, headers, data, fail


def _argument(hints: dict[str, Any], name: str) -> str:
    """The generated function's argument for a parameter (`type` becomes `type_`)."""
    for candidate in (name, snake_case(name), f"{snake_case(name)}_"):
        if candidate in hints:
            return candidate
    raise SystemExit(f"client_curl: the generated function has no argument for {name}")


def _is_list(hint: Any) -> bool:
    return any(typing.get_origin(a) is list for a in (hint, *typing.get_args(hint)))


def _enum(hint: Any) -> Any:
    """The enum class in a parameter hint (`E`, `list[E] | E | Unset`), or None."""
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    for arg in typing.get_args(hint):
        found = _enum(arg)
        if found is not None:
            return found
    return None


def _model(hint: Any) -> Any:
    """The model class in a body hint (`X` or `X | Unset`)."""
    for kind in (hint, *typing.get_args(hint)):
        if hasattr(kind, "from_dict"):
            return kind
    raise SystemExit(f"client_curl: no model in {hint}")


def _unset_required(parsed: Any, schema: dict[str, Any], types: Any) -> list[str]:
    """Required fields the parsed answer has no value for (`type` is held as `type_`)."""
    unset = []
    for field in schema.get("required", []):
        names = [n for n in (field, f"{snake_case(field)}_") if hasattr(parsed, n)]
        value = getattr(parsed, names[0]) if names else None
        if value is None or isinstance(value, types.Unset):
            unset.append(field)
    return unset


def main(argv: Sequence[str]) -> int:
    package = os.environ["SANDEX_CLIENT_PACKAGE"]
    doc = json.loads(Path(os.environ["SANDEX_OPENAPI"]).read_text())
    method, url, headers, data, fail = _parse(argv)
    parts = urlsplit(url)
    found = Document(doc).operation(method, parts.path)
    if found is None:
        raise SystemExit(f"client_curl: no documented operation for {method} {parts.path}")
    template, op = found
    name = op["operationId"]
    tag = snake_case(op.get("tags", ["default"])[0])
    module = importlib.import_module(f"{package}.api.{tag}.{snake_case(name)}")
    call = module.sync_detailed
    hints = typing.get_type_hints(call)
    kwargs: dict[str, Any] = {}
    for segment, value in zip(template.split("/"), parts.path.split("/"), strict=True):
        if segment.startswith("{"):
            kwargs[_argument(hints, segment[1:-1])] = value
    for key, value in parse_qsl(parts.query):
        arg = _argument(hints, key)
        kind = _enum(hints[arg])
        typed = kind(value) if kind is not None else value
        kwargs[arg] = [typed] if _is_list(hints[arg]) else typed
    if data:
        model = _model(hints["body"])
        if headers.get("content-type", "").startswith("application/json"):
            kwargs["body"] = model.from_dict(json.loads("".join(data)))
        else:  # curl's -d pieces are one form
            kwargs["body"] = model.from_dict(dict(parse_qsl("&".join(data))))
    client_module = importlib.import_module(f"{package}.client")
    base = f"{parts.scheme}://{parts.netloc}"
    authorization = headers.get("authorization", "")
    if authorization.lower().startswith("bearer "):
        client = client_module.AuthenticatedClient(base_url=base, token=authorization[7:])
    else:
        client = client_module.Client(base_url=base)
    response = call(client=client, **kwargs)
    _log(doc, op, response, importlib.import_module(f"{package}.types"))
    if fail and int(response.status_code) >= 400:  # as curl -f: no body, exit status 22
        status = int(response.status_code)
        print(f"curl: (22) The requested URL returned error: {status}", file=sys.stderr)
        return 22
    sys.stdout.buffer.write(response.content)
    sys.stdout.flush()
    return 0


def _times(value: Any) -> Any:
    """`value` with its date-times as datetimes: the client writes back a parsed
    `2024-01-01T00:00:00.000000Z` as `2024-01-01T00:00:00+00:00`, the same time."""
    if isinstance(value, dict):
        return {k: _times(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_times(v) for v in value]
    if isinstance(value, str) and _TIME.match(value):
        return datetime.fromisoformat(value)
    return value


def _log(doc: dict[str, Any], op: dict[str, Any], response: Any, types: Any) -> None:
    status = int(response.status_code)
    parsed = response.parsed
    entry: dict[str, Any] = {
        "operation": op["operationId"],
        "status": status,
        "parsed": type(parsed).__name__,
    }
    ok = op["responses"].get("200", {}).get("content", {}).get("application/json", {})
    ref = ok.get("schema", {}).get("$ref", "")
    if status == 200 and ref:
        schema = doc["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        entry["documented"] = ref.rsplit("/", 1)[-1]
        entry["unset_required"] = _unset_required(parsed, schema, types)
        entry["round_trip"] = parsed is not None and _times(parsed.to_dict()) == _times(
            json.loads(response.content)
        )
    with open(os.environ["SANDEX_CLIENT_LOG"], "a") as log:
        log.write(json.dumps(entry) + "\n")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
