"""The project's own `engine` package and sandex live in one virtual environment: sandex
installs only `sandex`, so `import engine` finds this project's code."""

import importlib.metadata
from pathlib import Path

import engine
import sandex
import sandex.engine


def test_import_engine_finds_this_projects_own_package():
    assert engine.OWNER == "sandex-example"
    assert engine is not sandex.engine
    assert Path(sandex.__file__).parent not in Path(engine.__file__).parents
    assert "sandex" not in importlib.metadata.packages_distributions().get("engine", [])


def test_sandex_works_beside_it(sandex_world):
    """The plugin (sandex.engine behind it) serves this test while `engine` is ours."""
    assert sandex_world.clock.mode == "manual"
    assert engine.OWNER == "sandex-example"
