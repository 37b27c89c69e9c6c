from collections.abc import MutableMapping
from typing import Any


def arm(scope: MutableMapping[str, Any], kind: str) -> None:
    scope.setdefault("state", {})["sandex.wire"] = kind
