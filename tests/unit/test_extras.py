"""The extras of pyproject.toml and the command line's map of their modules
(`sandex.api_adapter.cli.errors.EXTRAS`) name the same packages: an extra added to one and not
the other fails here, and a missing module of it would go unexplained."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from sandex.api_adapter.cli.errors import EXTRAS

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
# what the user installs without asking: the test suite's own and the benchmarks' extras
NOT_OPTIONAL_FEATURES = {"dev", "bench"}


def _module(requirement: str) -> str:
    """The import name of a requirement such as `psycopg-pool>=3.2` or `dask[x]>=1`."""
    return re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0].lower().replace("-", "_")


def test_every_extra_module_is_named_with_its_extra() -> None:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    declared = {
        _module(req): extra
        for extra, reqs in extras.items()
        if extra not in NOT_OPTIONAL_FEATURES
        for req in reqs
    }
    assert declared == EXTRAS
    assert set(declared.values()) == {"sweep", "postgres"}


def test_no_extra_is_a_runtime_dependency() -> None:
    runtime = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    assert not {_module(req) for req in runtime} & set(EXTRAS)
