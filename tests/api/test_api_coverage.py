"""docs/api-coverage.md is the list of the service's operations sandex does not serve:
held here to the app's own document and the reference, so that it cannot go stale."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support import reference

DOC = reference.ROOT / "docs" / "api-coverage.md"
_ROW = re.compile(r"^\| (\w+) \| `(GET|POST|PUT|DELETE|PATCH) ([^`]+)` \|", re.M)


def _key(method: str, path: str) -> tuple[str, str]:
    return method.upper(), re.sub(r"\{[^}]*\}", "{}", path)


def _reference_operations() -> dict[tuple[str, str], str]:
    doc = json.loads(reference.path(reference.FULL_NAME).read_text())
    return {
        _key(method, "/v2" + path): op["operationId"]
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
        if method in {"get", "post", "put", "delete", "patch"}
    }


def test_the_page_lists_exactly_the_operations_not_served(sandbox: Any) -> None:
    served = {
        _key(method, path) for path, ops in sandbox.app.openapi()["paths"].items() for method in ops
    }
    theirs = _reference_operations()
    missing = {key: name for key, name in theirs.items() if key not in served}
    listed = {_key(m, p): name for name, m, p in _ROW.findall(DOC.read_text())}
    assert listed == missing
    count = f"**{len(theirs) - len(missing)} of the {len(theirs)} operations**"
    assert count in DOC.read_text(), count
    assert f"The {len(missing)} it does not serve" in DOC.read_text()
